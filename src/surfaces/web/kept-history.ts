/**
 * The history `slivingdoc web` keeps open: opening one reads every retained
 * commit (engine/history/read.ts), which a page of the log must not pay for
 * each time, so one opened history serves every request until the poller
 * sees `current` change and opens the next. The one it replaces is closed
 * once no request still reads it: a request never reads a closed history.
 */
import type { History } from "../../engine/history/read.ts";

interface Kept {
  history: History;
  /** Requests reading it now. */
  users: number;
  /** Replaced: closed when its last user is done. */
  retired: boolean;
  closed: boolean;
  /** What requests computed from it, by their own key (a chart): worth as long as the history. */
  memo: Map<string, Promise<unknown>>;
}

/** Memoised results per history: a few keys (the page asks for one or two charts). */
const MEMO_KEYS = 8;

export class KeptHistory {
  private current: Kept | null = null;
  private opening: Promise<Kept> | null = null;

  constructor(
    private readonly open: () => Promise<History>,
    private readonly close: (history: History) => void,
  ) {}

  /** `fn` over the kept history, opened first when none is. */
  async use<T>(fn: (history: History, memo: <M>(key: string, compute: () => Promise<M>) => Promise<M>) => Promise<T>): Promise<T> {
    let kept: Kept;
    // A history replaced and closed between its opening and this request's turn is not read: take the next.
    do kept = this.current ?? (await this.reopen());
    while (kept.closed);
    kept.users++;
    try {
      return await fn(kept.history, (key, compute) => remembered(kept, key, compute));
    } finally {
      kept.users--;
      if (kept.retired) this.closeIfUnused(kept);
    }
  }

  /** Open the history anew (once for callers at the same time), and make it the kept one; the one before closes when unused. Its history. */
  async reopen(): Promise<Kept> {
    this.opening ??= this.open()
      .then((history) => {
        const kept: Kept = { history, users: 0, retired: false, closed: false, memo: new Map() };
        const before = this.current;
        this.current = kept;
        if (before !== null) this.retire(before);
        return kept;
      })
      .finally(() => {
        this.opening = null;
      });
    return this.opening;
  }

  /** The history kept now, if any (the poller's state reads it). */
  get history(): History | null {
    return this.current?.history ?? null;
  }

  /** Close what is kept, now or once its requests are done. */
  dispose(): void {
    if (this.current !== null) this.retire(this.current);
    this.current = null;
  }

  private retire(kept: Kept): void {
    kept.retired = true;
    this.closeIfUnused(kept);
  }

  private closeIfUnused(kept: Kept): void {
    if (kept.users > 0 || kept.closed) return;
    kept.closed = true;
    kept.memo.clear();
    this.close(kept.history);
  }
}

function remembered<M>(kept: Kept, key: string, compute: () => Promise<M>): Promise<M> {
  const known = kept.memo.get(key) as Promise<M> | undefined;
  if (known !== undefined) return known;
  if (kept.memo.size >= MEMO_KEYS) kept.memo.delete(kept.memo.keys().next().value!);
  const made = compute();
  kept.memo.set(key, made);
  // A failure is not remembered: the next request tries again.
  made.catch(() => kept.memo.delete(key));
  return made;
}
