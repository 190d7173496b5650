/**
 * A commit's turn where the store orders its writers (the embedded store's
 * queue, object-store.ts `queue`), and a turn that is always ours where it
 * does not (S3: writers race, and the conditional write decides).
 */
import type { ObjectStore, WriterTurn } from "../../store/object-store.ts";
import { loadAcceptedState } from "./accepted-state.ts";
import { MANIFEST_KEY } from "./manifest.ts";
import type { Publisher } from "./publisher.ts";

/**
 * Where the store orders its writers (the embedded store: object-store.ts
 * `queue`), this commit's place in the line and then its turn, from
 * reading `current` to the moment its conditional write is visible; while
 * it waits, it downloads what the writers before it publish, so that the
 * turn itself reads little more than `current`. Elsewhere (S3) a turn that
 * is always ours: writers race, and the conditional write decides.
 */
export interface Turn {
  /** Leave the line, or end the turn: before the files are written, and at the latest when the commit ends. */
  end(): void;
  /** The store as the turn reads it once it began (object-store.ts `WriterTurn.get`); before, the store. */
  readonly store: ObjectStore;
  /**
   * Whether the store orders this writer (a place in the embedded store's
   * line): no one publishes between its read of `current` in its turn and
   * its write, and that read is local, so a guess saves nothing — and is
   * stale whenever anyone published since this process last looked.
   */
  ordered: boolean;
  /** How many writers were ahead when this one took its place (0 without a line). */
  ahead: number;
  /** Settles when the turn began — or when the line failed or was left: the conditional write decides then. */
  began: Promise<void>;
  /** Whether this writer still waits in the line: its turn has not begun, and it neither left nor lost the line. */
  waiting(): boolean;
}

function alwaysOurs(store: ObjectStore): Turn {
  return { end: () => {}, store, ordered: false, ahead: 0, began: Promise.resolve(), waiting: () => false };
}

/** Take a place in the store's line (where it has one): returns once placed, with the turn to come in `began`. */
export async function takeTurn(p: Pick<Publisher, "store" | "git" | "onStage">): Promise<Turn> {
  const { store } = p;
  if (!store.queue) return alwaysOurs(store);
  await p.onStage("queue");
  const leaving = new AbortController();
  let placed!: (ahead: number) => void;
  const place = new Promise<number>((resolve) => (placed = resolve));
  const entering = store.queue.enter(preparing(p), leaving.signal, (ahead) => placed(ahead));
  // The queue failed before it placed us (its database, say): go without a turn; the conditional write decides.
  const first = await Promise.race([place, entering.then(() => null, () => "failed" as const)]);
  if (first === "failed") return alwaysOurs(store);
  // The turn granted before the line said where we stood: nobody was ahead.
  return lineTurn(store, entering, leaving, first ?? 0);
}

/**
 * Downloads only when `current` changed since the last look; a look that
 * finds it unchanged reads no body (the store's conditional read). Only
 * the cache is filled from what it reads: nothing is acted on.
 */
function preparing(p: Pick<Publisher, "git">): (peek: ObjectStore) => Promise<void> {
  let seen: string | null = null;
  return async (peek) => {
    const now = seen === null ? await peek.get(MANIFEST_KEY) : await peek.getIfNoneMatch(MANIFEST_KEY, seen);
    if (now === null || now === "unchanged") return;
    seen = now.etag;
    await loadAcceptedState(peek, p.git);
  };
}

function lineTurn(store: ObjectStore, entering: Promise<WriterTurn>, leaving: AbortController, ahead: number): Turn {
  let turn: WriterTurn | null = null;
  let over = false;
  const began = entering.then(
    (t) => {
      // Left while the turn was being granted: give it back at once.
      if (over) t.end();
      else turn = t;
    },
    () => {
      // The line failed or was left: the conditional write decides.
      over = true;
    },
  );
  return {
    ordered: true,
    ahead,
    began,
    waiting: () => turn === null && !over,
    get store(): ObjectStore {
      const t = turn;
      return t === null ? store : { ...store, get: (key) => t.get(key) };
    },
    end() {
      if (turn !== null) turn.end();
      else if (!over) leaving.abort();
      over = true;
    },
  };
}
