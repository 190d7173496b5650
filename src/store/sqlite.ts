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
import { Database, type Statement } from "bun:sqlite";
import { accessSync, closeSync, constants, existsSync, fdatasyncSync, mkdirSync, openSync, rmSync, statSync } from "node:fs";
import { dirname } from "node:path";
import {
  type ConditionalRead,
  type ConditionalWrite,
  type ListedObject,
  type ObjectStore,
  type StoreClock,
  StoreError,
  type StoredObject,
  type StoreFault,
  type WriterQueue,
} from "./object-store.ts";
import { type QueueIdentity, sqliteWriterQueue, type TicketQueue } from "./sqlite-queue.ts";

/** How long a writer waits for another process's write lock before failing, at most. */
const BUSY_TIMEOUT_MS = 15_000;
/**
 * How long SQLite itself waits for it, in one go. bun:sqlite is
 * synchronous: inside SQLite's busy handler nothing else of the process
 * runs, not even the timer of the call's deadline, so a longer wait is
 * made of these, between which the store looks at the request's signal
 * (`run`).
 */
const BUSY_STEP_MS = 20;
/** The longest pause between two of those waits. */
const BUSY_PAUSE_MS = 50;

function newEtag(): string {
  return crypto.randomUUID().replaceAll("-", "");
}

/**
 * One open database: its file's identity when it was opened, and its
 * statements. The store keeps one, and replaces it when its path names
 * another file (`StoreFile.here`).
 */
interface Connection {
  db: Database;
  /** The (device, inode) of the file it opened. */
  identity: string;
  /** The same, of its write-ahead log and the log's index then (null: none). */
  log: { "-wal": string | null; "-shm": string | null };
  getQ: Statement<{ body: Uint8Array; etag: string }, [string]>;
  /** The same, with no body where the etag is the one given: one statement, so the comparison and the read see one version. */
  getIfNoneMatchQ: Statement<{ body: Uint8Array | null; etag: string }, [string, string]>;
  insertQ: Statement;
  swapQ: Statement;
  listQ: Statement<{ key: string; size: number; modified: number }, [number, string]>;
  deleteQ: Statement;
  // Changes when another connection commits (SQLite's data_version).
  versionQ: Statement<{ data_version: number }, []>;
}

/** The (device, inode) of the file at `file` now; null when there is none. */
function identityAt(file: string): string | null {
  try {
    const { dev, ino } = statSync(file, { bigint: true });
    return `${dev}:${ino}`;
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === "ENOENT") return null;
    throw e;
  }
}

/** Open the database at `file`; `create`: make it when absent (else a missing file fails the open). */
function connect(file: string, create: boolean): Connection {
  let db: Database | undefined;
  try {
    refuseUnusable(file);
    db = new Database(file, { create, readwrite: true, strict: true });
    // Setting up a new file takes the write lock (processes starting on one
    // new store at once wait for each other); on a store set up already
    // these take none, and cannot wait.
    db.run(`PRAGMA busy_timeout = ${BUSY_TIMEOUT_MS}`);
    db.run("PRAGMA journal_mode = WAL");
    db.run("PRAGMA synchronous = NORMAL");
    db.run(
      `CREATE TABLE IF NOT EXISTS objects (
         key TEXT PRIMARY KEY,
         body BLOB NOT NULL,
         etag TEXT NOT NULL,
         modified INTEGER NOT NULL
       ) WITHOUT ROWID`,
    );
    db.run(`PRAGMA busy_timeout = ${BUSY_STEP_MS}`);
    const identity = identityAt(file);
    if (identity === null) throw new StoreError("open", "sqlite open: the file went away", "failed", { fault: "gone" });
    return {
      db,
      identity,
      log: { "-wal": identityAt(`${file}-wal`), "-shm": identityAt(`${file}-shm`) },
      getQ: db.query("SELECT body, etag FROM objects WHERE key = ?"),
      // The body column is read (its overflow pages too) only in the ELSE branch: an unchanged object costs its key's lookup.
      getIfNoneMatchQ: db.query("SELECT CASE WHEN etag = ?1 THEN NULL ELSE body END AS body, etag FROM objects WHERE key = ?2"),
      insertQ: db.query("INSERT INTO objects (key, body, etag, modified) VALUES (?, ?, ?, ?) ON CONFLICT(key) DO NOTHING"),
      swapQ: db.query("UPDATE objects SET body = ?, etag = ?, modified = ? WHERE key = ? AND etag = ?"),
      listQ: db.query("SELECT key, length(body) AS size, modified FROM objects WHERE substr(key, 1, ?) = ? ORDER BY key"),
      deleteQ: db.query("DELETE FROM objects WHERE key = ?"),
      versionQ: db.query("PRAGMA data_version"),
    };
  } catch (cause) {
    db?.close();
    if (cause instanceof StoreError) throw cause;
    throw new StoreError("open", `sqlite open: ${describe(cause)}`, "failed", { cause, fault: faultOf(cause) });
  }
}

