/**
 * Compacting ahead (engine/compact-ahead.ts): a server's commit that brings
 * the pack list to the threshold makes a compaction due, which the server
 * builds between calls and publishes by rewriting `current` — the same
 * generation and head — so that no commit compacts in its turn. Nothing
 * reachable is lost when another writer publishes meanwhile (the rewrite
 * keeps its pack), when another writer compacted first (nothing is
 * published), or when the packs waited too long. On the embedded store and
 * on S3 (Ceph RGW), and on the embedded store without its line of writers
 * (as S3 has none).
 */
import { afterEach, describe, expect, test } from "bun:test";
import fc from "fast-check";
import { join } from "node:path";
import { acquireLock } from "../../src/engine/checkout/lock.ts";
import { pulledObjectCache } from "../../src/engine/checkout/registry.ts";
import { compactAhead, type CompactAheadDeps, compactionDue } from "../../src/engine/compact-ahead.ts";
import { commit } from "../../src/engine/commit.ts";
import type { EngineDeps } from "../../src/engine/engine.ts";
import { ProcessMemory } from "../../src/engine/process-memory.ts";
import { AHEAD_MAX_AGE_MS, aheadAt } from "../../src/engine/publish/compact-ahead.ts";
import { MANIFEST_KEY, type Manifest, parseManifest } from "../../src/engine/publish/manifest.ts";
import { pull } from "../../src/engine/pull.ts";
import type { ObjectStore } from "../../src/store/object-store.ts";
import { SYSTEM_RANDOM } from "../../src/surfaces/engine-deps.ts";
import { makeWorld, read, type World, write } from "../support/fixture.ts";
import { storePlaces } from "../support/places.ts";

let world: World | undefined;
const { places: PLACES, emptyS3 } = storePlaces("compact-ahead");
afterEach(async () => {
  await emptyS3();
  await world?.close();
  world = undefined;
});

/** A small policy, so that a few commits reach it: compacted ahead from 5 packs, in a commit's turn past 6, 2 kept. */
const POLICY = { maxPacks: 6, keepRecent: 2 };

const manifestOf = async (store: ObjectStore): Promise<Manifest> => parseManifest((await store.get(MANIFEST_KEY))!.body);

/** A server's deps on `store` (its memory compacts ahead), recording the stages its commits run. */
function serverDeps(w: World, store: ObjectStore = w.store) {
  const memory = new ProcessMemory(SYSTEM_RANDOM, { compactAhead: true });
  const stages: string[] = [];
  const deps = w.deps({ store, memory, compaction: POLICY, onStage: (s) => void stages.push(s) }) as EngineDeps & CompactAheadDeps;
  return { deps, memory, stages };
}

/** One commit of `path` writing `file`, then what the server does once the call answered. */
async function commitThenIdle(deps: EngineDeps & CompactAheadDeps, store: ObjectStore, dir: string, file: string) {
  write(dir, file, `${file}\n`);
  await commit(deps, { path: dir, message: file });
  return compactionDue(deps.memory, deps.storeId) ? await compactAhead(deps, store, dir) : null;
}

/** A cold pull in a checkout of its own has every file named. */
async function coldPullHas(w: World, files: string[], generation: number): Promise<void> {
  const cold = w.checkout(`cold-${crypto.randomUUID().slice(0, 6)}`);
  const r = await pull(w.deps({ memory: new ProcessMemory(SYSTEM_RANDOM) }), { path: cold });
  expect(r.generation).toBe(generation);
  for (const f of files) expect(read(cold, f)).toBe(`${f}\n`);
}

for (const [where, place] of PLACES) {
  describe(where, () => {
    test("commits through a server never compact in their turn: the list is compacted between calls, generation and head unchanged", async () => {
      world = place();
      const { deps, stages } = serverDeps(world);
      const a = world.checkout("a");
      await pull(deps, { path: a });
      const files: string[] = [];
      const counts: number[] = [];
      let compacted = 0;
      for (let i = 0; i < 20; i++) {
        files.push(`notes/${i}.md`);
        const how = await commitThenIdle(deps, world.store, a, files.at(-1)!);
        const after = await manifestOf(world.store);
        counts.push(after.packs.length);
        if (how === "compacted") {
          compacted++;
          // The rewrite changes nothing a reader sees.
          expect(after.generation).toBe(i + 1);
        }
      }
      expect(compacted).toBeGreaterThanOrEqual(3);
      expect(stages).not.toContain("compact");
      expect(Math.max(...counts)).toBeLessThan(aheadAt(POLICY));
      await coldPullHas(world, files, 20);
    });

    test("the same commits in a process that answers one call compact in their turn, as before", async () => {
      world = place();
      const stages: string[] = [];
      const deps = world.deps({ memory: new ProcessMemory(SYSTEM_RANDOM), compaction: POLICY, onStage: (s) => void stages.push(s) });
      const a = world.checkout("a");
      await pull(deps, { path: a });
      for (let i = 0; i < 8; i++) {
        write(a, `n${i}.md`, `n${i}\n`);
        await commit(deps, { path: a, message: `n${i}` });
      }
      expect(compactionDue(deps.memory, deps.storeId)).toBe(false);
      expect(stages).toContain("compact");
    });
  });
}

