import { afterAll, expect, test } from "bun:test";
import { copyFileSync, existsSync, mkdtempSync, renameSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { boundedStore, DeadlinePassed, deadlineIn } from "../../src/store/deadline.ts";
import { openSqliteStore } from "../../src/store/sqlite.ts";
import { holdWriteLock } from "../support/sqlite-lock-holder.ts";
import { STORES } from "../../src/surfaces/stores.ts";
import { describeStoreConformance } from "./conformance.ts";
import { SYSTEM_CLOCK } from "../../src/surfaces/system-clock.ts";

const root = mkdtempSync(join(tmpdir(), "slivingdoc-sqlite-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));
let n = 0;

describeStoreConformance("sqlite", async () => openSqliteStore(join(root, `store-${n++}.db`), SYSTEM_CLOCK), { capabilities: STORES.sqlite.capabilities });

const text = (t: string) => new TextEncoder().encode(t);
const storeFiles = (file: string) => [file, `${file}-wal`, `${file}-shm`];

test("sqlite: a file removed under an open store reads as a store that holds nothing, takes no write, and is not made anew", async () => {
  const file = join(root, "removed.db");
  const store = openSqliteStore(file, SYSTEM_CLOCK);
  const created = await store.putIfAbsent("current", text("one"));
  if (!created.ok) throw new Error("create lost on a fresh store");
  for (const f of storeFiles(file)) rmSync(f);
  expect(await store.get("current")).toBeNull();
  expect(await store.list("")).toEqual([]);
  expect(await store.putIfMatch("current", text("two"), created.etag)).toEqual({ ok: false });
  expect(await store.putWith!([], "current", text("two"), created.etag)).toEqual({ ok: false });
  await expect(store.putWith!([], "current", text("two"), null)).rejects.toMatchObject({ name: "StoreError", fault: "gone" });
  await expect(store.putIfAbsent("packs/a", text("a"))).rejects.toMatchObject({ name: "StoreError", fault: "gone" });
  await store.close();
  expect(storeFiles(file).filter((f) => existsSync(f))).toEqual([]);
});

test("sqlite: a write whose file is removed before it is answered is not answered as done: its outcome is unknown", async () => {
  const file = join(root, "removed-mid-write.db");
  const store = openSqliteStore(file, SYSTEM_CLOCK);
  const created = await store.putIfAbsent("current", text("one"));
  if (!created.ok) throw new Error("create lost on a fresh store");
  // `committed` runs once the write is visible, before it is answered.
  const removeFiles = () => {
    for (const f of storeFiles(file)) rmSync(f);
  };
  await expect(store.putWith!([{ key: "packs/a", body: text("a") }], "current", text("two"), created.etag, removeFiles)).rejects.toMatchObject({
    name: "StoreError",
    outcome: "unknown",
  });
  expect(await store.get("current")).toBeNull();
  await store.close();
  expect(existsSync(file)).toBe(false);
});

test("sqlite: an older copy moved over an open store's file is read as it is, its log not taken for the copy's", async () => {
  const file = join(root, "moved-over.db");
  const seed = openSqliteStore(file, SYSTEM_CLOCK);
  await seed.putIfAbsent("current", text("one"));
  await seed.close();
  copyFileSync(file, `${file}.older`);
  const store = openSqliteStore(file, SYSTEM_CLOCK);
  const one = (await store.get("current"))!;
  const two = await store.putIfMatch("current", text("two"), one.etag);
  if (!two.ok) throw new Error("the write lost with no other writer");
  renameSync(`${file}.older`, file);
  expect(new TextDecoder().decode((await store.get("current"))!.body)).toBe("one");
  expect(await store.putIfMatch("current", text("three"), two.etag)).toEqual({ ok: false });
  await store.close();
  const fresh = openSqliteStore(file, SYSTEM_CLOCK);
  expect(new TextDecoder().decode((await fresh.get("current"))!.body)).toBe("one");
  await fresh.close();
});

test("sqlite: another process holding the write lock past the call deadline: the write ends at the deadline, not sent, and the store is as it was", async () => {
  const file = join(root, "locked.db");
  const store = openSqliteStore(file, SYSTEM_CLOCK);
  const created = await store.putIfAbsent("current", text("one"));
  if (!created.ok) throw new Error("create lost on a fresh store");
  const holder = await holdWriteLock(file);
  try {
    // SQLite's own wait (15 s) would hold the whole process far past these deadlines.
    const together = boundedStore(store, deadlineIn(300)).putWith!([{ key: "packs/a", body: text("a") }], "current", text("two"), created.etag);
    await expect(together).rejects.toBeInstanceOf(DeadlinePassed);
    await expect(together).rejects.toMatchObject({ operation: "putIfMatch", outcome: "failed" });
    const alone = boundedStore(store, deadlineIn(300)).putIfAbsent("packs/b", text("b"));
    await expect(alone).rejects.toBeInstanceOf(DeadlinePassed);
    // Reads go on meanwhile: the lock keeps out writers only.
    expect(new TextDecoder().decode((await store.get("current"))!.body)).toBe("one");
  } finally {
    await holder.release();
  }
  expect(new TextDecoder().decode((await store.get("current"))!.body)).toBe("one");
  expect(await store.list("packs/")).toEqual([]);
  await store.close();
});

test("sqlite: a write that finds the write lock held waits for it, the process running on meanwhile, and lands once it is released", async () => {
  const file = join(root, "locked-then-released.db");
  const store = openSqliteStore(file, SYSTEM_CLOCK);
  const created = await store.putIfAbsent("current", text("one"));
  if (!created.ok) throw new Error("create lost on a fresh store");
  const holder = await holdWriteLock(file);
  const write = boundedStore(store, deadlineIn(60_000)).putWith!([], "current", text("two"), created.etag);
  // The write is waiting, and this process runs: it releases the holder itself.
  await holder.release();
  expect(await write).toMatchObject({ ok: true });
  expect(new TextDecoder().decode((await store.get("current"))!.body)).toBe("two");
  await store.close();
});

test("sqlite: a store whose directory may not be made is not opened where the directory does not exist, and nothing is made", async () => {
  const dir = join(root, "no-such-directory");
  expect(() => openSqliteStore(join(dir, "store.db"), SYSTEM_CLOCK, { makeDirectory: false })).toThrow(expect.objectContaining({ name: "StoreError", operation: "open", fault: "no-directory" }));
  expect(existsSync(dir)).toBe(false);
});

test("sqlite: 8 processes racing one compare-and-swap produce exactly one winner", async () => {
  const file = join(root, "multi-process.db");
  const store = openSqliteStore(file, SYSTEM_CLOCK);
  const created = await store.putIfAbsent("current", new TextEncoder().encode("start"));
  if (!created.ok) throw new Error("create lost on a fresh store");
  const racers = Array.from({ length: 8 }, (_, i) =>
    Bun.spawn([process.execPath, join(import.meta.dir, "sqlite-race-worker.ts"), file, created.etag, String(i)], {
      stdin: "pipe",
      stdout: "pipe",
      stderr: "inherit",
    }),
  );
  // A barrier, not a start time: every racer has opened the store and is
  // blocked on its stdin before any of them is told to go, however slowly
  // the machine started them.
  const outputs = racers.map((p) => readUntil(p.stdout, "ready\n"));
  const after = await Promise.all(outputs.map((o) => o.reached));
  expect(after.map((a) => a.before)).toEqual(Array(8).fill(""));
  for (const p of racers) p.stdin.write("go\n");
  await Promise.all(racers.map((p) => p.stdin.end()));
  const outcomes = await Promise.all(racers.map(async (p, i) => [await outputs[i]!.rest, await p.exited] as const));
  for (const [, code] of outcomes) expect(code).toBe(0);
  const winners = outcomes.flatMap(([out], i) => (out === "won" ? [i] : []));
  expect(winners.length).toBe(1);
  expect(outcomes.filter(([out]) => out === "lost").length).toBe(7);
  expect(new TextDecoder().decode((await store.get("current"))!.body)).toBe(`writer ${winners[0]}`);
  await store.close();
});

/**
 * Reads a process's stdout: `reached` resolves, with what came before it,
 * once `marker` has been read; `rest` then resolves with everything after
 * the marker, up to the end of the stream. A stream that ends before the
 * marker rejects `reached`.
 */
function readUntil(stream: ReadableStream<Uint8Array>, marker: string) {
  const reader = stream.getReader();
  const decoder = new TextDecoder();
  let text = "";
  let after = "";
  const reached = (async () => {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) throw new Error(`the racer's output ended before "${marker.trim()}": ${JSON.stringify(text)}`);
      text += decoder.decode(value, { stream: true });
      const at = text.indexOf(marker);
      if (at >= 0) {
        after = text.slice(at + marker.length);
        return { before: text.slice(0, at) };
      }
    }
  })();
  const rest = reached.then(async () => {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return after + decoder.decode();
      after += decoder.decode(value, { stream: true });
    }
  });
  return { reached, rest };
}

