/**
 * The embedded default store: one SQLite file
 * (docs/decisions/0003-the-embedded-store-by-default.md), safe for many
 * processes on one machine. Each conditional write is a single statement, so
 * SQLite's own write lock makes it atomic across processes; WAL lets readers
 * proceed while one writer holds it.
 *
 * Nothing is answered that is not on disk, as with SQLite's
 * `synchronous = FULL`, but the flush happens after the write lock is
 * released rather than while it is held: a write commits without a flush
 * (`synchronous = NORMAL`) and is flushed (the WAL file's fdatasync) before
 * it is answered; a read that sees another connection's commits flushes the
 * WAL before it answers too — except in this process's turn (`queue`),
 * where the flush is owed until the turn ends, and the turn's own write,
 * whose flush covers them, pays it. So a turn holds no flush: it ends once
 * its write is visible, and the next writer's turn overlaps this one's
 * flush (docs/storage-protocol.md, "Contention"). The WAL is append-only
 * and checksummed frame by frame: whatever a crash leaves of it is a
 * prefix, so a flush covers every commit before it.
 */
import { Database } from "bun:sqlite";
import type { ConditionalRead, ConditionalWrite, ListedObject, ObjectStore, StoreClock, StoredObject, WriterQueue } from "./object-store.ts";
import { BUSY_TIMEOUT_MS, type Connection, gone, prepareDirectory, StoreFile } from "./sqlite-file.ts";
import { type QueueIdentity, sqliteWriterQueue, type TicketQueue } from "./sqlite-queue.ts";

function newEtag(): string {
  return crypto.randomUUID().replaceAll("-", "");
}

/**
 * `clock`: the wall clock of each object's `modified`, and the monotonic
 * one of the wait for another process's write lock; the writer queue's
 * heartbeats read it too. `writer`: who this process is, for the writer
 * queue (sqlite-queue.ts); without it, tickets are judged by heartbeat
 * only. `makeDirectory`: make the file's directory when it does not exist
 * (else the open fails).
 *
 * Every use sees the file its path names now, never only the one it opened:
 * a process that keeps its store open (`serve`) would otherwise go on
 * reading, and acknowledging writes into, a file that was removed or
 * replaced under it — that no one else sees, and that is lost with the
 * process. So each request compares the path's (device, inode) with the
 * open database's first (`here`), and each write again before it is
 * answered: another file at the path is opened in its place (an older copy
 * then reads as the store that went backwards it is); no file reads as a
 * store that holds nothing, and takes no write — it is never made anew.
 */
export function openSqliteStore(
  file: string,
  clock: StoreClock,
  { writer = { holder: crypto.randomUUID() }, makeDirectory = true }: { writer?: QueueIdentity; makeDirectory?: boolean } = {},
): ObjectStore {
  prepareDirectory(file, makeDirectory);
  return storeOn(new StoreFile(file, clock), lazyQueue(file, writer, clock));
}

function read(c: Connection | null, key: string): StoredObject | null {
  const row = c?.getQ.get(key);
  // bun:sqlite hands out a fresh Uint8Array of its own: copying it again cost a cold pull the size of its largest pack.
  return row ? { body: row.body, etag: row.etag } : null;
}

function readIfNoneMatch(c: Connection | null, key: string, etag: string): ConditionalRead {
  const row = c?.getIfNoneMatchQ.get(etag, key);
  if (!row) return null;
  // The body is NOT NULL in the table: null here is the etag matching.
  return row.body === null ? "unchanged" : { body: row.body, etag: row.etag };
}

/** The store's requests on its file, and its writers' turns on `queue`. */
function storeOn(f: StoreFile, queue: TicketQueue): ObjectStore {
  const store: ObjectStore = {
    kind: "sqlite",
    get: (key, signal) => f.run("get", () => f.readHere((c) => read(c, key)), signal),
    getIfNoneMatch: (key, etag, signal) => f.run("get", () => f.readHere((c) => readIfNoneMatch(c, key, etag)), signal),
    putIfAbsent: (key, body, signal) => f.run("putIfAbsent", () => putIfAbsent(f, key, body), signal),
    putIfMatch: (key, body, expected, signal) => f.run("putIfMatch", () => putIfMatch(f, key, body, expected), signal),
    list: (prefix, signal) => f.run("list", () => list(f, prefix), signal),
    delete: (key, signal) =>
      f.run(
        "delete",
        () => {
          const c = f.here();
          if (c !== null && c.deleteQ.run(key).changes > 0) f.flushWritten("delete", c);
        },
        signal,
      ),
    queue: turnsOn(f, queue, () => peek(f, store)),
    putWith: (creates, key, body, expected, committed, signal) => f.run("putIfMatch", () => putWith(f, creates, key, body, expected, committed), signal),
    close: async () => {
      queue.close();
      f.close();
    },
  };
  return store;
}

/** The store as a waiting writer's preparation reads it: no flush (object-store.ts `WriterQueue`). */
function peek(f: StoreFile, store: ObjectStore): ObjectStore {
  return {
    ...store,
    get: (key) => f.run("get", () => read(f.here(), key)),
    getIfNoneMatch: (key, etag) => f.run("get", () => readIfNoneMatch(f.here(), key, etag)),
  };
}

function putIfAbsent(f: StoreFile, key: string, body: Uint8Array): ConditionalWrite {
  const c = f.here();
  if (c === null) throw gone("putIfAbsent");
  const etag = newEtag();
  const { changes } = c.insertQ.run(key, body, etag, f.clock.now().getTime());
  if (changes !== 1) return { ok: false };
  f.flushWritten("putIfAbsent", c);
  return { ok: true, etag };
}

