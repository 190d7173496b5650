/**
 * A commit's turn where the store orders its writers (the embedded store's
 * queue, object-store.ts `queue`), and a turn that is always ours where it
 * does not (S3: writers race, and the conditional write decides).
 */
import type { ObjectStore } from "../../store/object-store.ts";
import { loadAcceptedState } from "./accepted-state.ts";
import { MANIFEST_KEY } from "./manifest.ts";
import type { Publisher } from "./publisher.ts";

/**
 * Where the store orders its writers (the embedded store: object-store.ts
 * `queue`), this commit's turn, from reading `current` to the moment its
 * conditional write is visible; while it waits, it downloads what the
 * writers before it publish, so that the turn itself reads little more
 * than `current`. Elsewhere (S3) a turn that is always ours: writers race,
 * and the conditional write decides.
 */
export interface Turn {
  /** End the turn: before the files are written, and at the latest when the commit ends. */
  end(): void;
  /** The store as the turn reads it (object-store.ts `WriterTurn.get`). */
  store: ObjectStore;
  /**
   * Whether the store ordered this writer (a turn in the embedded store's
   * queue): no one publishes between its read of `current` and its write,
   * and that read is local, so a guess saves nothing — and is stale
   * whenever anyone published since this process last looked.
   */
  ordered: boolean;
}

export async function takeTurn(p: Pick<Publisher, "store" | "git" | "onStage">): Promise<Turn> {
  const { store } = p;
  if (!store.queue) return { end: () => {}, store, ordered: false };
  await p.onStage("queue");
  // Downloads only when `current` changed since the last look; a look that
  // finds it unchanged reads no body (the store's conditional read).
  let seen: string | null = null;
  try {
    // Only the cache is filled from what it reads: nothing is acted on.
    const turn = await store.queue.enter(async (peek: ObjectStore) => {
      const now = seen === null ? await peek.get(MANIFEST_KEY) : await peek.getIfNoneMatch(MANIFEST_KEY, seen);
      if (now === null || now === "unchanged") return;
      seen = now.etag;
      await loadAcceptedState(peek, p.git);
    });
    return { end: () => turn.end(), store: { ...store, get: (key) => turn.get(key) }, ordered: true };
  } catch {
    // The queue failed (its database, say): go without a turn; the conditional write decides.
    return { end: () => {}, store, ordered: false };
  }
}
