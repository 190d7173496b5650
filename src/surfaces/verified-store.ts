/**
 * Opening the configured store for use, proving first, where its kind asks
 * (stores.ts), that it enforces the conditional writes the protocol rests
 * on — and remembering a passed probe in a trust file under the private
 * root, so CLI calls do not pay for it each time.
 */
import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { StartupRefusal } from "../contract/startup.ts";
import { MANIFEST_KEY, NewerStoreFormat, refuseNewerFormat } from "../contract/store-formats.ts";
import { boundedStore, type Deadline } from "../store/deadline.ts";
import { type ObjectStore, StoreError } from "../store/object-store.ts";
import type { Env, RuntimeConfig } from "./config.ts";
import { DeferredStore } from "./deferred-store.ts";
import { openStore, type StoreSpec, storeIdentity, storeKind } from "./stores.ts";

/**
 * What a command does to the store: "read" (pull, log, show, export…) is
 * served by credentials that may only read it; "write" (commit, gc, serve,
 * whose tools publish) needs the conditional writes the probe proves.
 */
export type StoreAccess = "read" | "write";

/** How long a passed compatibility probe is trusted for one store location. */
export const PROBE_TRUST_MS = 24 * 60 * 60 * 1000;

/** The store opened for use, and how to drop the probe's record of who opened it. */
export interface VerifiedStore {
  store: ObjectStore;
  /**
   * Forget this caller's passed probe of this store (a store that refused
   * their credentials since): the next start probes again. Nothing where
   * nothing was recorded.
   */
  forget(): void;
}

/**
 * Open the configured store, proving first that an S3 store enforces the
 * conditional writes the protocol rests on
 * (docs/decisions/0013-the-store-is-probed-before-use.md). A passed probe is
 * remembered per store location and per caller (who asks: the digest of the
 * access key id, store/object-store.ts's callerDigest) under the private
 * root for PROBE_TRUST_MS, so CLI calls do not pay for it each time; a
 * failed one is never cached. Per caller because the probe proves the
 * credentials as much as the store: a writer's pass must not let a reader
 * sharing the private root skip the refusal of its writes. So is a reader's
 * pass (its writes refused, its reads proved) remembered, for the commands
 * that only read: a reader's agent pays for the probe once a day, not on
 * every call. A caller no credentials name is probed every time. The
 * embedded store is this project's own code and is not probed.
 *
 * A trusted S3 store whose caller the environment names is opened on its
 * first use (DeferredStore): opening it loads the AWS SDK (~20 ms) and sends
 * nothing, so nothing the start could refuse is put off, and `serve`
 * answers the handshake without it.
 *
 * The probe's requests end with `deadline` (the start's call deadline): an
 * endpoint that does not answer is refused by then, naming the deadline.
 */
export async function openVerifiedStore(
  config: RuntimeConfig,
  env: Env,
  deadline: Deadline,
  now: () => number = Date.now,
  access: StoreAccess = "write",
): Promise<VerifiedStore> {
  const kind = storeKind(config.store);
  if (!kind.probe) return { store: await openStoreOrRefuse(config.store), forget: () => {} };
  const named = kind.caller?.(env);
  // Where the environment does not say who asks, the store's own credentials chain does; opening sends nothing.
  const opened = named === undefined ? await openStoreOrRefuse(config.store) : null;
  const caller = named ?? (await opened?.caller?.()) ?? null;
  const records = caller === null ? null : probeRecords(config, caller);
  const forget = () => records?.forget();
  if (records !== null && (trusted(records.full, now) || (access === "read" && trusted(records.read, now)))) {
    const spec = config.store;
    return { store: opened ?? new DeferredStore(spec.kind, kind.capabilities, () => openStore(spec)), forget };
  }
  const store = opened ?? (await openStoreOrRefuse(config.store));
  const { probeReads, probeStore } = await import("../store/probe.ts");
  const result = await probeStore(boundedStore(store, deadline));
  if (!result.ok) {
    // Credentials that may read but not write: enough for a command that only reads.
    const reads = result.writeDenied ? await probeReads(boundedStore(store, deadline)) : null;
    if (reads?.ok && access === "read") {
      if (records !== null) remember(records.read, now);
      return { store, forget };
    }
    await store.close();
    // What to set, for an operational cause; a reader's, in place of the advice for any denial.
    const advice = reads?.ok
      ? "; these credentials may read the notebook but not write it, and this command writes: give them the writer's least-privilege policy"
      : result.advice !== undefined
        ? `; ${result.advice}`
        : "";
    throw new StartupRefusal("INCOMPATIBLE_STORE", `the ${kind.label} compatibility probe failed: ${result.cause}${advice}`);
  }
  if (records !== null) remember(records.full, now);
  return { store, forget };
}