test("sqlite: putWith creates its objects and writes the key together, or does neither", async () => {
  const store = openSqliteStore(join(root, "put-with.db"), SYSTEM_CLOCK);
  const bytes = (s: string) => new TextEncoder().encode(s);
  const text = async (key: string) => {
    const o = await store.get(key);
    return o === null ? null : new TextDecoder().decode(o.body);
  };
  const created = await store.putWith!([{ key: "packs/a", body: bytes("a") }], "current", bytes("one"), null);
  expect(created.ok).toBe(true);
  expect([await text("packs/a"), await text("current")]).toEqual(["a", "one"]);
  // A lost condition writes nothing: not even the objects to create.
  const lost = await store.putWith!([{ key: "packs/b", body: bytes("b") }], "current", bytes("two"), "not-the-etag");
  expect(lost.ok).toBe(false);
  expect([await text("packs/b"), await text("current")]).toEqual([null, "one"]);
  const again = await store.putWith!([{ key: "packs/a", body: bytes("a") }, { key: "packs/c", body: bytes("c") }], "current", bytes("three"), created.ok ? created.etag : "");
  expect(again.ok).toBe(true);
  expect([await text("packs/c"), await text("current")]).toEqual(["c", "three"]);
  await store.close();
});

test("sqlite: putWith's write is visible to other connections when `committed` runs, before its flush is waited for", async () => {
  const file = join(root, "committed.db");
  const store = openSqliteStore(file, SYSTEM_CLOCK);
  const other = openSqliteStore(file, SYSTEM_CLOCK);
  const bytes = (s: string) => new TextEncoder().encode(s);
  let seen: string | null = "not called";
  let calls = 0;
  const result = await store.putWith!([{ key: "packs/p", body: bytes("p") }], "current", bytes("one"), null, () => {
    calls++;
    // A writer taking turns ends its turn here: the next one must already read this write.
    const read = Bun.peek(other.get("current")) as { body: Uint8Array } | null;
    seen = read === null ? null : new TextDecoder().decode(read.body);
  });
  expect(result.ok).toBe(true);
  expect([calls, seen]).toEqual([1, "one"]);
  // A lost condition commits nothing, and so never says it did.
  const lost = await store.putWith!([], "current", bytes("two"), "not-the-etag", () => calls++);
  expect([lost.ok, calls]).toEqual([false, 1]);
  await other.close();
  await store.close();
});