/** `store`, running `meanwhile` once its first pack is uploaded: a compaction's base, between its build and its write. */
function afterFirstPack(store: ObjectStore, meanwhile: () => Promise<void>): { wrapped: ObjectStore; ran: () => boolean } {
  let ran = false;
  const wrapped: ObjectStore = {
    ...store,
    putIfAbsent: async (key, body) => {
      const put = await store.putIfAbsent(key, body);
      if (!ran && key.startsWith("packs/")) {
        ran = true;
        await meanwhile();
      }
      return put;
    },
  };
  return { wrapped, ran: () => ran };
}

/** The embedded store as S3 is: no line of writers, no write of packs with `current`. */
const racing = (store: ObjectStore): ObjectStore => ({ ...store, kind: "racing", queue: undefined, putWith: undefined });

const STORES: Array<[string, (w: World) => ObjectStore]> = [
  ["in the embedded store's line", (w) => w.store],
  ["racing, as on S3", (w) => racing(w.store)],
];

for (const [how, storeOf] of STORES) {
  describe(`between the build and the write, ${how}`, () => {
    /** A server whose commit made a compaction due, and its store wrapped so that `meanwhile` runs once the base is uploaded. */
    async function dueWith(meanwhile: () => Promise<void>) {
      world = makeWorld();
      const store = storeOf(world);
      const { deps } = serverDeps(world, store);
      const a = world.checkout("a");
      await pull(deps, { path: a });
      const files: string[] = [];
      while (!compactionDue(deps.memory, deps.storeId)) {
        files.push(`a/${files.length}.md`);
        write(a, files.at(-1)!, `${files.at(-1)}\n`);
        await commit(deps, { path: a, message: files.at(-1)! });
      }
      const { wrapped, ran } = afterFirstPack(store, meanwhile);
      return { deps, wrapped, a, files, ran };
    }

    test("another writer's commit lands meanwhile: the rewrite builds on it and keeps its pack", async () => {
      const other = { files: [] as string[], manifest: null as Manifest | null };
      const { deps, wrapped, a, files, ran } = await dueWith(async () => {
        const b = world!.checkout("b");
        const d = world!.deps({ memory: new ProcessMemory(SYSTEM_RANDOM), compaction: POLICY });
        await pull(d, { path: b });
        other.files.push("b/1.md");
        write(b, "b/1.md", "b/1.md\n");
        await commit(d, { path: b, message: "b" });
        other.manifest = await manifestOf(world!.store);
      });
      const generation = (await manifestOf(world!.store)).generation;
      expect(await compactAhead(deps, wrapped, a)).toBe("compacted");
      expect(ran()).toBe(true);
      const m = await manifestOf(world!.store);
      expect([m.generation, m.head]).toEqual([generation + 1, other.manifest!.head]);
      // The base, the packs kept, and the other writer's, last: its outcome proof still holds.
      expect(m.packs.length).toBe(1 + POLICY.keepRecent + 1);
      expect(m.packs.at(-1)!.key).toBe(other.manifest!.packs.at(-1)!.key);
      await coldPullHas(world!, [...files, ...other.files], generation + 1);
    });

    test("another writer compacted first: nothing is published over it, and nothing is lost", async () => {
      let theirs: Manifest | null = null;
      const { deps, wrapped, a, files } = await dueWith(async () => {
        const b = world!.checkout("b");
        // A commit of a process with a tighter policy compacts in its turn.
        const d = world!.deps({ memory: new ProcessMemory(SYSTEM_RANDOM), compaction: { maxPacks: 2, keepRecent: 1 } });
        await pull(d, { path: b });
        write(b, "b/1.md", "b/1.md\n");
        await commit(d, { path: b, message: "b" });
        theirs = await manifestOf(world!.store);
      });
      expect(await compactAhead(deps, wrapped, a)).toBe("moved on");
      expect((await manifestOf(world!.store)).publication).toBe(theirs!.publication);
      await coldPullHas(world!, [...files, "b/1.md"], theirs!.generation);
    });

    test("packs that waited past the bound are not published: gc may be about to take them", async () => {
      let late = false;
      const { deps, wrapped, a } = await dueWith(async () => {
        late = true;
      });
      const before = await manifestOf(world!.store);
      const clock = deps.monotonic;
      const lateDeps = { ...deps, monotonic: () => clock() + (late ? AHEAD_MAX_AGE_MS + 1 : 0) };
      expect(await compactAhead(lateDeps, wrapped, a)).toBe("moved on");
      expect((await manifestOf(world!.store)).publication).toBe(before.publication);
    });
  });
}

