/**
 * The stat cache must never hide an edit: only a stamp that matches in size,
 * mtime, ctime and inode, taken comfortably after the file's last change, is
 * trusted. These tests edit files in ways that defeat weaker caches.
 */
import { afterEach, expect, test } from "bun:test";
import { lstatSync, utimesSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { commit } from "../../src/engine/commit.ts";
import { pull } from "../../src/engine/pull.ts";
import type { FileStamp } from "../../src/engine/scan.ts";
import { StatCache } from "../../src/engine/stat-cache.ts";
import { makeWorld, read, type World, write } from "../support/fixture.ts";

let world: World;
afterEach(async () => {
  await world?.close();
});

const stamp = (over: Partial<FileStamp> = {}): FileStamp => ({ size: 5, mtimeNs: 1_000_000_000_000n, ctimeNs: 1_000_000_000_000n, ino: 7n, ...over });
const OID = "a".repeat(40);

function cacheWith(s: FileStamp, takenNs: bigint): StatCache {
  const c = StatCache.empty();
  c.recordScan(new Map([["f.md", { stamp: s, oid: null, bytes: new Uint8Array() }]]), new Map([["f.md", OID]]), takenNs);
  return StatCache.parse(c.serialize());
}

test("trusted only on an exact stamp taken well after the file changed", () => {
  const s = stamp();
  const late = s.mtimeNs + 10_000_000_000n;
  expect(cacheWith(s, late).known("f.md", s)).toBe(OID);
  for (const other of [stamp({ size: 6 }), stamp({ mtimeNs: s.mtimeNs + 1n }), stamp({ ctimeNs: s.ctimeNs + 1n }), stamp({ ino: 8n })]) {
    expect(cacheWith(s, late).known("f.md", other)).toBeNull();
  }
  // Racily clean on a file system with whole-second times (the ctime has
  // no fraction): the stamp was taken within two seconds of the change.
  expect(cacheWith(s, s.mtimeNs + 1_000_000_000n).known("f.md", s)).toBeNull();
  expect(cacheWith(s, s.mtimeNs + 3_000_000_000n).known("f.md", s)).toBe(OID);
  expect(cacheWith(s, late).known("other.md", s)).toBeNull();
  expect(StatCache.parse("not json").known("f.md", s)).toBeNull();
});

test("with nanosecond file times the racy window is a clock tick, not two seconds", () => {
  // A file written during the previous call, a second ago, is trusted: warm
  // calls in quick succession must not read the whole notebook again.
  const s = stamp({ mtimeNs: 1_000_123_456_789n, ctimeNs: 1_000_123_456_789n });
  expect(cacheWith(s, s.mtimeNs + 1_000_000_000n).known("f.md", s)).toBe(OID);
  expect(cacheWith(s, s.mtimeNs + 150_000_000n).known("f.md", s)).toBe(OID);
  // Within 100 ms of the change (the file system's clock may lag ours by a tick): read again.
  expect(cacheWith(s, s.mtimeNs + 50_000_000n).known("f.md", s)).toBeNull();
  expect(cacheWith(s, s.mtimeNs).known("f.md", s)).toBeNull();
  // An mtime set by hand to whole seconds does not matter: the ctime, which no program sets, decides.
  const touched = stamp({ mtimeNs: 999_000_000_000n, ctimeNs: 1_000_123_456_789n });
  expect(cacheWith(touched, touched.ctimeNs + 1_000_000_000n).known("f.md", touched)).toBe(OID);
});

test("same size, same mtime restored by hand: the changed ctime still gives the edit away", async () => {
  world = makeWorld();
  const a = world.checkout("a");
  const b = world.checkout("b");
  await pull(world.deps(), a);
  write(a, "note.md", "alpha\n");
  const old = new Date(Date.now() - 60_000);
  utimesSync(join(a, "note.md"), old, old);
  await commit(world.deps(), a, "seed");
  // Let the recorded stamp become trusted (well past the racy window).
  const later = () => new Date(Date.now() + 10_000);
  await commit(world.deps({ now: later }), a, "nothing");
  const before = lstatSync(join(a, "note.md"));
  writeFileSync(join(a, "note.md"), "omega\n");
  utimesSync(join(a, "note.md"), before.atime, before.mtime);
  expect(lstatSync(join(a, "note.md")).size).toBe(before.size);
  const r = await commit(world.deps({ now: later }), a, "edit");
  expect(r.files).toEqual([{ path: "note.md", insertions: 1, deletions: 1 }]);
  await pull(world.deps(), b);
  expect(read(b, "note.md")).toBe("omega\n");
});

test("an edit right after a scan, within the same clock tick, is not missed", async () => {
  world = makeWorld();
  const a = world.checkout("a");
  await pull(world.deps(), a);
  for (let i = 0; i < 20; i++) {
    write(a, "fast.md", `version ${i}\n`);
    const r = await commit(world.deps(), a, `v${i}`);
    expect(r.files.map((f) => f.path)).toEqual(["fast.md"]);
  }
});

test("files a pull wrote are not stored again by the next scan, and their edits are still seen", async () => {
  world = makeWorld();
  const a = world.checkout("a");
  const b = world.checkout("b");
  await pull(world.deps(), a);
  for (let i = 0; i < 30; i++) write(a, `n${i}.md`, `note ${i}\n`);
  await commit(world.deps(), a, "many");
  await pull(world.deps(), b);
  write(b, "n7.md", "note 7, edited\n");
  const r = await commit(world.deps(), b, "one edit");
  expect(r.files).toEqual([{ path: "n7.md", insertions: 1, deletions: 1 }]);
});
