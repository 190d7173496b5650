/**
 * The stat cache must never hide an edit: only a stamp that matches in size,
 * mtime, ctime and inode, taken comfortably after the file's last change, is
 * trusted. These tests edit files in ways that defeat weaker caches.
 */
import { afterEach, expect, test } from "bun:test";
import { lstatSync, realpathSync, utimesSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { blobId } from "../../src/engine/git/objects.ts";
import { CheckoutState } from "../../src/engine/checkout/state.ts";
import { commit } from "../../src/engine/commit.ts";
import { type EngineDeps, flushProcessMemory } from "../../src/engine/engine.ts";
import { pull } from "../../src/engine/pull.ts";
import type { FileStamp } from "../../src/engine/checkout/scan.ts";
import { StatCache } from "../../src/engine/checkout/stat-cache.ts";
import { makeWorld, read, seedNotebook, type World, write } from "../support/fixture.ts";

let world: World;
afterEach(async () => {
  await world?.close();
});

const stamp = (over: Partial<FileStamp> = {}): FileStamp => ({ size: 5, mtimeMs: 1_000_000_000, ctimeMs: 1_000_000_000, ino: 7, ...over });
const OID = "a".repeat(40);

/** The private state of the checkout at `dir`, as the engine opens it (release it after). */
function openState(deps: EngineDeps, dir: string): Promise<CheckoutState> {
  return CheckoutState.open({ privateRoot: deps.privateRoot, storeId: deps.storeId, dir: realpathSync(dir), self: deps.self, memory: deps.memory, clock: deps });
}

function cacheWith(s: FileStamp, takenMs: number): StatCache {
  const c = StatCache.empty();
  c.recordScan(new Map([["f.md", { stamp: s, oid: null, bytes: new Uint8Array() }]]), new Map([["f.md", OID]]), takenMs);
  return StatCache.parse(c.serialize());
}

test("trusted only on an exact stamp taken well after the file changed", () => {
  const s = stamp();
  const late = s.mtimeMs + 10_000;
  expect(cacheWith(s, late).known("f.md", s)).toBe(OID);
  for (const other of [stamp({ size: 6 }), stamp({ mtimeMs: s.mtimeMs + 0.000_001 }), stamp({ ctimeMs: s.ctimeMs + 0.000_001 }), stamp({ ino: 8 })]) {
    expect(cacheWith(s, late).known("f.md", other)).toBeNull();
  }
  // Racily clean on a file system with whole-second times (the ctime has
  // no fraction): the stamp was taken within two seconds of the change.
  expect(cacheWith(s, s.mtimeMs + 1_000).known("f.md", s)).toBeNull();
  expect(cacheWith(s, s.mtimeMs + 3_000).known("f.md", s)).toBe(OID);
  expect(cacheWith(s, late).known("other.md", s)).toBeNull();
  expect(StatCache.parse("not json").known("f.md", s)).toBeNull();
});

test("with nanosecond file times the racy window is a clock tick, not two seconds", () => {
  // A file written during the previous call, a second ago, is trusted: warm
  // calls in quick succession must not read the whole notebook again.
  const s = stamp({ mtimeMs: 1_764_000_123.456789, ctimeMs: 1_764_000_123.456789 });
  expect(cacheWith(s, s.mtimeMs + 1_000).known("f.md", s)).toBe(OID);
  expect(cacheWith(s, s.mtimeMs + 150).known("f.md", s)).toBe(OID);
  // Within 100 ms of the change (the file system's clock may lag ours by a tick): read again.
  expect(cacheWith(s, s.mtimeMs + 50).known("f.md", s)).toBeNull();
  expect(cacheWith(s, s.mtimeMs).known("f.md", s)).toBeNull();
  // An mtime set by hand to whole seconds does not matter: the ctime, which no program sets, decides.
  const touched = stamp({ mtimeMs: 1_763_000_000, ctimeMs: 1_764_000_123.456789 });
  expect(cacheWith(touched, touched.ctimeMs + 1_000).known("f.md", touched)).toBe(OID);
});

test("same size, same mtime restored by hand: the changed ctime still gives the edit away", async () => {
  world = makeWorld();
  const a = world.checkout("a");
  const b = world.checkout("b");
  await pull(world.deps(), { path: a });
  write(a, "note.md", "alpha\n");
  const old = new Date(Date.now() - 60_000);
  utimesSync(join(a, "note.md"), old, old);
  await commit(world.deps(), { path: a, message: "seed" });
  // Let the recorded stamp become trusted (well past the racy window).
  const later = () => new Date(Date.now() + 10_000);
  await commit(world.deps({ now: later }), { path: a, message: "nothing" });
  const before = lstatSync(join(a, "note.md"));
  writeFileSync(join(a, "note.md"), "omega\n");
  utimesSync(join(a, "note.md"), before.atime, before.mtime);
  expect(lstatSync(join(a, "note.md")).size).toBe(before.size);
  const r = await commit(world.deps({ now: later }), { path: a, message: "edit" });
  expect(r.files).toEqual([{ path: "note.md", insertions: 1, deletions: 1 }]);
  await pull(world.deps(), { path: b });
  expect(read(b, "note.md")).toBe("omega\n");
});

test("an edit right after a scan, within the same clock tick, is not missed", async () => {
  world = makeWorld();
  const a = world.checkout("a");
  await pull(world.deps(), { path: a });
  for (let i = 0; i < 20; i++) {
    write(a, "fast.md", `version ${i}\n`);
    const r = await commit(world.deps(), { path: a, message: `v${i}` });
    expect(r.files.map((f) => f.path)).toEqual(["fast.md"]);
  }
});

test("files a pull wrote are not stored again by the next scan, and their edits are still seen", async () => {
  world = makeWorld();
  const a = world.checkout("a");
  const b = world.checkout("b");
  await pull(world.deps(), { path: a });
  for (let i = 0; i < 30; i++) write(a, `n${i}.md`, `note ${i}\n`);
  await commit(world.deps(), { path: a, message: "many" });
  await pull(world.deps(), { path: b });
  write(b, "n7.md", "note 7, edited\n");
  const r = await commit(world.deps(), { path: b, message: "one edit" });
  expect(r.files).toEqual([{ path: "n7.md", insertions: 1, deletions: 1 }]);
});

test("the copy in the process memory is used only while the file on disk is the one it came from", async () => {
  world = makeWorld();
  const a = world.checkout("a");
  await pull(world.deps(), { path: a });
  const deps = world.deps();
  const state = await openState(deps, a);
  try {
    state.saveStatCache(cacheWith(stamp(), 10_000_000_000));
    expect(state.loadStatCache().recorded("f.md")).toBe(OID);
    // Another process (a CLI call beside a server) replaces the file.
    const other = StatCache.empty();
    other.recordScan(new Map([["g.md", { stamp: stamp(), oid: null, bytes: new Uint8Array() }]]), new Map([["g.md", "b".repeat(40)]]), 10_000_000_000);
    writeFileSync(join(state.stateDir, "stat-cache.json"), other.serialize());
    const loaded = state.loadStatCache();
    expect(loaded.recorded("f.md")).toBeNull();
    expect(loaded.recorded("g.md")).toBe("b".repeat(40));
    // A caller's changes to what it loaded never reach the remembered copy.
    loaded.recordWrites([{ path: "g.md", after: null, stamp: null, takenMs: 0 }]);
    expect(state.loadStatCache().recorded("g.md")).toBe("b".repeat(40));
  } finally {
    state.release();
  }
});

test("a racily clean file read again unchanged is trusted from then on, without rewriting the cache file", async () => {
  world = makeWorld();
  const a = world.checkout("a");
  await seedNotebook(world.deps(), a, { "note.md": "alpha\n" }); // stamped within the racy window
  const deps = world.deps();
  const state = await openState(deps, a);
  const file = join(state.stateDir, "stat-cache.json");
  const stampOfFile = () => {
    const st = lstatSync(file);
    return `${st.ino}:${st.mtimeMs}:${st.size}`;
  };
  const before = stampOfFile();
  state.release();
  // Well past the window: the file is read again, found unchanged, and its entry re-stamped.
  await pull(world.deps({ now: () => new Date(Date.now() + 10_000) }), { path: a });
  expect(stampOfFile()).toBe(before);
  const again = await openState(deps, a);
  try {
    const st = lstatSync(join(a, "note.md"));
    const stamp = { size: st.size, mtimeMs: st.mtimeMs, ctimeMs: st.ctimeMs, ino: st.ino };
    expect(again.loadStatCache().known("note.md", stamp)).not.toBeNull();
  } finally {
    again.release();
  }
});

test("a pull that writes a few files keeps them in this process's cache; another process reads them again, right", async () => {
  world = makeWorld();
  const a = world.checkout("a");
  const b = world.checkout("b");
  await pull(world.deps(), { path: a });
  for (let i = 0; i < 5; i++) write(a, `n${i}.md`, `note ${i}\n`);
  await commit(world.deps(), { path: a, message: "five" });
  await pull(world.deps(), { path: b });
  const deps = world.deps();
  const cacheFile = async () => {
    const state = await openState(deps, b);
    state.release();
    return join(state.stateDir, "stat-cache.json");
  };
  const file = await cacheFile();
  const before = lstatSync(file).mtimeMs;
  write(a, "n1.md", "note 1, edited by a\n");
  await commit(world.deps(), { path: a, message: "edit" });
  await pull(world.deps(), { path: b });
  expect(lstatSync(file).mtimeMs).toBe(before);
  // The file on disk does not know the pulled version; whoever reads it sees the truth.
  const onDisk = StatCache.load(file);
  const st = lstatSync(join(b, "n1.md"));
  expect(onDisk.known("n1.md", { size: st.size, mtimeMs: st.mtimeMs, ctimeMs: st.ctimeMs, ino: st.ino })).toBeNull();
  write(b, "n2.md", "note 2, edited by b\n");
  const r = await commit(world.deps(), { path: b, message: "b's edit" });
  expect(r.files).toEqual([{ path: "n2.md", insertions: 1, deletions: 1 }]);
});

test("what only the process memory holds is written out when the process ends (flushProcessMemory)", async () => {
  world = makeWorld();
  const a = world.checkout("a");
  const b = world.checkout("b");
  await pull(world.deps(), { path: a });
  write(a, "n.md", "one\n");
  await commit(world.deps(), { path: a, message: "one" });
  await pull(world.deps(), { path: b });
  write(a, "n.md", "two\n");
  await commit(world.deps(), { path: a, message: "two" });
  const later = world.deps({ now: () => new Date(Date.now() + 10_000) });
  await pull(later, { path: b }); // one file written: in the process memory only
  const state = await openState(later, b);
  state.release();
  const file = join(state.stateDir, "stat-cache.json");
  const st = lstatSync(join(b, "n.md"));
  const stamp = { size: st.size, mtimeMs: st.mtimeMs, ctimeMs: st.ctimeMs, ino: st.ino };
  expect(StatCache.load(file).known("n.md", stamp)).toBeNull();
  flushProcessMemory(world.memory);
  expect(StatCache.load(file).known("n.md", stamp)).not.toBeNull();
});

test("the process memory holds the caches of 16 checkouts; the least recent beyond are written out first", async () => {
  world = makeWorld();
  const w = world.checkout("w");
  await pull(world.deps(), { path: w });
  write(w, "n.md", "one\n");
  await commit(world.deps(), { path: w, message: "one" });
  const readers = Array.from({ length: 17 }, (_, i) => world.checkout(`r${i}`));
  for (const r of readers) await pull(world.deps(), { path: r });
  write(w, "n.md", "two\n");
  await commit(world.deps(), { path: w, message: "two" });
  // Each pull writes one file: in the process memory only, until the 17th pushes the first out.
  for (const r of readers) await pull(world.deps(), { path: r });
  const fileOf = async (dir: string) => {
    const state = await openState(world.deps(), dir);
    state.release();
    return join(state.stateDir, "stat-cache.json");
  };
  expect(StatCache.load(await fileOf(readers[0]!)).recorded("n.md")).toBe(blobId(new TextEncoder().encode("two\n")));
  expect(StatCache.load(await fileOf(readers[16]!)).recorded("n.md")).toBe(blobId(new TextEncoder().encode("one\n")));
});
