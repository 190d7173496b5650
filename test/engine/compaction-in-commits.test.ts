/**
 * Compaction as commits do it, and readers that meet a pack gc removed:
 * the manifest's pack count stays bounded however long the history, and a
 * reader holding a manifest from before a compaction re-reads `current`
 * instead of reporting the store as damaged.
 */
import { afterEach, expect, test } from "bun:test";
import { commit } from "../../src/engine/commit.ts";
import { collectGarbage } from "../../src/engine/gc.ts";
import { MANIFEST_KEY, parseManifest } from "../../src/engine/publish/manifest.ts";
import { pull } from "../../src/engine/pull.ts";
import type { ObjectStore } from "../../src/store/object-store.ts";
import { makeWorld, read, refusal, seedNotebook, type World, write } from "../support/fixture.ts";
import { SYSTEM_CLOCK, SYSTEM_RANDOM } from "../../src/surfaces/engine-deps.ts";

let world: World;
afterEach(async () => {
  await world?.close();
});

const packCount = async (store: ObjectStore) => parseManifest((await store.get(MANIFEST_KEY))!.body).packs.length;

test("40 commits with the default policy: at most 32 packs listed, and a cold pull has every file", async () => {
  world = makeWorld();
  const a = world.checkout("a");
  await pull(world.deps(), { path: a });
  const counts: number[] = [];
  for (let i = 0; i < 40; i++) {
    write(a, `notes/${i}.md`, `note ${i}\n`);
    await commit(world.deps(), { path: a, message: `note ${i}` });
    counts.push(await packCount(world.store));
  }
  expect(Math.max(...counts)).toBeLessThanOrEqual(32);
  expect(counts.at(-1)!).toBeLessThan(40);
  const cold = world.checkout("cold");
  const r = await pull(world.deps(), { path: cold });
  expect(r.generation).toBe(40);
  for (let i = 0; i < 40; i++) expect(read(cold, `notes/${i}.md`)).toBe(`note ${i}\n`);
});

test("a reader holding a manifest whose packs gc removed re-reads current and succeeds", async () => {
  world = makeWorld();
  const a = world.checkout("a");
  await seedNotebook(world.deps(), a, { "x.md": "x\n" });
  const stale = (await world.store.get(MANIFEST_KEY))!;
  // A compaction (small policy) replaces the early packs; gc with no grace removes them.
  for (let i = 0; i < 6; i++) {
    write(a, "x.md", `x ${i}\n`);
    await commit(world.deps({ compaction: { maxPacks: 3, keepRecent: 1 } }), { path: a, message: `c${i}` });
  }
  const report = await collectGarbage({ ...SYSTEM_CLOCK, ...SYSTEM_RANDOM, store: world.store }, { graceMs: 0 });
  expect(report.deleted.length).toBeGreaterThan(0);
  // The reader's first read of `current` returns the stale manifest, as a slow replica might.
  let first = true;
  const staleOnce: ObjectStore = {
    ...world.store,
    kind: "stale-once",
    get: async (key) => {
      if (key === MANIFEST_KEY && first) {
        first = false;
        return stale;
      }
      return world.store.get(key);
    },
  };
  const b = world.checkout("b");
  const r = await pull(world.deps({ store: staleOnce }), { path: b });
  expect(r.generation).toBe(7);
  expect(read(b, "x.md")).toBe("x 5\n");
  // A pack missing under the current manifest is still PACK_INVALID.
  const current = parseManifest((await world.store.get(MANIFEST_KEY))!.body);
  await world.store.delete(current.packs[0]!.key);
  const e = await refusal(() => pull(world.deps(), { path: world.checkout("c") }));
  expect([e.code, e.reason]).toEqual(["STORAGE_INTEGRITY", "PACK_INVALID"]);
});
