/**
 * The engine's wiring: its dependencies made from the configuration and the
 * opened store.
 */
import { mkdirSync, realpathSync } from "node:fs";
import { hostname, userInfo } from "node:os";
import { userAtHost } from "../contract/agent.ts";
import type { EngineDeps } from "../engine/engine.ts";
import type { ProcessMemory } from "../engine/process-memory.ts";
import type { ObjectStore } from "../store/object-store.ts";
import type { RuntimeConfig } from "./config.ts";
import { isProcessAlive, isProcessStopped, processStartTime } from "./process-identity.ts";
import { storeIdentity } from "./stores.ts";

/** The user and host name of this process, as an agent name (contract/agent.ts). */
export function defaultAgent(): string {
  let user: string | undefined;
  try {
    user = userInfo().username;
  } catch {
    user = process.env.USER;
  }
  return userAtHost(user, hostname());
}

/** Creates the private root if needed; its real path. */
export function preparePrivateRoot(config: RuntimeConfig): string {
  mkdirSync(config.privateRoot, { recursive: true, mode: 0o700 });
  return realpathSync(config.privateRoot);
}

/** The process memory: one for the whole process, shared by every call (made by engineDeps). */
let memory: ProcessMemory | undefined;

/** Before the process ends: write out what only its memory holds (a CLI call after its command, a server when it stops). */
export function flushProcessMemory(): void {
  memory?.flush();
}

/**
 * The engine's dependencies. This loads the engine (isomorphic-git and all):
 * callers about to run it call this, and not before — `serve` only once the
 * handshake is answered (docs/performance.md, S8).
 */
export function engineDeps(config: RuntimeConfig, store: ObjectStore): EngineDeps {
  const privateRoot = preparePrivateRoot(config);
  // A synchronous import on first use, not a static one: see above.
  const { DEFAULT_COMMIT_RETRIES } = require("../engine/engine.ts") as typeof import("../engine/engine.ts");
  const { ProcessMemory } = require("../engine/process-memory.ts") as typeof import("../engine/process-memory.ts");
  memory ??= new ProcessMemory();
  const agent = config.agent ?? defaultAgent();
  return {
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
