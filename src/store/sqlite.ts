/**
 * The embedded default store: one SQLite file (docs/design.md,
 * Configuration), safe for many processes on one machine. Each conditional
 * write is a single statement, so SQLite's own write lock makes it atomic
 * across processes; WAL lets readers proceed while one writer holds it.
 */
import { Database } from "bun:sqlite";
import { mkdirSync } from "node:fs";
import { dirname } from "node:path";
import { type ConditionalWrite, type ListedObject, type ObjectStore, StoreError, type StoredObject } from "./object-store.ts";
import { type QueueIdentity, sqliteWriterQueue } from "./sqlite-queue.ts";

/** How long a writer waits for another process's write lock before failing. */
const BUSY_TIMEOUT_MS = 15_000;

function newEtag(): string {
  return crypto.randomUUID().replaceAll("-", "");
}

/** `writer`: who this process is, for the writer queue (sqlite-queue.ts); without it, tickets are judged by heartbeat only. */
export function openSqliteStore(file: string, writer: QueueIdentity = { holder: `${crypto.randomUUID()}` }): ObjectStore {
  let db: Database;
  let queueDb: Database;
  let queue: ReturnType<typeof sqliteWriterQueue>;
  try {
    mkdirSync(dirname(file), { recursive: true });
    db = new Database(file, { create: true, strict: true });
    db.run(`PRAGMA busy_timeout = ${BUSY_TIMEOUT_MS}`);
    db.run("PRAGMA journal_mode = WAL");
    db.run("PRAGMA synchronous = FULL");
    db.run(
      `CREATE TABLE IF NOT EXISTS objects (
         key TEXT PRIMARY KEY,
         body BLOB NOT NULL,
         etag TEXT NOT NULL,
         modified INTEGER NOT NULL
       ) WITHOUT ROWID`,
    );
    // The queue's own connection: its tickets are not flushed to disk (sqlite-queue.ts).
    queueDb = new Database(file, { strict: true });
    queueDb.run(`PRAGMA busy_timeout = ${BUSY_TIMEOUT_MS}`);
    queueDb.run("PRAGMA synchronous = OFF");
    queue = sqliteWriterQueue(queueDb, file, writer);
  } catch (cause) {
    throw new StoreError("open", `sqlite open: ${describe(cause)}`, "failed", { cause });
  }

  const getQ = db.query<{ body: Uint8Array; etag: string }, [string]>("SELECT body, etag FROM objects WHERE key = ?");
  const insertQ = db.query("INSERT INTO objects (key, body, etag, modified) VALUES (?, ?, ?, ?) ON CONFLICT(key) DO NOTHING");
  const swapQ = db.query("UPDATE objects SET body = ?, etag = ?, modified = ? WHERE key = ? AND etag = ?");
  const listQ = db.query<{ key: string; size: number; modified: number }, [number, string]>(
    "SELECT key, length(body) AS size, modified FROM objects WHERE substr(key, 1, ?) = ? ORDER BY key",
  );
  const deleteQ = db.query("DELETE FROM objects WHERE key = ?");

  // bun:sqlite is synchronous; the interface is async so every store looks alike.
  const run = <T>(operation: StoreError["operation"], fn: () => T): Promise<T> => {
    try {
      return Promise.resolve(fn());
    } catch (cause) {
      // A failed single-statement write in SQLite rolls back: the outcome is known.
      return Promise.reject(new StoreError(operation, `sqlite ${operation}: ${describe(cause)}`, "failed", { cause }));
    }
  };

  return {
    kind: "sqlite",
    get: (key) =>
      run("get", (): StoredObject | null => {
        const row = getQ.get(key);
        return row ? { body: new Uint8Array(row.body), etag: row.etag } : null;
      }),
    putIfAbsent: (key, body) =>
      run("putIfAbsent", (): ConditionalWrite => {
        const etag = newEtag();
        const { changes } = insertQ.run(key, body, etag, Date.now());
        return changes === 1 ? { ok: true, etag } : { ok: false };
      }),
    putIfMatch: (key, body, expected) =>
      run("putIfMatch", (): ConditionalWrite => {
        const etag = newEtag();
        const { changes } = swapQ.run(body, etag, Date.now(), key, expected);
        return changes === 1 ? { ok: true, etag } : { ok: false };
      }),
    list: (prefix) =>
      run("list", (): ListedObject[] =>
        listQ.all(prefix.length, prefix).map((r) => ({ key: r.key, size: r.size, modified: new Date(r.modified) })),
      ),
    delete: (key) =>
      run("delete", () => {
        deleteQ.run(key);
      }),
    queue,
    putWith: (creates, key, body, expected) =>
      run("putIfMatch", (): ConditionalWrite => {
        const etag = newEtag();
        const lost = Symbol("lost");
        try {
          db.transaction(() => {
            const now = Date.now();
            for (const c of creates) insertQ.run(c.key, c.body, newEtag(), now);
            const { changes } = expected === null ? insertQ.run(key, body, etag, now) : swapQ.run(body, etag, now, key, expected);
            if (changes !== 1) throw lost; // rolls the creates back too
          })();
        } catch (e) {
          if (e === lost) return { ok: false };
          throw e;
        }
        return { ok: true, etag };
      }),
    close: async () => {
      queue.close();
      queueDb.close();
      db.close();
    },
  };
}

function describe(cause: unknown): string {
  if (cause && typeof cause === "object" && "code" in cause) return String((cause as { code: unknown }).code);
  return cause instanceof Error ? cause.name : "error";
}
