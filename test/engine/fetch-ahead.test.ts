/**
 * Fetching ahead (engine/fetch-ahead.ts): a look at the store between calls
 * downloads the packs other writers published, holds a few in the process
 * memory and imports several as one, under the checkout's lock taken only
 * if free — and changes nothing an agent sees. On the embedded store and on
 * S3 (Ceph RGW).
 */
import { afterEach, expect, test } from "bun:test";
import { existsSync, mkdirSync, readdirSync, realpathSync } from "node:fs";
import { join } from "node:path";
import { commit } from "../../src/engine/commit.ts";
import { acquireLock } from "../../src/engine/checkout/lock.ts";
import { checkoutStateDir } from "../../src/engine/checkout/registry.ts";
import { FetchAhead } from "../../src/engine/fetch-ahead.ts";
import { pull } from "../../src/engine/pull.ts";
import type { ObjectStore } from "../../src/store/object-store.ts";
import { makeWorld, read, seedNotebook, type World, write } from "../support/fixture.ts";
import { storePlaces } from "../support/places.ts";

let world: World | undefined;
const { places: PLACES, emptyS3 } = storePlaces("fetch-ahead");
afterEach(async () => {
  await emptyS3();
  await world?.close();
  world = undefined;
});

/** A store that counts the packs downloaded through it. */
function countingPacks(store: ObjectStore): { store: ObjectStore; packs: () => number } {
  let packs = 0;
  return {
    store: { ...store, get: async (key, signal) => (key.startsWith("packs/") && packs++, store.get(key, signal)) },
    packs: () => packs,
  };
}

/** The pack indexes in `dir`'s object cache. */
function indexes(w: World, dir: string): number {
  const packDir = join(checkoutStateDir(w.privateRoot, w.deps().storeId, realpathSync(dir)), "git", "objects", "pack");
  return readdirSync(packDir).filter((f) => f.endsWith(".idx")).length;
}

const NOTEBOOK = Object.fromEntries(Array.from({ length: 20 }, (_, i) => [`notes/f${i}.md`, `file ${i}\n`]));

async function twoCheckouts(w: World): Promise<{ a: string; b: string }> {
  const a = w.checkout("a");
  const b = w.checkout("b");
  await seedNotebook(w.deps(), a, NOTEBOOK);
  await pull(w.deps(), { path: b });
  return { a, b };
}

async function publishEdits(w: World, a: string, n: number, tag: string): Promise<void> {
  for (let i = 0; i < n; i++) {
    write(a, `notes/f${i}.md`, `file ${i}, ${tag}\n`);
    await commit(w.deps(), { path: a, message: `${tag} ${i}` });
  }
}

for (const [name, place] of PLACES) {
  test(`${name}: a look imports the publications made meanwhile as one pack; the visible files stay; the next commit downloads nothing and lands on them`, async () => {
    world = place();
    const { a, b } = await twoCheckouts(world);
    await publishEdits(world, a, 5, "ahead");
    const before = indexes(world, b);
    const ahead = new FetchAhead(world.deps(), b);
    expect(await ahead.look(world.store)).toBe("fetched");
    expect(indexes(world, b) - before).toBe(1);
    // What the agent sees changes only when it calls.
    expect(read(b, "notes/f0.md")).toBe("file 0\n");
    expect(await ahead.look(world.store)).toBe("unchanged");
    write(b, "notes/f19.md", "from b\n");
    const counted = countingPacks(world.store);
    const r = await commit(world.deps({ store: counted.store }), { path: b, message: "b" });
    expect(counted.packs()).toBe(0);
    expect(r.generation).toBe(7);
    for (let i = 0; i < 5; i++) expect(read(b, `notes/f${i}.md`)).toBe(`file ${i}, ahead\n`);
    const cold = world.checkout("cold");
    await pull(world.deps(), { path: cold });
    expect(read(cold, "notes/f19.md")).toBe("from b\n");
    expect(read(cold, "notes/f4.md")).toBe("file 4, ahead\n");
  });

  test(`${name}: fewer packs than a union's are held in memory, not imported, and the call takes them from there`, async () => {
    world = place();
    const { a, b } = await twoCheckouts(world);
    await publishEdits(world, a, 2, "held");
    const before = indexes(world, b);
    expect(await new FetchAhead(world.deps(), b).look(world.store)).toBe("held");
    expect(indexes(world, b)).toBe(before);
    const counted = countingPacks(world.store);
    const r = await pull(world.deps({ store: counted.store }), { path: b });
    expect(counted.packs()).toBe(0);
    expect(r.generation).toBe(3);
    expect(read(b, "notes/f1.md")).toBe("file 1, held\n");
  });
}

test("a look that finds the checkout's lock held imports nothing and says busy; the next one, with the lock free, imports", async () => {
  world = makeWorld();
  const { a, b } = await twoCheckouts(world);
  await publishEdits(world, a, 4, "locked");
  const deps = world.deps();
  const lockFile = join(checkoutStateDir(world.privateRoot, deps.storeId, realpathSync(b)), "lock");
  const ahead = new FetchAhead(deps, b);
  const before = indexes(world, b);
  const downloaded = await ahead.download(world.store);
  expect(typeof downloaded).toBe("object");
  // A call on the checkout, from another process as far as the lock says.
  const held = await acquireLock(lockFile, deps.self, 1000, deps);
  try {
    expect(await (downloaded as Exclude<typeof downloaded, string>).import()).toBe("busy");
    expect(indexes(world, b)).toBe(before);
  } finally {
    held.release();
  }
  expect(await ahead.look(world.store)).toBe("fetched");
  expect(indexes(world, b) - before).toBe(1);
});

test("a directory never pulled is not looked at, and nothing is made for it", async () => {
  world = makeWorld();
  const { a } = await twoCheckouts(world);
  await publishEdits(world, a, 4, "x");
  const never = world.checkout("never");
  mkdirSync(never, { recursive: true });
  const counted = countingPacks(world.store);
  expect(await new FetchAhead(world.deps(), never).look(counted.store)).toBe("not a checkout");
  expect(counted.packs()).toBe(0);
  expect(existsSync(checkoutStateDir(world.privateRoot, world.deps().storeId, realpathSync(never)))).toBe(false);
});
