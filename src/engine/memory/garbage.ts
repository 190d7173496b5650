/**
 * A collection asked for once a long loop has dropped enough short-lived
 * buffers. A loop over thousands of files makes several for each (the file
 * read, its inflated blob, its deflated entry) and drops them at once, but
 * JavaScriptCore paces its passes by the heap it holds: with a big
 * notebook's trees and stat cache alive (50–100 MB for 50,000 files), the
 * dead buffers of a first commit or a cold pull piled up to some 100 MB
 * before a pass came (docs/performance.md, "BULK"). Each such loop counts
 * here what it dropped; every COLLECT_EVERY bytes, a pass runs.
 *
 * `release.ts` frees one big buffer at once; this is for the many small
 * ones, which cannot each be freed (most are views of the runtime's pools).
 * The count is the process's, across calls: a server's small calls add up
 * to a pass now and then, as their buffers do.
 */

/**
 * The dropped bytes between two passes. A pass over a big notebook's heap
 * takes 5-20 ms; reading and writing this many bytes of files takes
 * longer. What a pass frees, the next files reuse rather than take anew
 * from the system: at 32 MB, a first commit of 50,000 files peaked some
 * 16 MB higher.
 */
export const COLLECT_EVERY = 16 * 2 ** 20;

/** Counts dropped bytes and runs `collect` once every `every` of them. */
export class GarbageMeter {
  private dropped = 0;

  constructor(
    private readonly every: number,
    private readonly collect: () => void,
  ) {}

  /** `bytes` of buffers just dropped (or about to be); a pass runs once `every` of them were. */
  add(bytes: number): void {
    this.dropped += bytes;
    if (this.dropped >= this.every) this.now();
  }

  /** A pass now, if anything was dropped since the last: before a step that needs a lot of memory at once. */
  now(): void {
    if (this.dropped === 0) return;
    this.dropped = 0;
    this.collect();
  }
}

// Synchronous: a pass only asked for (Bun.gc(false)) waits for the event
// loop, which a loop reading files synchronously does not give back.
const processMeter = new GarbageMeter(COLLECT_EVERY, () => Bun.gc(true));

/** `bytes` of buffers just dropped by one of the process's loops (or about to be). */
export function droppedBytes(bytes: number): void {
  processMeter.add(bytes);
}

/** The process's dropped buffers collected now, before a step that needs much memory at once (a big pack handed to the store). */
export function collectDropped(): void {
  processMeter.now();
}
