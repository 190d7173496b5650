/**
 * What a checkout needs from the world, and nothing more: where the private
 * state lives and for which store, who we are, time and chance, the call's
 * deadline for the lock, the process memory's checkout parts, and the hooks
 * tests and logs use while files are scanned and written. Opening,
 * scanning, materialising and reading the baseline take only this
 * (session.ts); the engine's EngineDeps (engine.ts) is this and what the
 * operations above need besides.
 */
import type { Clock, RandomSource } from "../../contract/clock.ts";
import type { Deadline } from "../../store/deadline.ts";
import type { ObjectMemory } from "../git/object-memory.ts";
import type { DirectoryStat } from "./directory-identity.ts";
import type { ProcessIdentity } from "./lock.ts";
import type { RegistryMemory } from "./registry.ts";
import type { StatCacheMemory } from "./stat-cache-memory.ts";
import type { WatcherMemory } from "./watcher.ts";
import type { ReplaceMoment } from "./visible-writes.ts";

/** The parts of the process memory (engine/process-memory.ts) a checkout keeps between calls. */
export interface CheckoutMemory extends RegistryMemory {
  objects: ObjectMemory;
  statCaches: StatCacheMemory;
  /** A server's file-system watchers on its checkouts (watcher.ts); absent in a process that answers one call. */
  watchers?: WatcherMemory | null;
}

export interface CheckoutDeps extends Clock, RandomSource {
  /** A secret-free identity of the store location, e.g. "sqlite:/path/store.db": each store has its own state of a directory. */
  storeId: string;
  privateRoot: string;
  self: ProcessIdentity;
  /**
   * The process memory (engine/process-memory.ts): one per process, shared
   * by all its calls; a fresh one is a fresh world.
   */
  memory: CheckoutMemory;
  /**
   * The call deadline (docs/glossary.md): the wait for the checkout's lock
   * and a commit's retries end by it. The surfaces bound the store by it too
   * (store/deadline.ts boundedStore), so every store request does.
   */
  deadline?: Deadline;
  /** How long an operation waits for another one on the same checkout, at most: by default until the deadline, or 30 s without one. */
  lockTimeoutMs?: number;
  /**
   * How a checkout's directory is stat'ed for its identity
   * (directory-identity.ts): the file system's by default; tests give one
   * that reports no birth time, as some file systems do.
   */
  directoryStat?: DirectoryStat;
  /**
   * The most a notebook file may hold, in bytes (scan.ts, MAX_FILE_BYTES,
   * by default). Tests lower it to play a version that took bigger files
   * than this one.
   */
  maxFileBytes?: number;
  /**
   * Called as each named stage begins (scan, fetch, merge, pack, upload,
   * publish, materialize, baseline, …): stage timings in the logs, and the
   * points where fault tests stop the process.
   */
  onStage?: (stage: string) => Promise<void> | void;
  /** Progress of long work that writes no visible files (an export of a long history): `done` of `total`. */
  progress?: (what: string, done: number, total: number) => void;
  /** After each visible file is written or removed: the point where crash tests stop the process mid-way. */
  afterWrite?: () => Promise<void> | void;
  /**
   * Right before a visible file, just checked to hold what the call scanned,
   * is replaced or removed (visible-writes.ts) — or the whole checkout, path
   * ".", is thrown away (engine/discard-unchanged.ts): where tests write to
   * it, as a second writer in the same directory would.
   */
  onReplace?: (path: string, moment: ReplaceMoment) => void;
}

/** A session's deps once opened: the hooks and the file limit always there (session.ts fills in their defaults). */
export type SessionDeps<D extends CheckoutDeps = CheckoutDeps> = D & {
  maxFileBytes: number;
  onStage: (stage: string) => Promise<void> | void;
  afterWrite: () => Promise<void> | void;
};
