/**
 * The one watcher of `current` for every page `slivingdoc web` serves: every
 * poll interval, one conditional read (engine readCurrentIfChanged: an idle
 * notebook costs one "not modified" answer and no body). When it changed,
 * the kept history is opened anew and the new state goes to every page
 * (its /events). A failed read is the state's `error`, and polling goes on:
 * the next read that succeeds clears it.
 */
import type { ErrorEnvelope } from "../../contract/results.ts";
import type { ObjectStore } from "../../store/object-store.ts";
import type { KeptHistory } from "./kept-history.ts";

/** /api/state (docs/web.md). */
export interface WebState {
  notebook: boolean;
  generation: number;
  oldestRetained: number;
  pollMs: number;
  error: ErrorEnvelope | null;
}

export interface PollerOptions {
  /** The store, each read bounded by the call deadline. */
  store: () => ObjectStore;
  kept: KeptHistory;
  pollMs: number;
  /** The envelope of a failure, as every answer builds it. */
  envelope: (error: unknown) => ErrorEnvelope;
  /** A new state: every page is told. */
  changed: (state: WebState) => void;
}

export class Poller {
  state: WebState;
  /** The ETag of `current` the kept history was read from; null: none read yet, or no notebook. */
  private etag: string | null = null;
  private timer: ReturnType<typeof setTimeout> | null = null;
  private stopped = false;
  private polling: Promise<void> | null = null;

  constructor(private readonly options: PollerOptions) {
    this.state = { notebook: false, generation: 0, oldestRetained: 0, pollMs: options.pollMs, error: null };
  }

  /** Settled once the first poll is done: the state before it says nothing yet. */
  ready: Promise<void> = Promise.resolve();

  /** The first poll now (the state the first page gets), the next ones every interval after each ends. */
  start(): void {
    this.ready = this.poll();
  }

  /** One poll; then the next is scheduled. */
  poll(): Promise<void> {
    this.polling ??= this.pollOnce().finally(() => {
      this.polling = null;
      if (!this.stopped) this.timer = setTimeout(() => void this.poll(), this.options.pollMs);
    });
    return this.polling;
  }

  /** No more polls; resolves once the one running is done. */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer !== null) clearTimeout(this.timer);
    await this.polling?.catch(() => {});
  }

  private async pollOnce(): Promise<void> {
    const { readCurrentIfChanged } = await import("../../engine/publish/accepted-state.ts");
    try {
      const read = await readCurrentIfChanged(this.options.store(), this.etag);
      const seen = read === "unchanged" ? this.etag : (read?.etag ?? null);
      // Nothing changed since the history kept was read (or, with no notebook yet, since the last look).
      if (read === "unchanged" || (seen === null && this.etag === null && this.options.kept.history !== null)) {
        this.settle({ ...this.state, error: null });
        return;
      }
      const { history } = await this.options.kept.reopen();
      // The history read `current` again: it may be newer than what this poll saw; the next poll compares with that.
      this.etag = history.etag;
      const oldest = history.publications[history.publications.length - 1]?.generation ?? 0;
      this.settle({ notebook: history.manifest !== null, generation: history.manifest?.generation ?? 0, oldestRetained: oldest, pollMs: this.options.pollMs, error: null });
    } catch (e) {
      this.settle({ ...this.state, error: this.options.envelope(e) });
    }
  }

  /** The new state, told to the pages when it differs (an error by its tokens and words, not its diagnostic id). */
  private settle(state: WebState): void {
    const key = (s: WebState) => JSON.stringify({ ...s, error: s.error === null ? null : { ...s.error, diagnosticId: "" } });
    const differs = key(state) !== key(this.state);
    this.state = state;
    if (differs) this.options.changed(state);
  }
}
