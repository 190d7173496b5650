/**
 * A publication bigger than one pack's bound (EngineDeps.packBytes; 8 MiB
 * by default) is uploaded in several packs: packs of blobs first, each with
 * a nonce, then the publication's own pack — its commit, trees and the rest
 * — last in the list, where the outcome proof looks for it
 * (docs/storage-protocol.md, "A publication in several packs"). Here the
 * bound is a few kilobytes, so a handful of files splits.
 */
import { afterEach, expect, test } from "bun:test";
import { readdirSync } from "node:fs";
import { join } from "node:path";
import { commit } from "../../src/engine/commit.ts";
import type { EngineDeps } from "../../src/engine/engine.ts";
import { ProcessMemory } from "../../src/engine/process-memory.ts";
import { PROPOSALS_PREFIX } from "../../src/engine/publish/combine.ts";
import { pull } from "../../src/engine/pull.ts";
import type { ObjectStore } from "../../src/store/object-store.ts";
import { SYSTEM_RANDOM } from "../../src/surfaces/engine-deps.ts";
import { git, withPacksInGit } from "../support/cgit.ts";
import { filesOf, makeWorld, readCurrent, type World, write } from "../support/fixture.ts";

/** The visible files as text. */
function textsOf(dir: string): Record<string, string> {
  return Object.fromEntries(Object.entries(filesOf(dir)).map(([path, b64]) => [path, Buffer.from(b64, "base64").toString("utf8")]));
}
import { storePlaces } from "../support/places.ts";
import { mulberry32 } from "../support/seeded.ts";

let world: World;
const { places: PLACES, emptyS3 } = storePlaces("split");
afterEach(async () => {
  await emptyS3();
  await world?.close();
});

const SMALL = 2 * 1024;

/** `n` files of about 3 KB of text that does not compress away, so a few fill a pack. */
function manyFiles(n: number, seed: number): Record<string, string> {
  const rand = mulberry32(seed);
  const files: Record<string, string> = {};
  for (let i = 0; i < n; i++) files[`d${i % 4}/f${i}.md`] = Array.from({ length: 60 }, () => rand().toString(36).slice(2)).join(" ") + "\n";
  return files;
}

/** A store that counts the pack downloads. */
function counting(store: ObjectStore): { store: ObjectStore; packGets: () => number } {
  let n = 0;
  return {
    store: { ...store, get: (key: string) => (key.startsWith("packs/") && n++, store.get(key)) } as ObjectStore,
    packGets: () => n,
  };
}

for (const [where, place] of PLACES) test(`${where}: a first commit over the bound is published in several packs that C git verifies; the own pack is last; a fresh pull reads every file`, async () => {
  world = place();
  const a = world.checkout("a");
  const deps = (o: Partial<EngineDeps> = {}) => world.deps({ packBytes: SMALL, ...o });
  await pull(deps(), { path: a });
  const files = manyFiles(40, 1);
  for (const [path, text] of Object.entries(files)) write(a, path, text);
  const out = await commit(deps(), { path: a, message: "many" });
  expect(out.generation).toBe(1);

  const { manifest } = await readCurrent(world.store);
  expect(manifest.packs.length).toBeGreaterThan(3);
  await withPacksInGit(world.store, ({ repo }) => {
    // The commit is in the last pack: its index, of the pack alone, names it.
    const last = manifest.packs.at(-1)!;
    const idx = readdirSync(join(repo, "objects", "pack")).filter((f) => f.endsWith(".idx"));
    const holding = idx.filter((f) => git(repo, "verify-pack", "-v", join(repo, "objects", "pack", f)).out.includes(`${manifest.head} commit`));
    expect(holding.length).toBe(1);
    expect(git(repo, "ls-tree", "-r", "--name-only", "main").out.trim().split("\n").sort()).toEqual(Object.keys(files).sort());
    expect(last.size).toBeGreaterThan(0);
  });
  // Every leading pack is under the bound plus one entry, and each differs from a repeat by its nonce.
  for (const p of manifest.packs.slice(0, -1)) expect(p.size).toBeLessThan(SMALL + 4096);

  // The committer downloads none of its own packs at its next call; a fresh checkout reads everything.
  const counted = counting(world.store);
  write(a, "d0/f0.md", "changed\n");
  await commit(deps({ store: counted.store }), { path: a, message: "one more" });
  expect(counted.packGets()).toBe(0);
  const b = world.checkout("b");
  await pull(world.deps({ memory: new ProcessMemory(SYSTEM_RANDOM) }), { path: b });
  expect(textsOf(b)).toEqual({ ...files, "d0/f0.md": "changed\n" });
});