test("a compaction due while a call holds the checkout gives way, and stays due for the next call's end", async () => {
  world = makeWorld();
  const { deps } = serverDeps(world);
  const a = world.checkout("a");
  await pull(deps, { path: a });
  for (let i = 0; !compactionDue(deps.memory, deps.storeId); i++) {
    write(a, `x${i}.md`, `x${i}\n`);
    await commit(deps, { path: a, message: `x${i}` });
  }
  // A call on the checkout, as far as the lock says.
  const held = await acquireLock(join(pulledObjectCache(deps.privateRoot, deps.storeId, a)!, "..", "lock"), deps.self, 1000, deps);
  const before = await manifestOf(world.store);
  try {
    expect(await compactAhead(deps, world.store, a)).toBe("busy");
    expect((await manifestOf(world.store)).publication).toBe(before.publication);
    expect(compactionDue(deps.memory, deps.storeId)).toBe(true);
  } finally {
    held.release();
  }
  expect(await compactAhead(deps, world.store, a)).toBe("compacted");
  expect(compactionDue(deps.memory, deps.storeId)).toBe(false);
  expect((await manifestOf(world.store)).packs.length).toBeLessThan(before.packs.length);
});

/**
 * The invariant, checked over random histories: whatever lands between a
 * compaction's build and its write — commits of another writer, which may
 * themselves compact in their turn — every accepted state stays whole. A
 * writer `a` with a server's memory, a writer `b` answering one call at a
 * time with a tighter policy; after the run, a cold pull has every file at
 * its last content, and `current` names only packs the store holds.
 */
test("nothing reachable is lost, whatever lands between a compaction's build and its write", async () => {
  type Step = { writer: "a" | "b"; file: number } | { compact: Array<number> };
  const step = fc.oneof(
    fc.record({ writer: fc.constantFrom("a" as const, "b" as const), file: fc.integer({ min: 0, max: 5 }) }),
    fc.record({ compact: fc.array(fc.integer({ min: 0, max: 5 }), { maxLength: 3 }) }),
  );
  await fc.assert(
    fc.asyncProperty(fc.array(step, { minLength: 4, maxLength: 16 }), fc.boolean(), async (steps: Step[], inLine) => {
      const w = makeWorld();
      try {
        const store = inLine ? w.store : racing(w.store);
        const { deps } = serverDeps(w, store);
        const bDeps = w.deps({ store, memory: new ProcessMemory(SYSTEM_RANDOM), compaction: { maxPacks: 3, keepRecent: 1 } });
        const a = w.checkout("a");
        const b = w.checkout("b");
        await pull(deps, { path: a });
        await pull(bDeps, { path: b });
        const expected = new Map<string, string>();
        let version = 0;
        const commitOf = async (writer: "a" | "b", file: number) => {
          const dir = writer === "a" ? a : b;
          const d = writer === "a" ? deps : bDeps;
          // Each commit writes its own file name in its own directory: no conflicts, every change lands.
          const path = `${writer}/${file}.md`;
          const text = `${writer} ${file} v${++version}\n`;
          write(dir, path, text);
          await commit(d, { path: dir, message: path });
          expected.set(path, text);
        };
        for (const s of steps) {
          if ("writer" in s) {
            await commitOf(s.writer, s.file);
            continue;
          }
          // Due or not, as after a call: what lands while the base is uploaded is `b`'s commits.
          await commitOf("a", s.compact.length);
          if (!compactionDue(deps.memory, deps.storeId)) deps.memory.compactionsDue!.add(deps.storeId);
          const { wrapped } = afterFirstPack(store, async () => {
            for (const f of s.compact) await commitOf("b", f);
          });
          await compactAhead(deps, wrapped, a);
        }
        const m = await manifestOf(w.store);
        for (const p of [...m.packs, ...(m.history ?? [])]) expect(await w.store.get(p.key)).not.toBeNull();
        const cold = w.checkout("cold");
        const r = await pull(w.deps({ memory: new ProcessMemory(SYSTEM_RANDOM) }), { path: cold });
        expect(r.generation).toBe(m.generation);
        for (const [path, text] of expected) expect(read(cold, path)).toBe(text);
      } finally {
        await w.close();
      }
    }),
    { numRuns: 25 },
  );
}, 120_000);
