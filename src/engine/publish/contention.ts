/**
 * What a process remembers of the races on each store, and the waits that
 * follow from it (docs/storage-protocol.md, "Contention"). Only liveness
 * depends on these: the conditional write decides every race, whatever
 * anyone waits.
 *
 * Waits are counted in windows — the measured time from reading `current`
 * to the answer of the conditional write, the time one publication holds
 * the store — not in fixed milliseconds: exponential backoff capped at a
 * second starved losers while a winner, building on what it had just
 * published without reading, came straight back and won round after round
 * (the capture effect of old shared networks). Now a loser offers its
 * publication to the others instead (combine.ts), and a commit whose
 * process lost races lately reads `current` rather than build on what it
 * remembers: its memory is likely stale, and it is how a winner kept
 * winning.
 */
import type { RecentMap } from "../memory/recent-map.ts";

/** The writers a first loser spreads its wait over, in windows (when it cannot offer its publication: a turn of the embedded store's queue). */
const CROWD = 16;
/** The highest level. */
const MAX_LEVEL = 16;
/** A window is measured, within these bounds (ms): a store's latency, not a stalled call. */
const MIN_WINDOW_MS = 2;
const MAX_WINDOW_MS = 1_000;
/** Before any window is measured, one is assumed to be this long (ms). */
const FIRST_WINDOW_MS = 20;

/** What a process saw of the races on one store. */
export interface Contention {
  /** 0 when no commit of this process lost a race lately; doubled by each that did, halved by each that did not. */
  level: number;
  /** The last window measured (ms). */
  windowMs: number;
  /** Whether the last commit that built on what it remembered listed proposals waiting to be carried (combine.ts). */
  othersWaiting?: boolean;
  /**
   * That listing while it is answered: the commit did not wait for it (it
   * built on what it remembered to be quick), and the next commit of the
   * process, which needs its answer, does (settledContention).
   */
  listing?: Promise<void>;
}

/** The process memory of the races on each store (process-memory.ts), by store identity. */
export interface ContentionMemory {
  contention: RecentMap<string, Contention>;
}

export function contentionOf(memory: ContentionMemory, storeId: string): Contention {
  return memory.contention.get(storeId) ?? { level: 0, windowMs: FIRST_WINDOW_MS };
}

/** A window measured: from reading `current` to the answer of the conditional write. */
export function measuredWindow(memory: ContentionMemory, storeId: string, ms: number): number {
  const seen = contentionOf(memory, storeId);
  const windowMs = Math.min(MAX_WINDOW_MS, Math.max(MIN_WINDOW_MS, ms));
  memory.contention.set(storeId, { ...seen, windowMs });
  return windowMs;
}

/**
 * The longest wait after the `lost`-th lost race in a row (ms), with
 * `windowMs` this commit's last window: a crowd's worth of windows after
 * the first loss, half as long after each further one, never less than
 * one window — the writer that has lost most comes back first.
 */
export function retrySpread(lost: number, windowMs: number): number {
  return windowMs * Math.max(1, CROWD / 2 ** (lost - 1));
}

/** What a commit that built on what it remembered listed: whether others wait to be carried. */
export function noteOthersWaiting(memory: ContentionMemory, storeId: string, waiting: boolean): void {
  memory.contention.set(storeId, { ...contentionOf(memory, storeId), othersWaiting: waiting });
}

/** A listing a commit started and did not wait for: what it finds is noted when it is answered. */
export function noteListing(memory: ContentionMemory, storeId: string, waiting: Promise<boolean>): void {
  const listing = waiting.then(
    (found) => noteOthersWaiting(memory, storeId, found),
    () => {}, // unanswered: nothing learned
  );
  memory.contention.set(storeId, { ...contentionOf(memory, storeId), listing });
}

/** What this process saw of the races on the store, once a listing still being answered is in. */
export async function settledContention(memory: ContentionMemory, storeId: string): Promise<Contention> {
  await contentionOf(memory, storeId).listing;
  return contentionOf(memory, storeId);
}

/** A commit ended (published, found nothing to publish, or gave up) after losing `lost` races. */
export function commitEnded(memory: ContentionMemory, storeId: string, lost: number): void {
  const seen = contentionOf(memory, storeId);
  const level = lost > 0 ? Math.min(MAX_LEVEL, Math.max(1, seen.level * 2)) : Math.floor(seen.level / 2);
  memory.contention.set(storeId, { ...seen, level });
}

/**
 * About the longest a commit that loses `retries` races in a row takes on
 * a store where one attempt (read `current`, upload, conditional write)
 * takes `attemptMs` and a window `windowMs`: every attempt, and the longest
 * wait after each loss (retrySpread). What `doctor` sizes its advice on; the
 * merge and the offers of combine.ts are left out.
 */
export function longestCommitMs(retries: number, attemptMs: number, windowMs: number): number {
  const window = Math.min(MAX_WINDOW_MS, Math.max(MIN_WINDOW_MS, windowMs));
  let total = attemptMs;
  for (let lost = 1; lost <= retries; lost++) total += retrySpread(lost, window) + attemptMs;
  return total;
}