/**
 * Close a database whose file may no longer be at its path. SQLite itself
 * neither checkpoints nor removes the write-ahead log of a file that moved
 * or was removed; but where the log and its index at the path are still
 * this database's own (its file alone was removed or replaced), the next
 * file at the path would read them as its own. So every commit in them is
 * moved into this database's file first, wherever it is now, and they are
 * removed; a log that may be another store's is never touched.
 */
function retire(c: Connection, file: string): void {
  if (identityAt(file) === c.identity) {
    c.db.close();
    return;
  }
  let emptied = false;
  const own = (suffix: "-wal" | "-shm") => c.log[suffix] !== null && identityAt(`${file}${suffix}`) === c.log[suffix];
  if (own("-wal")) {
    try {
      emptied = c.db.query<{ busy: number }, []>("PRAGMA wal_checkpoint(TRUNCATE)").get()?.busy === 0;
    } catch {
      /* kept: see below */
    }
  }
  const remove = emptied ? (["-wal", "-shm"] as const).filter(own) : [];
  c.db.close();
  // A log not wholly moved into its file is kept: it may hold the only copy of a commit.
  for (const suffix of remove) rmSync(`${file}${suffix}`, { force: true });
}

/** The store's file is not at its path (removed, or moved away): it is never made anew behind a running process. */
function gone(operation: StoreError["operation"]): StoreError {
  return new StoreError(operation, `sqlite ${operation}: the store's file is gone`, "failed", { fault: "gone" });
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

function prepareDirectory(file: string, makeDirectory: boolean): void {
  try {
    if (makeDirectory) mkdirSync(dirname(file), { recursive: true });
    else if (!existsSync(dirname(file))) throw new StoreError("open", "sqlite open: no such directory", "failed", { fault: "no-directory" });
  } catch (cause) {
    if (cause instanceof StoreError) throw cause;
    throw new StoreError("open", `sqlite open: ${describe(cause)}`, "failed", { cause, fault: faultOf(cause) });
  }
}

/**
 * The store's file as this process has it open: the database its path
 * names now (`here`), what of it is flushed to disk, and how each request
 * is run against it.
 */
class StoreFile {
  private conn: Connection | null;
  /** The data_version of the connection last flushed (`flushSeen`). */
  private flushedVersion: number | null = null;
  /** Flushes done: one after our commit covers it. */
  flushes = 0;

  constructor(
    readonly file: string,
    readonly clock: StoreClock,
  ) {
    this.conn = connect(file, true);
  }

  /**
   * The database the path names now, opened if it is another file (the one
   * open closed first, so that its log is never read as the new file's);
   * null when no file is there.
   */
  here(): Connection | null {
    const identity = identityAt(this.file);
    if (identity === null) return null;
    if (this.conn !== null && identity === this.conn.identity) return this.conn;
    if (this.conn !== null) retire(this.conn, this.file);
    this.conn = null;
    this.flushedVersion = null;
    this.conn = connect(this.file, false);
    return this.conn;
  }

  /**
   * A read of the file the path names now (`here`), with what other
   * connections committed flushed before it is answered: every read of the
   * store goes through it.
   */
  readHere<T>(readFrom: (c: Connection | null) => T): T {
    const c = this.here();
    const answer = readFrom(c);
    if (c !== null) this.flushSeen(c);
    return answer;
  }

  /** Throws, as an unknown outcome, when the file written is no longer the store's: the write is not answered as done. */
  stillHere(operation: StoreError["operation"], written: Connection): void {
    if (identityAt(this.file) !== written.identity) {
      throw new StoreError(operation, `sqlite ${operation}: the store's file was removed or replaced during the write`, "unknown");
    }
  }

  /**
   * Every commit so far on disk: the WAL flushed. Without a WAL file, a
   * checkpoint has moved every commit into the database and flushed it
   * (SQLite does both before removing the WAL).
   */
  private flushWal(): void {
    let fd: number;
    try {
      // Read-write: Windows flushes only a handle open for writing.
      fd = openSync(`${this.file}-wal`, "r+");
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === "ENOENT") return;
      throw e;
    }
    try {
      fdatasyncSync(fd);
    } finally {
      closeSync(fd);
    }
    this.flushes++;
  }

  /** Whether `c` holds commits of other connections not flushed yet. */
  unflushed(c: Connection): boolean {
    return c.versionQ.get()!.data_version !== this.flushedVersion;
  }

  /** After a read: flush what other connections committed, so nothing read is lost to a crash. */
  flushSeen(c: Connection | null = this.conn): void {
    if (c === null) return;
    const version = c.versionQ.get()!.data_version;
    if (version === this.flushedVersion) return;
    this.flushWal();
    this.flushedVersion = version;
  }

  /**
   * After a write of ours that changed something: its flush, whose failure
   * leaves the outcome unknown (it is visible); then the proof that the file
   * written is still the store's, before the write is answered.
   */
  flushWritten(operation: StoreError["operation"], c: Connection): void {
    const version = c.versionQ.get()!.data_version;
    try {
      this.flushWal();
    } catch (cause) {
      throw new StoreError(operation, `sqlite ${operation}: flush ${describe(cause)}`, "unknown", { cause });
    }
    this.flushedVersion = version;
    this.stillHere(operation, c);
  }

  /**
   * `fn`, a request: synchronous, as bun:sqlite is. One that finds another
   * connection holding the write lock (SQLITE_BUSY: nothing was done) is
   * tried again, with pauses in which the process runs on, until
   * BUSY_TIMEOUT_MS — or until `signal` aborts (the call's deadline, which
   * answers it: store/deadline.ts), and then it fails, not sent.
   */
  async run<T>(operation: StoreError["operation"], fn: () => T, signal?: AbortSignal): Promise<T> {
    const until = this.clock.monotonic() + BUSY_TIMEOUT_MS;
    for (let pause = 1; ; pause = Math.min(pause * 2, BUSY_PAUSE_MS)) {
      try {
        return fn();
      } catch (cause) {
        if (cause instanceof StoreError) throw cause;
        const wait = isBusy(cause) ? Math.min(pause, until - this.clock.monotonic()) : 0;
        // A failed single-statement write in SQLite rolls back: the outcome is known.
        const failed = () => new StoreError(operation, `sqlite ${operation}: ${describe(cause)}`, "failed", { cause, fault: faultOf(cause) });
        if (wait <= 0 || signal?.aborted) throw failed();
        await pauseFor(wait, signal);
        // Never tried again once the signal ended it: the caller was answered that it was not sent.
        if (signal?.aborted) throw failed();
      }
    }
  }

  close(): void {
    if (this.conn !== null) retire(this.conn, this.file);
    this.conn = null;
  }
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
    async enter(whileWaiting, signal) {
      // No turns in a store that is gone: its queue's files are not made anew either.
      if (f.here() === null) throw gone("putIfMatch");
      const leave = await queue.enter(whileWaiting && (() => whileWaiting(peek())), signal);
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
    enter: async (whileWaiting, signal) => open().enter(whileWaiting, signal),
    close() {
      opened?.queue.close();
      opened?.db.close();
      opened = undefined;
    },
  };
}

