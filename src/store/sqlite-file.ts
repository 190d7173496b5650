/**
 * The embedded store's file as a process has it open (sqlite.ts): the
 * database its path names now, reopened when another file is put there;
 * what of it is flushed to disk; and how each request is run against it,
 * tried again while another process holds the write lock.
 */
import { Database, type Statement } from "bun:sqlite";
import { accessSync, closeSync, constants, existsSync, fdatasyncSync, mkdirSync, openSync, rmSync, statSync } from "node:fs";
import { dirname } from "node:path";
import { type StoreClock, StoreError, type StoreFault } from "./object-store.ts";


/** How long a writer waits for another process's write lock before failing, at most. */
export const BUSY_TIMEOUT_MS = 15_000;
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

/**
 * One open database: its file's identity when it was opened, and its
 * statements. The store keeps one, and replaces it when its path names
 * another file (`StoreFile.here`).
 */
export interface Connection {
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
export function gone(operation: StoreError["operation"]): StoreError {
  return new StoreError(operation, `sqlite ${operation}: the store's file is gone`, "failed", { fault: "gone" });
}

export function prepareDirectory(file: string, makeDirectory: boolean): void {
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
export class StoreFile {
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
