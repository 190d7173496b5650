/**
 * What publishing needs of the commit it publishes and of the call making
 * it: the store, the checkout's object cache, state and baseline, the
 * files it scanned, and the call's clock, randomness and hooks. The
 * operation (src/engine/commit.ts) makes one from its open checkout, so
 * that publish/ depends on no operation above it.
 */
import type { ObjectStore } from "../../store/object-store.ts";
import type { Baseline, CheckoutState } from "../checkout/state.ts";
import type { FlatTree, ObjectCache } from "../git/object-cache.ts";
import type { KnownContents } from "../merge/tree-merge.ts";
import type { AcceptedMemory } from "./accepted-state.ts";
import type { CompactionPolicy } from "./compact.ts";
import type { CompactAheadMemory } from "./compact-ahead.ts";
import type { ContentionMemory } from "./contention.ts";

export interface Publisher {
  store: ObjectStore;
  /** The store's secret-free identity: what the process memory is keyed by. */
  storeId: string;
  memory: AcceptedMemory & ContentionMemory & CompactAheadMemory;
  git: ObjectCache;
  state: Pick<CheckoutState, "recordPublication" | "writeBaseline" | "checkLock">;
  /** The checkout's baseline (a commit needs one), and its files. */
  baseline: Baseline;
  baselineTree: FlatTree;
  /** The visible files as the commit scanned them, and the contents it read. */
  local: FlatTree;
  localContents: KnownContents;
  /** The author and committer of a commit, and its time. */
  agent(): string;
  now(): Date;
  /** Milliseconds on a clock that only goes forward, for the windows measured. */
  monotonic(): number;
  random(): number;
  /** Random hex ids: publication ids, notebook ids, compaction's nonces. */
  randomId(bytes: number): string;
  /** Sleep, no longer than the call's deadline allows. */
  sleep(ms: number): Promise<void>;
  /** Whether the call's deadline has passed. */
  outOfTime(): boolean;
  onStage(stage: string): Promise<void> | void;
  compaction: Partial<CompactionPolicy> | false;
  /** The most bytes of one pack: a bigger publication is uploaded in several (write.ts). */
  packBytes: number;
}

/**
 * A publication's packs hold at most this much each. The embedded store
 * writes a pack with two more copies of it in memory (bun:sqlite copies the
 * bound blob, SQLite builds its record), and a reader holds a pack whole
 * while it checks and imports it. At 16 MiB those copies alone put 33 MB
 * on top of a first commit of 50,000 files (75 MB of pack); at 8 MiB, ten
 * packs for it, that commit stays within 256 MB (docs/performance.md,
 * "BULK"). Compaction counts them as any other packs (compact.ts maxPacks).
 */
export const PACK_BYTES = 8 << 20;

/**
 * Publishing's settings, the same for every commit of a process: publish/'s
 * port in EngineDeps (engine.ts), which the commit operation hands the
 * runner with the checkout's part (commit.ts).
 */
export interface PublishSettings {
  /** How many times a commit that lost the race re-merges and tries again. */
  commitRetries: number;
  /**
   * Whether a commit from a checkout at the state this process last saw may
   * publish without reading `current` first (publish/attempt.ts, `recalling`). Default
   * true; fault tests aimed at that read turn it off.
   */
  guessCurrent?: boolean;
  /**
   * Whether a commit that lost a meeting of two builds on the winner at
   * once rather than offering (publish/attempt.ts, `metOne`). Default true;
   * the combining tests, which drive a meeting of two by hand to reach an
   * offer, turn it off.
   */
  meetAtOnce?: boolean;
  /** When a commit compacts the pack list (publish/compact.ts); false never does (tests of compaction itself). */
  compaction?: Partial<CompactionPolicy> | false;
  /** The most bytes of one pack before a publication starts another (PACK_BYTES); tests set it low to split small ones. */
  packBytes?: number;
  /**
   * Who publishes: the name each commit records as its author and committer
   * (contract/agent.ts), read when a commit is built — `serve` knows its
   * client only after the handshake. Default "slivingdoc".
   */
  agent?: () => string;
}