/**
 * What SQLite would not say plainly at open: a file this user may not
 * write opens read-only without a word (its writes would then fail one by
 * one), and a directory in the file's place is only "unable to open".
 */
function refuseUnusable(file: string): void {
  let isFile: boolean;
  try {
    isFile = statSync(file).isFile();
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === "ENOENT") return; // made on open
    throw e;
  }
  if (!isFile) throw new StoreError("open", "sqlite open: not a regular file", "failed", { fault: "not-a-database" });
  accessSync(file, constants.W_OK);
}

/** SQLite's answer when another connection holds the lock a request needs: nothing was done. */
function isBusy(cause: unknown): boolean {
  return describe(cause).startsWith("SQLITE_BUSY");
}

/** A pause of `ms`, ended early once `signal` aborts. */
function pauseFor(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      signal?.removeEventListener("abort", done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal?.addEventListener("abort", done, { once: true });
  });
}

/** The codes, SQLite's and the file system's, of a store file that is not a database, damaged, or not this user's to write. */
function faultOf(cause: unknown): StoreFault | undefined {
  const code = cause && typeof cause === "object" && "code" in cause ? String((cause as { code: unknown }).code) : "";
  if (code === "SQLITE_NOTADB") return "not-a-database";
  if (code.startsWith("SQLITE_CORRUPT")) return "damaged";
  // CANTOPEN: the file cannot be made in its directory (a directory in its place is refused above).
  if (code.startsWith("SQLITE_READONLY") || code === "SQLITE_CANTOPEN" || code === "SQLITE_PERM") return "not-writable";
  if (code === "EACCES" || code === "EPERM" || code === "EROFS") return "not-writable";
  return undefined;
}

function describe(cause: unknown): string {
  if (cause && typeof cause === "object" && "code" in cause) return String((cause as { code: unknown }).code);
  return cause instanceof Error ? cause.name : "error";
}
