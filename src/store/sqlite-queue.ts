/**
 * The embedded store's writer queue (object-store.ts `WriterQueue`): every
 * writer is a process on this machine, so they can take turns in the order
 * they came — a ticket each in the `writers` table, the lowest ticket's turn.
 *
 * Why not SQLite's own write lock: a writer that finds it taken sleeps in
 * SQLite's busy handler, in steps that grow to 100 ms, and whoever asks at
 * the right instant gets it — sixteen writers holding it 3 ms each gave a
 * p99 wait of 1.3 s. Tickets are first come, first served, and a writer
 * waiting for its turn wakes when the database changes (a file-system
 * event: every ticket leaving writes the database), with a short timer as
 * the fallback where such events are not delivered.
 *
 * Tickets need no durability: they are written on a connection of their
 * own without fsync, so queueing costs no disk flush, and a crash that loses
 * them loses nothing. A ticket whose writer died stays behind it, so a
 * waiter at the head of the line checks the head's heartbeat: a holder
 * refreshes `seen` while it holds its turn, and one silent for STALE_MS is
 * skipped. (`isGone`, where the caller can tell, skips a dead writer at once.)
 * A turn longer than MAX_TURN_MS is skipped too: the queue only ever saves
 * lost races, and must never hold writers up for good.
 */
import type { Database } from "bun:sqlite";
import { closeSync, type FSWatcher, openSync, readFileSync, watch, writeFileSync } from "node:fs";

export interface QueueIdentity {
  /** Who this process is ("pid host start"), written into its tickets. */
  holder: string;
  /** Whether the process a ticket names is provably gone. */
  isGone?(holder: string): boolean;
}

const STALE_MS = 3_000;
/**
 * A turn this long is not waited for any more, even if its writer lives (it
 * may be stuck): the others go on and race it, which the conditional write
 * keeps safe. Far above any turn measured (docs/performance.md, scenario `race`).
 */
const MAX_TURN_MS = 10_000;
const HEARTBEAT_MS = 1_000;
/** The fallback wake-up when no file-system event comes. */
const POLL_MS = 25;
/** The same, for a writer further back in line, which has nothing to do until then. */
const POLL_BACK_MS = 100;
/** How many writers ahead a waiter may be and still download what they publish. */
const PREPARING = 2;
/** How far behind the head a waiter still wakes at each ring: those that prepare (ahead ≤ PREPARING) and the next. */
const NEAR = PREPARING + 1;
/** How often a waiter's `whileWaiting` work runs at most. */
const WORK_EVERY_MS = 20;

/** The tickets; sqlite.ts makes turns of them (object-store.ts `WriterTurn`). */
export interface TicketQueue {
  /**
   * Wait for this writer's turn, running `whileWaiting` now and then
   * meanwhile; returns `leave`, which ends the turn. Once `signal` aborts,
   * the ticket is dropped and `enter` fails.
   */
  enter(whileWaiting?: () => Promise<void>, signal?: AbortSignal): Promise<() => void>;
  close(): void;
}