test("two first commits of the same files split into packs of different bytes: a nonce in each", async () => {
  const files = manyFiles(20, 2);
  const keys: string[][] = [];
  for (const name of ["a", "b"]) {
    const w = makeWorld();
    try {
      const dir = w.checkout(name);
      await pull(w.deps({ packBytes: SMALL }), { path: dir });
      for (const [path, text] of Object.entries(files)) write(dir, path, text);
      await commit(w.deps({ packBytes: SMALL }), { path: dir, message: "same" });
      keys.push((await readCurrent(w.store)).manifest.packs.slice(0, -1).map((p) => p.key));
    } finally {
      await w.close();
    }
  }
  expect(keys[0]!.length).toBeGreaterThan(1);
  expect(keys[0]!.filter((k) => keys[1]!.includes(k))).toEqual([]);
});

/** The world's store without its writer queue: writers race, as on S3. */
function racing(w: World): ObjectStore {
  const { queue: _queue, ...store } = w.store;
  return store as ObjectStore;
}

test("a split commit that lost a race is offered in one pack, and the writer that carries it publishes every file", async () => {
  world = makeWorld();
  const procDeps = (o: Partial<EngineDeps> = {}) => world.deps({ store: racing(world), memory: new ProcessMemory(SYSTEM_RANDOM), random: () => 0.5, meetAtOnce: false, packBytes: SMALL, ...o });
  const [a, b, c] = ["a", "b", "c"].map((n) => world.checkout(n)) as [string, string, string];
  const first = world.checkout("first");
  await pull(procDeps(), { path: first });
  write(first, "shared.md", "one\n");
  await commit(procDeps(), { path: first, message: "first" });
  for (const d of [a, b, c]) await pull(procDeps(), { path: d });

  const files = manyFiles(30, 3);
  for (const [path, text] of Object.entries(files)) write(a, path, text);
  write(b, "b.md", "from b\n");
  write(c, "c.md", "from c\n");
  let published = false;
  let proposed: Array<{ pack: { size: number } }> = [];
  let waited = false;
  const aOut = await commit(
    procDeps({
      onStage: async (stage) => {
        if (stage === "publish" && !published) {
          published = true;
          await commit(procDeps(), { path: b, message: "b" });
        }
      },
      sleep: async () => {
        if (waited) return;
        waited = true;
        const listed = await racing(world).list(PROPOSALS_PREFIX);
        proposed = await Promise.all(listed.map(async (o) => JSON.parse(Buffer.from((await world.store.get(o.key))!.body).toString("utf8"))));
        await commit(procDeps(), { path: c, message: "c" });
      },
    }),
    { path: a, message: "a" },
  );
  // The proposal was posted, in one pack holding all of A's files (its lost write had several), and C carried it: A's files landed at generation 3.
  expect(proposed.length).toBe(1);
  expect(proposed[0]!.pack.size).toBeGreaterThan(3 * SMALL);
  expect(aOut.generation).toBe(3);
  const fresh = world.checkout("fresh");
  await pull(world.deps({ memory: new ProcessMemory(SYSTEM_RANDOM) }), { path: fresh });
  expect(textsOf(fresh)).toEqual({ "shared.md": "one\n", "b.md": "from b\n", "c.md": "from c\n", ...files });
  await withPacksInGit(world.store, () => {});
});
