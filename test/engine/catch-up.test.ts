/**
 * Catching up costs what changed, once: a checkout behind by k
 * publications downloads their k packs and imports them as one pack, one
 * index (object-cache.ts importPacks), and writes the union of the files
 * they changed, each once, leaving alone a file that already holds what
 * the notebook holds. On the embedded store and on S3 (Ceph RGW).
 */
import { afterEach, expect, test } from "bun:test";
import { appendFileSync, existsSync, lstatSync, mkdirSync, readdirSync, readFileSync, statSync, truncateSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { commit } from "../../src/engine/commit.ts";
import type { EngineDeps } from "../../src/engine/engine.ts";
import { ImportedPacks } from "../../src/engine/git/pack-import.ts";
import { RecentMap } from "../../src/engine/memory/recent-map.ts";
import { ProcessMemory } from "../../src/engine/process-memory.ts";
import { pull } from "../../src/engine/pull.ts";
import { SYSTEM_RANDOM } from "../../src/surfaces/engine-deps.ts";
import type { ObjectStore } from "../../src/store/object-store.ts";
import { git } from "../support/cgit.ts";
import { makeWorld, read, seedNotebook, type World, write } from "../support/fixture.ts";
import { storePlaces } from "../support/places.ts";

let world: World | undefined;
const { places: PLACES, emptyS3 } = storePlaces("catch-up");
afterEach(async () => {
  await emptyS3();
  await world?.close();
  world = undefined;
});

/** The object caches' git directories under the world's private root. */
function gitdirs(root: string): string[] {
  if (!existsSync(root)) return [];
  const found: string[] = [];
  for (const e of readdirSync(root, { withFileTypes: true })) {
    if (!e.isDirectory()) continue;
    const dir = join(root, e.name);
    if (existsSync(join(dir, "objects", "pack"))) found.push(dir);
    else found.push(...gitdirs(dir));
  }
  return found;
}

/** The pack indexes in every object cache of the world: one per pack imported. */
function indexCount(w: World): number {
  return gitdirs(w.privateRoot).reduce((n, d) => n + readdirSync(join(d, "objects", "pack")).filter((f) => f.endsWith(".idx")).length, 0);
}

/** A store that counts the packs downloaded through it. */
function countingPacks(store: ObjectStore): { store: ObjectStore; packs: () => number } {
  let packs = 0;
  return {
    store: { ...store, get: async (key) => (key.startsWith("packs/") && packs++, store.get(key)) },
    packs: () => packs,
  };
}

const NOTEBOOK = Object.fromEntries(Array.from({ length: 100 }, (_, i) => [`notes/f${i}.md`, `file ${i}\n`]));

/** `a` seeded with the 100-file notebook, `b` pulled from it. */
async function twoCheckouts(w: World): Promise<{ a: string; b: string }> {
  const a = w.checkout("a");
  const b = w.checkout("b");
  await seedNotebook(w.deps(), a, NOTEBOOK);
  await pull(w.deps(), { path: b });
  return { a, b };
}

/** Deps that count the visible files written or removed. */
function countingWrites(w: World, over: Partial<EngineDeps> = {}): { deps: EngineDeps; writes: () => number } {
  let writes = 0;
  return { deps: w.deps({ afterWrite: () => void writes++, ...over }), writes: () => writes };
}

for (const [name, place] of PLACES) {
  test(`${name}: behind by 16 publications of one file each, a pull imports one pack and writes the 16 files once`, async () => {
    world = place();
    const { a, b } = await twoCheckouts(world);
    for (let i = 0; i < 16; i++) {
      write(a, `notes/f${i}.md`, `file ${i}, edited\n`);
      await commit(world.deps(), { path: a, message: `edit ${i}` });
    }
    const indexes = indexCount(world);
    const counted = countingPacks(world.store);
    const { deps, writes } = countingWrites(world, { store: counted.store });
    const r = await pull(deps, { path: b });
    expect(r.generation).toBe(17);
    expect(counted.packs()).toBe(16);
    // One pack and one index for the sixteen: each used to be imported alone.
    expect(indexCount(world) - indexes).toBe(1);
    expect(writes()).toBe(16);
    for (let i = 0; i < 100; i++) expect(read(b, `notes/f${i}.md`)).toBe(i < 16 ? `file ${i}, edited\n` : `file ${i}\n`);
    // The cache knows each of the sixteen as imported: the next pull downloads none again.
    const again = countingPacks(world.store);
    await pull(world.deps({ store: again.store }), { path: b });
    expect(again.packs()).toBe(0);
  });

  test(`${name}: behind by 16 publications of the same file, a pull writes that file once`, async () => {
    world = place();
    const { a, b } = await twoCheckouts(world);
    for (let i = 0; i < 16; i++) {
      write(a, "notes/f0.md", `file 0, edit ${i}\n`);
      await commit(world.deps(), { path: a, message: `edit ${i}` });
    }
    const { deps, writes } = countingWrites(world);
    await pull(deps, { path: b });
    expect(writes()).toBe(1);
    expect(read(b, "notes/f0.md")).toBe("file 0, edit 15\n");
  });
}

test("a file that already holds what the notebook holds is not written, and stays clean for the next calls", async () => {
  world = makeWorld();
  const { a, b } = await twoCheckouts(world);
  write(a, "notes/f1.md", "the same edit\n");
  write(a, "notes/f2.md", "only theirs\n");
  await commit(world.deps(), { path: a, message: "two edits" });
  write(b, "notes/f1.md", "the same edit\n");
  const before = lstatSync(join(b, "notes/f1.md"));
  const { deps, writes } = countingWrites(world);
  await pull(deps, { path: b });
  expect(writes()).toBe(1);
  const after = lstatSync(join(b, "notes/f1.md"));
  expect([after.ino, after.mtimeMs]).toEqual([before.ino, before.mtimeMs]);
  // Its baseline is the notebook's: nothing of it is a local edit.
  write(b, "notes/f3.md", "mine\n");
  const mine = await commit(world.deps(), { path: b, message: "mine" });
  expect(mine.files.map((f) => f.path)).toEqual(["notes/f3.md"]);
});

test("packs imported together still answer for each: a compaction keeps what they hold, and C git reads their union", async () => {
  world = makeWorld();
  const { a, b } = await twoCheckouts(world);
  for (let i = 0; i < 6; i++) {
    write(a, `notes/f${i}.md`, `compacted ${i}\n`);
    await commit(world.deps(), { path: a, message: `edit ${i}` });
  }
  await pull(world.deps(), { path: b });
  const [union] = gitdirs(world.privateRoot).flatMap((d) => readdirSync(join(d, "objects", "pack")).filter((f) => /^pack-[0-9a-f]{40}\.pack$/.test(f)).map((f) => join(d, "objects", "pack", f)));
  expect(union).toBeDefined();
  expect(git(world.root, "verify-pack", union!.replace(/\.pack$/, ".idx")).code).toBe(0);
  // b's commit compacts: the base leaves out what the kept packs (imported together) hold.
  write(b, "notes/f99.md", "from b\n");
  await commit(world.deps({ compaction: { maxPacks: 3, keepRecent: 2 } }), { path: b, message: "b" });
  const cold = world.checkout("cold");
  await pull(world.deps(), { path: cold });
  for (let i = 0; i < 6; i++) expect(read(cold, `notes/f${i}.md`)).toBe(`compacted ${i}\n`);
  expect(read(cold, "notes/f99.md")).toBe("from b\n");
});

test("a record of packs imported together cut short by a crash: the packs it no longer names are downloaded again", async () => {
  world = makeWorld();
  const { a, b } = await twoCheckouts(world);
  for (let i = 0; i < 4; i++) {
    write(a, `notes/f${i}.md`, `cut ${i}\n`);
    await commit(world.deps(), { path: a, message: `edit ${i}` });
  }
  await pull(world.deps(), { path: b });
  const records = gitdirs(world.privateRoot).map((d) => join(d, "united-packs")).filter((f) => existsSync(f));
  expect(records.length).toBe(1);
  const record = records[0]!;
  const lines = readFileSync(record, "latin1").split("\n").filter((l) => l !== "");
  expect(lines.length).toBe(4);
  // The last line cut in the middle of an id, then a line appended after it (the next import).
  truncateSync(record, readFileSync(record).length - 30);
  appendFileSync(record, lines[0] + "\n");
  const imported = new ImportedPacks(join(record, ".."), new RecentMap(1), () => "x");
  const names = lines.map((l) => l.split(" ")[0]!);
  expect(names.map((n) => imported.has(n))).toEqual([true, true, true, false]);
  write(a, "notes/f50.md", "after the cut\n");
  await commit(world.deps(), { path: a, message: "after" });
  const counted = countingPacks(world.store);
  // A process started after the crash, which knows only what the record says.
  await pull(world.deps({ store: counted.store, memory: new ProcessMemory(SYSTEM_RANDOM) }), { path: b });
  // The pack the cut line named, and the new one; the manifest may list more, all known.
  expect(counted.packs()).toBe(2);
  expect(read(b, "notes/f3.md")).toBe("cut 3\n");
  expect(read(b, "notes/f50.md")).toBe("after the cut\n");
});

test("the record of packs imported together stays within its limit, keeping its newest lines", () => {
  world = makeWorld();
  const gitdir = join(world.root, "git");
  const union = "c".repeat(40);
  mkdirSync(join(gitdir, "objects", "pack"), { recursive: true });
  writeFileSync(join(gitdir, "objects", "pack", `pack-${union}.idx`), "");
  const name = (i: number) => i.toString(16).padStart(64, "0");
  const record = new ImportedPacks(gitdir, new RecentMap(1), () => Math.random().toString(16).slice(2), 2000);
  for (let i = 0; i < 40; i++) record.add(union, [{ name: name(i), oids: ["d".repeat(40)] }]);
  expect(statSync(join(gitdir, "united-packs")).size).toBeLessThanOrEqual(2000);
  const fresh = new ImportedPacks(gitdir, new RecentMap(1), () => "x", 2000);
  for (const r of [record, fresh]) {
    expect(r.has(name(39))).toBe(true);
    expect(r.oids(name(39))).toEqual(["d".repeat(40)]);
    expect(r.has(name(0))).toBe(false);
  }
});
