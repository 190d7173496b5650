/**
 * What every operation needs, injected (no globals): the store, where the
 * private state lives, who we are, time and chance, and the hooks tests and
 * logs use.
 */
import type { DirectoryStat } from "./checkout/directory-identity.ts";
import type { Clock, RandomSource } from "../contract/clock.ts";
import type { CompactionPolicy } from "./publish/compact.ts";
import type { PathSets } from "../contract/results.ts";
import type { Deadline } from "../store/deadline.ts";
import type { ObjectStore } from "../store/object-store.ts";
import type { ProcessIdentity } from "./checkout/state.ts";
import type { ReplaceMoment } from "./checkout/visible-writes.ts";
import type { ProcessMemory } from "./process-memory.ts";

/**
 * Every engine operation takes these, then its input: `op(deps, input)`.
 * Time and chance (`now`, `monotonic`, `sleep`, `random`, `randomId`:
 * contract/clock.ts) are the surfaces' to make (surfaces/engine-deps.ts);
 * the engine reads no clock or random source of its own.
 */
export interface EngineDeps extends Clock, RandomSource {
  store: ObjectStore;
  /** A secret-free identity of the store location, e.g. "sqlite:/path/store.db". */
  storeId: string;
  privateRoot: string;
  self: ProcessIdentity;
  /**
   * The process memory (process-memory.ts): one per process, shared by
   * all its calls; a fresh one is a fresh world.
   */
  memory: ProcessMemory;
  /** How many times a commit that lost the race re-merges and tries again. */
  commitRetries: number;
  /** The paths this process may not change (none by default). */
  pathSets?: PathSets;
  /**
   * The call deadline (docs/glossary.md): the wait for the checkout's lock
   * and a commit's retries end by it. The surfaces bound `store` by it too
   * (store/deadline.ts boundedStore), so every store request does.
   */
  deadline?: Deadline;
  /** How long an operation waits for another one on the same checkout, at most: by default until the deadline, or 30 s without one. */
  lockTimeoutMs?: number;
  /**
   * How a checkout's directory is stat'ed for its identity
   * (checkout/directory-identity.ts): the file system's by default; tests
   * give one that reports no birth time, as some file systems do.
   */
  directoryStat?: DirectoryStat;
  /**
   * Whether a commit from a checkout at the state this process last saw may
   * publish without reading `current` first (commit.ts). Default true; fault
   * tests aimed at that read turn it off.
   */
  guessCurrent?: boolean;
  /**
   * The most a notebook file may hold, in bytes (checkout/scan.ts,
   * MAX_FILE_BYTES, by default). Tests lower it to play a version that
   * took bigger files than this one.
   */
  maxFileBytes?: number;
  /** When a commit compacts the pack list (compact.ts); false never does (tests of compaction itself). */
  compaction?: Partial<CompactionPolicy> | false;
  /**
   * Who publishes: the name each commit records as its author and committer
   * (contract/agent.ts), read when a commit is built — `serve` knows its
   * client only after the handshake. Default "slivingdoc".
   */
  agent?: () => string;
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
   * is replaced or removed (checkout/visible-writes.ts) — or the whole checkout, path
   * ".", is thrown away (discard-unchanged.ts): where tests write to it, as a second
   * writer in the same directory would.
   */
  onReplace?: (path: string, moment: ReplaceMoment) => void;
}

// Sixteen writers on one notebook exhausted 10 retries (docs/performance.md, S6);
// with jittered backoff capped at 1 s, 30 rarely costs more than a few seconds.
export const DEFAULT_COMMIT_RETRIES = 30;

/** Before the process ends: write out what only its memory holds (stat caches). */
export function flushProcessMemory(memory: ProcessMemory): void {
  memory.flush();
}