test("sqlite: taking and ending a turn never waits for the store's write lock", async () => {
  const { Database } = await import("bun:sqlite");
  const file = join(root, "queue-apart.db");
  const store = openSqliteStore(file, SYSTEM_CLOCK);
  await store.putIfAbsent("current", new TextEncoder().encode("start"));
  // Another writer in the middle of its transaction: the store's database is locked for writing.
  const writing = new Database(file);
  writing.run("BEGIN IMMEDIATE");
  try {
    const started = performance.now();
    // With the tickets in the store's own file, this waited in SQLite's busy handler (15 s, then failed).
    (await store.queue!.enter()).end();
    expect(performance.now() - started).toBeLessThan(1_000);
  } finally {
    writing.run("ROLLBACK");
    writing.close();
  }
  await store.close();
});

test("sqlite: a queue database that cannot be opened leaves the store working, without turns", async () => {
  const { mkdirSync } = await import("node:fs");
  const file = join(root, "no-queue.db");
  // A directory where the queue's file would be: it cannot be opened as a database.
  mkdirSync(`${file}-queue`);
  const store = openSqliteStore(file, SYSTEM_CLOCK);
  // The turn is refused (the writer then goes without one: publish/turn.ts); the store is not.
  await expect(store.queue!.enter()).rejects.toThrow();
  const created = await store.putIfAbsent("current", new TextEncoder().encode("start"));
  expect(created.ok).toBe(true);
  await store.close();
});

test("sqlite: a store that takes no turn never makes the queue's files", async () => {
  const { existsSync } = await import("node:fs");
  const file = join(root, "no-turn.db");
  const store = openSqliteStore(file, SYSTEM_CLOCK);
  await store.putIfAbsent("current", new TextEncoder().encode("start"));
  await store.get("current");
  expect(existsSync(`${file}-queue`)).toBe(false);
  (await store.queue!.enter()).end();
  expect(existsSync(`${file}-queue`)).toBe(true);
  await store.close();
});