function putIfMatch(f: StoreFile, key: string, body: Uint8Array, expected: string): ConditionalWrite {
  const c = f.here();
  if (c === null) return { ok: false };
  const etag = newEtag();
  const { changes } = c.swapQ.run(body, etag, f.clock.now().getTime(), key, expected);
  if (changes !== 1) return { ok: false };
  f.flushWritten("putIfMatch", c);
  return { ok: true, etag };
}

function list(f: StoreFile, prefix: string): ListedObject[] {
  const c = f.here();
  if (c === null) return [];
  const listed = c.listQ.all(prefix.length, prefix).map((r) => ({ key: r.key, size: r.size, modified: new Date(r.modified) }));
  f.flushSeen(c);
  return listed;
}

/** The conditional write of `key` with `creates`, in one transaction (object-store.ts `putWith`). */
function putWith(
  f: StoreFile,
  creates: Array<{ key: string; body: Uint8Array }>,
  key: string,
  body: Uint8Array,
  expected: string | null,
  committed: (() => void) | undefined,
): ConditionalWrite {
  const c = f.here();
  const etag = newEtag();
  if (!writeTogether(c, creates, key, body, expected, etag, f.clock.now().getTime())) return { ok: false };
  const before = f.flushes;
  try {
    committed?.();
  } catch {
    // Ending a turn is only an optimisation (sqlite-queue.ts); the write stands.
  }
  // Unless the turn's end flushed since our commit (which covers it).
  if (f.flushes === before) f.flushWritten("putIfMatch", c!);
  else f.stillHere("putIfMatch", c!);
  return { ok: true, etag };
}

/**
 * The conditional write of `key` with `creates`, one transaction, each
 * object `modified` at `now`; false when it lost. A store that is gone
 * holds no `current` to match, and makes none.
 */
function writeTogether(
  c: Connection | null,
  creates: Array<{ key: string; body: Uint8Array }>,
  key: string,
  body: Uint8Array,
  expected: string | null,
  etag: string,
  now: number,
): boolean {
  if (c === null) {
    if (expected === null) throw gone("putIfMatch");
    return false;
  }
  const lost = Symbol("lost");
  try {
    // Immediate: the write lock taken first, so that a store locked by another connection fails before anything is done.
    c.db
      .transaction(() => {
        for (const x of creates) c.insertQ.run(x.key, x.body, newEtag(), now);
        const { changes } = expected === null ? c.insertQ.run(key, body, etag, now) : c.swapQ.run(body, etag, now, key, expected);
        if (changes !== 1) throw lost; // rolls the creates back too
      })
      .immediate();
  } catch (e) {
    if (e === lost) return false;
    throw e;
  }
  return true;
}

/** Writers' turns on the queue (object-store.ts `WriterQueue`): each turn's reads, and what they owe the disk when it ends. */
function turnsOn(f: StoreFile, queue: TicketQueue, peek: () => ObjectStore): WriterQueue {
  return {
    async enter(whileWaiting, signal, placed) {
      // No turns in a store that is gone: its queue's files are not made anew either.
      if (f.here() === null) throw gone("putIfMatch");
      const leave = await queue.enter(whileWaiting && (() => whileWaiting(peek())), signal, placed);
      let open = true;
      // What the turn read that may not be on disk yet.
      let owed = false;
      return {
        get: (key) =>
          f.run("get", () => {
            const c = f.here();
            const object = read(c, key);
            if (c !== null && f.unflushed(c)) owed = true;
            return object;
          }),
        end() {
          if (!open) return;
          open = false;
          try {
            leave();
          } catch {
            // A ticket that cannot be dropped is skipped by the others once stale (sqlite-queue.ts).
          }
          // A turn that wrote nothing still flushes what it read before its
          // caller acts on it (a synchronisation moves a baseline to it). A
          // failed flush is done again by the next read that sees it.
          try {
            if (owed) f.flushSeen();
          } catch {
            /* see above */
          }
        },
      };
    },
  };
}

/**
 * The writer queue, its tickets in a database of their own beside the
 * store, never flushed to disk (sqlite-queue.ts): in the store's own file,
 * every ticket taken, touched or dropped took the store's write lock, and
 * the writer in its turn waited for it in SQLite's busy handler.
 *
 * Opened at the first turn, not with the store: most calls (a pull, a log,
 * a commit with nothing to publish) take none, and opening it made and
 * removed three files on every one. A queue that cannot be opened (its
 * file damaged or not writable) fails each `enter`, and the writer goes
 * without a turn (publish/turn.ts): writers then race, as on S3, and the
 * conditional write decides.
 */
function lazyQueue(file: string, writer: QueueIdentity, clock: StoreClock): TicketQueue {
  let opened: { queue: TicketQueue; db: Database } | undefined;
  const open = (): TicketQueue => {
    if (opened !== undefined) return opened.queue;
    let db: Database | undefined;
    try {
      db = new Database(`${file}-queue`, { create: true, strict: true });
      db.run(`PRAGMA busy_timeout = ${BUSY_TIMEOUT_MS}`);
      db.run("PRAGMA journal_mode = WAL");
      db.run("PRAGMA synchronous = OFF");
      opened = { queue: sqliteWriterQueue(db, file, writer, clock), db };
      return opened.queue;
    } catch (cause) {
      db?.close();
      throw cause;
    }
  };
  return {
    enter: async (whileWaiting, signal, placed) => open().enter(whileWaiting, signal, placed),
    close() {
      opened?.queue.close();
      opened?.db.close();
      opened = undefined;
    },
  };
}
