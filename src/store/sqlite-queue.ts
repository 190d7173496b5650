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
import type { StoreClock } from "./object-store.ts";

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
   * the ticket is dropped and `enter` fails. `placed` is told how many
   * tickets are ahead once this one is taken.
   */
  enter(whileWaiting?: () => Promise<void>, signal?: AbortSignal, placed?: (ahead: number) => void): Promise<() => void>;
  close(): void;
}

export function sqliteWriterQueue(db: Database, file: string, identity: QueueIdentity, clock: StoreClock): TicketQueue {
  return new Tickets(ticketStatements(db), new Doorbell(`${file}-turn`), identity, clock);
}

/** The `writers` table, made if absent, and the statements on it. */
function ticketStatements(db: Database) {
  db.run(
    `CREATE TABLE IF NOT EXISTS writers (
       ticket INTEGER PRIMARY KEY AUTOINCREMENT,
       holder TEXT NOT NULL,
       seen INTEGER NOT NULL,
       began INTEGER
     )`,
  );
  return {
    insertQ: db.query<{ ticket: number }, [string, number]>("INSERT INTO writers (holder, seen) VALUES (?, ?) RETURNING ticket"),
    headQ: db.query<{ ticket: number; holder: string; seen: number; began: number | null }, []>("SELECT ticket, holder, seen, began FROM writers ORDER BY ticket LIMIT 1"),
    beginQ: db.query("UPDATE writers SET seen = ?1, began = ?1 WHERE ticket = ?2"),
    touchQ: db.query("UPDATE writers SET seen = ? WHERE ticket = ?"),
    deleteQ: db.query("DELETE FROM writers WHERE ticket = ?"),
    aheadQ: db.query<{ ahead: number; mine: number }, [number]>("SELECT count(*) FILTER (WHERE ticket < ?1) AS ahead, count(*) FILTER (WHERE ticket = ?1) AS mine FROM writers"),
  };
}

type Statements = ReturnType<typeof ticketStatements>;

/**
 * One watcher per store, shared by its waiters, on the doorbell: a file
 * beside the database that a writer rewrites when its turn ends (or when
 * it skips a dead writer's). Watching the database itself woke every
 * waiter on every heartbeat: with 64 writers, more wake-ups than work.
 * The bell itself is watched, not its directory, where every write of
 * the store and of the tickets would wake every waiting process too. It
 * says whose turn it is now, so that a waiter far back in line goes back
 * to sleep at once instead of querying the line: sixteen writers on two
 * cores took 3.5 ms at the median to hand a turn over, 14 ms on average.
 */
class Doorbell {
  private readonly waiters = new Set<(head: number | null) => void>();
  private watcher: FSWatcher | null = null;

  constructor(private readonly bell: string) {}

  /** After a ticket left: ring for `head`, the one now at the head. */
  ring(head: number | null): void {
    try {
      writeFileSync(this.bell, head === null ? "" : String(head));
    } catch {
      /* the timer wakes them */
    }
    this.wakeAll(head);
  }

  /** `head`: the ticket whose turn it is, when known. */
  private wakeAll(head: number | null): void {
    for (const wake of [...this.waiters]) wake(head);
  }

  private heard(): void {
    let head: number | null = null;
    try {
      const text = readFileSync(this.bell, "utf8");
      // Read in the middle of a rewrite, it may be empty: wake everyone then.
      if (/^\d+$/.test(text)) head = Number(text);
    } catch {
      /* everyone, then */
    }
    this.wakeAll(head);
  }

  startWatching(): void {
    if (this.watcher !== null) return;
    try {
      closeSync(openSync(this.bell, "a")); // it must exist to be watched; never truncated here
      const watcher = watch(this.bell, () => this.heard());
      this.watcher = watcher;
      watcher.unref?.();
      // Out of inotify instances, say: the timer alone, then.
      watcher.on("error", () => {
        watcher.close();
        if (this.watcher === watcher) this.watcher = null;
      });
    } catch {
      this.watcher = null; // the timer alone, then
    }
  }

  /**
   * The next ring that may concern `ticket`, or `pollMs`. A ring for a head
   * more than NEAR tickets ahead does not: with `ahead` at most the
   * difference of tickets, such a waiter neither has the turn nor prepares.
   */
  nextChange(pollMs: number, ticket: number): Promise<void> {
    return new Promise<void>((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.waiters.delete(wake);
        resolve();
      };
      const wake = (head: number | null) => {
        if (head !== null && ticket - head > NEAR) return;
        done();
      };
      const timer = setTimeout(done, pollMs);
      this.waiters.add(wake);
    });
  }

  close(): void {
    this.wakeAll(null);
    this.watcher?.close();
    this.watcher = null;
  }
}

