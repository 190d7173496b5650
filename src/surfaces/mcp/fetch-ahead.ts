/**
 * When a server looks ahead (engine/fetch-ahead.ts): only while no call
 * runs, first a short while after a call ends, then less and less often
 * while `current` stays as it was — each look that finds nothing new
 * doubles the wait, up to a bound; one that imports something, or a call,
 * starts it short again. The waits are the kind of store's (store/kind.ts
 * `looks`): a look at the embedded store is a read of a local file, one at
 * S3 a request (a conditional GET of `current`, answered without a body
 * while it has not moved), so an idle server's looks at S3 settle at one
 * every 16 s.
 *
 * A call never waits for a look's store half: a look that downloaded while
 * a call started drops what it downloaded. A call that starts while a look
 * imports under the checkout's lock waits for that import (a few
 * milliseconds), rather than retrying the lock.
 *
 * The same idle time compacts: once a call ended whose commit made a
 * compaction due (engine/compact-ahead.ts), it is built and published at
 * once, before the next look, under the checkout's lock; a call that
 * starts meanwhile waits for it as for an import.
 */
import type { CompactedAhead } from "../../engine/compact-ahead.ts";
import type { Downloaded, Looked } from "../../engine/fetch-ahead.ts";
import { DomainError } from "../../contract/errors.ts";
import type { LookWaits } from "../../store/kind.ts";
import type { Log } from "../log.ts";

export interface FetchAheadLooks {
  /** Before a call runs: no look starts, and one importing finishes first. */
  callStarts(): Promise<void>;
  /** After a call answered: the looks start again, short. */
  callEnded(): void;
  /** No look starts any more; resolves once what runs under the checkout's lock (an import, a compaction) has finished. */
  stop(): Promise<void>;
}

export interface LooksOptions {
  /** The store half of one look at the server's checkout (FetchAhead.download). */
  download(): Promise<Looked | Downloaded>;
  waits: LookWaits;
  log: Log;
  /** Whether a compaction is due (engine/compact-ahead.ts `compactionDue`); absent: none ever is. */
  compactionDue?(): boolean;
  /** Build and publish it (engine/compact-ahead.ts `compactAhead`). */
  compact?(): Promise<CompactedAhead>;
}

export function fetchAheadLooks(options: LooksOptions): FetchAheadLooks {
  const looks = new Looks(options);
  // A checkout pulled by an earlier server may be behind already.
  looks.schedule();
  return looks;
}

class Looks implements FetchAheadLooks {
  private calls = 0;
  private stopped = false;
  private timer: ReturnType<typeof setTimeout> | null = null;
  private waitMs: number;
  /** A look's import under the checkout's lock, while it runs. */
  private importing: Promise<unknown> | null = null;
  private looking = false;
  /** The last look failed: the next failure is not logged again. */
  private failed = false;

  constructor(private readonly options: LooksOptions) {
    this.waitMs = options.waits.shortestMs;
  }

  schedule(): void {
    this.clear();
    if (this.stopped || this.calls > 0 || this.looking) return;
    this.timer = setTimeout(() => void this.look(), this.waitMs);
    this.timer.unref?.();
  }

  async callStarts(): Promise<void> {
    this.calls++;
    this.clear();
    if (this.importing !== null) await this.importing.catch(() => {});
  }

  callEnded(): void {
    this.calls--;
    this.waitMs = this.options.waits.shortestMs;
    this.compactOrSchedule();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.clear();
    // A compaction between calls is finished, not cut off (its deadline bounds it): the server's end leaves no orphans behind it.
    await this.importing?.catch(() => {});
  }

  /** The compaction a call made due, at once when nothing else runs; else the next look. */
  private compactOrSchedule(): void {
    const { compact, compactionDue } = this.options;
    if (compact === undefined || this.stopped || this.calls > 0 || this.looking || compactionDue?.() !== true) return this.schedule();
    this.clear();
    this.looking = true;
    const done = compact().then(
      (how) => {
        if (how === "compacted") this.options.log.info("pack list compacted between calls", {});
      },
      (e: unknown) => {
        // Not tried again: the commits compact in their turn, as they would without this.
        this.options.log.warn("compacting between calls failed; a commit compacts instead", { error: e instanceof DomainError ? e.reason : e instanceof Error ? e.name : "error" });
      },
    );
    this.importing = done;
    void done.finally(() => {
      this.importing = null;
      this.looking = false;
      // A compaction given way to (busy) waits for the next call's end or look's, never loops here.
      this.schedule();
    });
  }

  private clear(): void {
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = null;
  }

  private async look(): Promise<void> {
    this.timer = null;
    this.looking = true;
    try {
      const got = await this.options.download();
      // A call began while the store was read: what was downloaded is its to fetch again, or already there.
      if (typeof got === "string" || this.calls > 0 || this.stopped) this.after(typeof got === "string" ? got : "busy");
      else {
        const done = got.import();
        this.importing = done;
        this.after(await done);
      }
      this.failed = false;
    } catch (e) {
      // The next call meets the same store and answers for it; a look only says so once, and waits long.
      if (!this.failed) this.options.log.warn("looking ahead at the store failed; the next call catches up itself", { error: e instanceof DomainError ? e.reason : e instanceof Error ? e.name : "error" });
      this.failed = true;
      this.waitMs = this.options.waits.longestMs;
    } finally {
      this.importing = null;
      this.looking = false;
      this.compactOrSchedule();
    }
  }

  /** Something imported, or a call in the way: look again soon; else less and less often (packs held are imported within a second). */
  private after(looked: Looked): void {
    const { shortestMs, longestMs } = this.options.waits;
    this.waitMs = looked === "fetched" || looked === "busy" ? shortestMs : Math.min(longestMs, this.waitMs * 2);
  }
}