/**
 * The name of a caller's probe record of a store: one digest of the store's
 * identity and the caller's digest, so neither the location nor who asked
 * can be read from it.
 */
export function probeRecordName(spec: StoreSpec, caller: string): string {
  return new Bun.CryptoHasher("sha256").update(`${storeIdentity(spec)}\n${caller}`).digest("hex").slice(0, 32);
}

/** The caller's two records of the configured store: a pass of the whole probe, which serves every command, and a reader's. */
function probeRecords(config: RuntimeConfig, caller: string): { full: string; read: string; forget(): void } {
  const base = join(config.privateRoot, "probes", probeRecordName(config.store, caller));
  const full = `${base}.json`;
  const read = `${base}.read.json`;
  return {
    full,
    read,
    forget() {
      for (const file of [full, read]) {
        try {
          rmSync(file, { force: true });
        } catch {
          /* a record that cannot be removed: it lapses within PROBE_TRUST_MS */
        }
      }
    },
  };
}

/** Whether a probe recorded in `file` passed within PROBE_TRUST_MS. */
function trusted(file: string, now: () => number): boolean {
  try {
    const passedAt = (JSON.parse(readFileSync(file, "utf8")) as { passedAt?: unknown }).passedAt;
    return typeof passedAt === "number" && now() - passedAt >= 0 && now() - passedAt < PROBE_TRUST_MS;
  } catch {
    return false; // no record, or an unreadable one: probe
  }
}

/** Record a passed probe; an unwritable cache only means probing again next time. */
function remember(file: string, now: () => number): void {
  try {
    mkdirSync(dirname(file), { recursive: true, mode: 0o700 });
    writeFileSync(file, `${JSON.stringify({ passedAt: now() })}\n`, { mode: 0o600 });
  } catch {
    /* probe again next time */
  }
}

/**
 * Open the store, unprobed; a store that cannot be opened (the embedded
 * store's file not a database, damaged, or not this user's to write) is
 * refused like one that fails the probe.
 */
export async function openStoreOrRefuse(spec: StoreSpec): Promise<ObjectStore> {
  try {
    return await openStore(spec);
  } catch (e) {
    if (!(e instanceof StoreError && e.operation === "open")) throw e;
    throw new StartupRefusal("INCOMPATIBLE_STORE", `the store cannot be opened: ${unopenable(e)}`);
  }
}

/** Why, and what to do, in words: never the library's text, nor the file's path. */
function unopenable(e: StoreError): string {
  switch (e.fault) {
    case "not-a-database":
      return "its file is not a database; point --store at the notebook's store file, or move this one away to start an empty notebook";
    case "damaged":
      return "its file is damaged; put back a copy (with its -wal file), or move it away to start an empty notebook";
    case "not-writable":
      return "this user may not write its file or the file's directory; run as the user who owns them, or give this user write access to both";
    case "no-directory":
      return "its directory does not exist; check --store (or SLIVINGDOC_STORE), or give --create to make it";
    case "gone":
      return "its file went away while it was opened; call again";
    case undefined: {
      // The store's messages end in an error code ("sqlite open: SQLITE_IOERR"); only such a code is shown.
      const code = /: ([A-Z][A-Z0-9_]{1,63})$/.exec(e.message)?.[1];
      return code === undefined ? "call again, and look at the store if this persists" : `${code}; call again, and look at the store if this persists`;
    }
  }
}

/**
 * `serve` refuses at its start a store of a newer format than it reads, as
 * every command does (docs/cli.md, "Versions that meet"): the host sees it
 * exit 2 with the one line, not a server whose every call fails. Any other
 * failure of this read is left to the calls, which answer it with their
 * tokens.
 */
export async function refuseNewerStore(store: ObjectStore): Promise<void> {
  const current = await store.get(MANIFEST_KEY).catch(() => null);
  if (current === null) return;
  try {
    refuseNewerFormat(current.body);
  } catch (e) {
    throw e instanceof NewerStoreFormat ? e.startupRefusal() : e;
  }
}