/** A waiter's `whileWaiting` work: at most one run at a time, at most every WORK_EVERY_MS. */
class Preparation {
  private running: Promise<void> | null = null;
  private last = 0;

  constructor(private readonly work: (() => Promise<void>) | undefined) {}

  maybeStart(now: number): void {
    if (!this.work || this.running !== null || now - this.last < WORK_EVERY_MS) return;
    this.last = now;
    this.running = this.work()
      .catch(() => {})
      .finally(() => {
        this.running = null;
      });
  }

  /** Its writes to the cache finish before the turn's own. */
  async done(): Promise<void> {
    await this.running;
  }
}

class Tickets implements TicketQueue {
  private closed = false;

  constructor(
    private readonly q: Statements,
    private readonly bell: Doorbell,
    private readonly identity: QueueIdentity,
    private readonly clock: StoreClock,
  ) {}

  private now(): number {
    return this.clock.now().getTime();
  }

  /** A heartbeat after the store closed (or any failure of one) is simply skipped: heartbeats only speed others up. */
  private touch(ticket: number): void {
    if (this.closed) return;
    try {
      this.q.touchQ.run(this.now(), ticket);
    } catch {
      /* see above */
    }
  }

  private drop(ticket: number): void {
    this.q.deleteQ.run(ticket);
    this.bell.ring(this.q.headQ.get()?.ticket ?? null);
  }

  async enter(whileWaiting?: () => Promise<void>, signal?: AbortSignal, placed?: (ahead: number) => void): Promise<() => void> {
    this.bell.startWatching();
    const { ticket } = this.q.insertQ.get(this.identity.holder, this.now())!;
    placed?.(this.q.aheadQ.get(ticket)?.ahead ?? 0);
    // A writer that leaves the line (its commit was carried by a turn ahead)
    // drops its ticket at once: left to the wait's next wake-up, it would
    // stand at the head for up to a poll, holding up the writers behind it.
    let waiting = true;
    const leave = () => {
      if (waiting && !this.closed) this.drop(ticket);
    };
    signal?.addEventListener("abort", leave, { once: true });
    try {
      await this.waitForTurn(ticket, new Preparation(whileWaiting), signal);
    } finally {
      waiting = false;
      signal?.removeEventListener("abort", leave);
    }
    this.q.beginQ.run(this.now(), ticket);
    const heartbeat = setInterval(() => this.touch(ticket), HEARTBEAT_MS);
    heartbeat.unref?.();
    return () => {
      clearInterval(heartbeat);
      if (this.closed) return;
      this.drop(ticket);
    };
  }

  /** Until `ticket` is at the head, or was taken for stale by another writer; a given-up wait drops it. */
  private async waitForTurn(ticket: number, preparing: Preparation, signal?: AbortSignal): Promise<void> {
    // Waiting counts as seen too: a live waiter's ticket must not look stale when it reaches the head.
    let lastTouch = this.now();
    for (;;) {
      if (this.closed) throw new Error("the store was closed while waiting for a turn");
      if (signal?.aborted) {
        await preparing.done();
        this.drop(ticket);
        throw new Error("the wait for a turn was given up");
      }
      const head = this.q.headQ.get();
      if (head === null || head.ticket === ticket) break;
      const now = this.now();
      if (this.skippable(head, now)) {
        this.drop(head.ticket);
        continue;
      }
      const { ahead, mine } = this.q.aheadQ.get(ticket)!;
      // Taken for stale by another writer (this process was stopped, say): go on without a turn; the conditional write decides.
      if (mine === 0) break;
      if (now - lastTouch > HEARTBEAT_MS) {
        this.touch(ticket);
        lastTouch = now;
      }
      // Only the next few in line prepare: the rest would only compete for the CPU with the turn.
      if (ahead <= PREPARING) preparing.maybeStart(now);
      await this.bell.nextChange(ahead <= PREPARING ? POLL_MS : POLL_BACK_MS, ticket);
    }
    await preparing.done();
  }

  /** A head whose turn is overlong, whose heartbeat is stale, or whose writer is provably gone. */
  private skippable(head: { holder: string; seen: number; began: number | null }, now: number): boolean {
    const overlong = head.began !== null && now - head.began > MAX_TURN_MS;
    return overlong || now - head.seen > STALE_MS || this.identity.isGone?.(head.holder) === true;
  }

  close(): void {
    this.closed = true;
    this.bell.close();
  }
}