export function sqliteWriterQueue(db: Database, file: string, identity: QueueIdentity): TicketQueue {
  db.run(
    `CREATE TABLE IF NOT EXISTS writers (
       ticket INTEGER PRIMARY KEY AUTOINCREMENT,
       holder TEXT NOT NULL,
       seen INTEGER NOT NULL,
       began INTEGER
     )`,
  );
  const insertQ = db.query<{ ticket: number }, [string, number]>("INSERT INTO writers (holder, seen) VALUES (?, ?) RETURNING ticket");
  const headQ = db.query<{ ticket: number; holder: string; seen: number; began: number | null }, []>(
    "SELECT ticket, holder, seen, began FROM writers ORDER BY ticket LIMIT 1",
  );
  const beginQ = db.query("UPDATE writers SET seen = ?1, began = ?1 WHERE ticket = ?2");
  const touchQ = db.query("UPDATE writers SET seen = ? WHERE ticket = ?");
  const deleteQ = db.query("DELETE FROM writers WHERE ticket = ?");
  const aheadQ = db.query<{ ahead: number; mine: number }, [number]>(
    "SELECT count(*) FILTER (WHERE ticket < ?1) AS ahead, count(*) FILTER (WHERE ticket = ?1) AS mine FROM writers",
  );

  let closed = false;
  /** A heartbeat after the store closed (or any failure of one) is simply skipped: heartbeats only speed others up. */
  const touch = (ticket: number) => {
    if (closed) return;
    try {
      touchQ.run(Date.now(), ticket);
    } catch {
      /* see above */
    }
  };

  // One watcher per store, shared by its waiters, on the doorbell: a file
  // beside the database that a writer rewrites when its turn ends (or when
  // it skips a dead writer's). Watching the database itself woke every
  // waiter on every heartbeat: with 64 writers, more wake-ups than work.
  // The bell itself is watched, not its directory, where every write of
  // the store and of the tickets would wake every waiting process too. It
  // says whose turn it is now, so that a waiter far back in line goes back
  // to sleep at once instead of querying the line: sixteen writers on two
  // cores took 3.5 ms at the median to hand a turn over, 14 ms on average.
  const waiters = new Set<(head: number | null) => void>();
  let watcher: FSWatcher | null = null;
  const bell = `${file}-turn`;
  /** After a ticket left: ring for the one now at the head. */
  const ring = () => {
    const head = headQ.get()?.ticket ?? null;
    try {
      writeFileSync(bell, head === null ? "" : String(head));
    } catch {
      /* the timer wakes them */
    }
    wakeAll(head);
  };
  /** `head`: the ticket whose turn it is, when known. */
  const wakeAll = (head: number | null) => {
    for (const wake of [...waiters]) wake(head);
  };
  const heard = () => {
    let head: number | null = null;
    try {
      const text = readFileSync(bell, "utf8");
      // Read in the middle of a rewrite, it may be empty: wake everyone then.
      if (/^\d+$/.test(text)) head = Number(text);
    } catch {
      /* everyone, then */
    }
    wakeAll(head);
  };
  const startWatching = () => {
    if (watcher !== null) return;
    try {
      closeSync(openSync(bell, "a")); // it must exist to be watched; never truncated here
      watcher = watch(bell, heard);
      watcher.unref?.();
      // Out of inotify instances, say: the timer alone, then.
      watcher.on("error", () => {
        watcher?.close();
        watcher = null;
      });
    } catch {
      watcher = null; // the timer alone, then
    }
  };
  /**
   * The next ring that may concern `ticket`, or `pollMs`. A ring for a head
   * more than NEAR tickets ahead does not: with `ahead` at most the
   * difference of tickets, such a waiter neither has the turn nor prepares.
   */
  const nextChange = (pollMs: number, ticket: number) =>
    new Promise<void>((resolve) => {
      const done = () => {
        clearTimeout(timer);
        waiters.delete(wake);
        resolve();
      };
      const wake = (head: number | null) => {
        if (head !== null && ticket - head > NEAR) return;
        done();
      };
      const timer = setTimeout(done, pollMs);
      waiters.add(wake);
    });

  return {
    async enter(whileWaiting, signal) {
      startWatching();
      let working: Promise<void> | null = null;
      let lastWork = 0;
      const { ticket } = insertQ.get(identity.holder, Date.now())!;
      // Waiting counts as seen too: a live waiter's ticket must not look stale when it reaches the head.
      let lastTouch = Date.now();
      for (;;) {
        if (closed) throw new Error("the store was closed while waiting for a turn");
        if (signal?.aborted) {
          await working;
          deleteQ.run(ticket);
          ring();
          throw new Error("the wait for a turn was given up");
        }
        const head = headQ.get();
        if (head === null || head.ticket === ticket) break;
        const now = Date.now();
        const overlong = head.began !== null && now - head.began > MAX_TURN_MS;
        if (overlong || now - head.seen > STALE_MS || identity.isGone?.(head.holder)) {
          deleteQ.run(head.ticket);
          ring();
          continue;
        }
        const { ahead, mine } = aheadQ.get(ticket)!;
        // Taken for stale by another writer (this process was stopped, say): go on without a turn; the conditional write decides.
        if (mine === 0) break;
        if (now - lastTouch > HEARTBEAT_MS) {
          touch(ticket);
          lastTouch = now;
        }
        // Only the next few in line prepare: the rest would only compete for the CPU with the turn.
        if (whileWaiting && ahead <= PREPARING && working === null && now - lastWork >= WORK_EVERY_MS) {
          lastWork = now;
          working = whileWaiting()
            .catch(() => {})
            .finally(() => {
              working = null;
            });
        }
        await nextChange(ahead <= PREPARING ? POLL_MS : POLL_BACK_MS, ticket);
      }
      await working; // its writes to the cache finish before the turn's own
      beginQ.run(Date.now(), ticket);
      const heartbeat = setInterval(() => touch(ticket), HEARTBEAT_MS);
      heartbeat.unref?.();
      const leave = () => {
        clearInterval(heartbeat);
        if (closed) return;
        deleteQ.run(ticket);
        ring();
      };
      return leave;
    },
    close() {
      closed = true;
      wakeAll(null);
      watcher?.close();
      watcher = null;
    },
  };
}
