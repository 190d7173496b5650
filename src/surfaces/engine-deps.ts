/**
 * The engine's wiring: its dependencies made from the configuration, the
 * opened store and the process's memory — and the one place the system's
 * clocks, sleep and random source are made, which the engine reads only
 * from its dependencies.
 */
import { mkdirSync, readFileSync, realpathSync } from "node:fs";
import { hostname, userInfo } from "node:os";
import { userAtHost } from "../contract/agent.ts";
import type { Clock, RandomSource } from "../contract/clock.ts";
import { randomHex } from "../contract/random-hex.ts";
import type { EngineDeps } from "../engine/engine.ts";
import type { ProcessMemory } from "../engine/process-memory.ts";
import type { ObjectStore } from "../store/object-store.ts";
import { DEFAULT_COMMIT_RETRIES, type RuntimeConfig } from "./config.ts";
import { isProcessAlive, isProcessStopped, processStartTime } from "./process-identity.ts";
import { storeIdentity } from "./stores.ts";
import { SYSTEM_CLOCK } from "./system-clock.ts";

/** The user and host name of this process, as an agent name (contract/agent.ts). */
export function defaultAgent(): string {
  return userAtHost(processUser(), hostname());
}

/**
 * Who runs this process. The runtime's user name comes from `$USER`, and
 * without it Bun answers "unknown" rather than asking the password
 * database, as a container started with only a uid does. Then the name is
 * the password database's entry for this process's uid, as `id -un` finds
 * it; "unknown" only when there is none.
 */
function processUser(): string | undefined {
  let user: string | undefined;
  try {
    user = userInfo().username;
  } catch {
    user = process.env.USER;
  }
  if (user && user !== "unknown") return user;
  return passwdName(process.getuid?.()) ?? user;
}

/** The name /etc/passwd gives `uid`, if any. */
function passwdName(uid: number | undefined): string | undefined {
  if (uid === undefined) return undefined;
  try {
    for (const line of readFileSync("/etc/passwd", "utf8").split("\n")) {
      const [name, , id] = line.split(":");
      if (name && id === String(uid)) return name;
    }
  } catch {
    // No password database (Windows, a minimal image): nobody to name.
  }
  return undefined;
}

/** Creates the private root if needed; its real path. */
export function preparePrivateRoot(config: RuntimeConfig): string {
  mkdirSync(config.privateRoot, { recursive: true, mode: 0o700 });
  return realpathSync(config.privateRoot);
}

export { SYSTEM_CLOCK } from "./system-clock.ts";

/** The system's random source, as the engine is given it. */
export const SYSTEM_RANDOM: RandomSource = {
  random: Math.random,
  randomId: randomHex,
};

/**
 * What a process keeps between calls (engine/process-memory.ts): one per
 * process, made by its runner (a CLI call, `serve`) and shared by all its
 * calls. Made on first use, since making it loads the engine; `flush`,
 * before the process ends, writes out what only memory holds.
 */
export interface ProcessMemoryHolder {
  get(): ProcessMemory;
  flush(): void;
}

export function processMemory(options: { watch?: boolean; compactAhead?: boolean } = {}): ProcessMemoryHolder {
  let made: ProcessMemory | undefined;
  return {
    get() {
      if (made === undefined) {
        // A synchronous import on first use, not a static one: see engineDeps.
        const { ProcessMemory } = require("../engine/process-memory.ts") as typeof import("../engine/process-memory.ts");
        made = new ProcessMemory(SYSTEM_RANDOM, options);
      }
      return made;
    },
    flush: () => made?.flush(),
  };
}

/**
 * The engine's dependencies. This loads the engine (isomorphic-git and all):
 * callers about to run it call this, and not before — `serve` only once the
 * handshake is answered (docs/performance.md, scenario `start-up`).
 */
export function engineDeps(config: RuntimeConfig, store: ObjectStore, memory: ProcessMemory): EngineDeps {
  const privateRoot = preparePrivateRoot(config);
  const agent = config.agent ?? defaultAgent();
  return {
    ...SYSTEM_CLOCK,
    ...SYSTEM_RANDOM,
    store,
    storeId: storeIdentity(config.store),
    privateRoot,
    self: { pid: process.pid, isAlive: isProcessAlive, startTime: processStartTime, isStopped: isProcessStopped },
    memory,
    commitRetries: config.commitRetries ?? DEFAULT_COMMIT_RETRIES,
    pathSets: config.pathSets,
    agent: () => agent,
    ...(config.historyPeriodMs !== undefined ? { compaction: { periodMs: config.historyPeriodMs } } : {}),
  };
}
