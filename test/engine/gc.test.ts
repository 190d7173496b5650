/**
 * Garbage collection of orphaned packs on the real embedded store (and on
 * S3 when the suite has one): only unlisted packs past the grace period go,
 * nothing is touched without a valid manifest, and a writer stalled between
 * its upload and its conditional write — whose pack gc keeps (built on the
 * accepted head, it may be a generation the store lost), and deletes only
 * when told to — wakes, loses to gc's fence and publishes a pack that
 * exists. The same race without the fence corrupts the notebook, which is
 * why the fence is there.
 */
import { afterEach, describe, expect, test } from "bun:test";
import { createHash } from "node:crypto";
import { commit } from "../../src/engine/commit.ts";
import { compactPacks } from "../../src/engine/publish/compact.ts";
import { collectGarbage } from "../../src/engine/gc.ts";
import { ObjectCache } from "../../src/engine/git/object-cache.ts";
import { loadAcceptedState } from "../../src/engine/publish/accepted-state.ts";
import { MANIFEST_KEY, type Manifest, newPublicationId, packKey, parseManifest, serializeManifest } from "../../src/engine/publish/manifest.ts";
import { pull } from "../../src/engine/pull.ts";
import { type ListedObject, type ObjectStore, StoreError } from "../../src/store/object-store.ts";
import { makeWorld, read, readCurrent, refusal, seedNotebook, type World, write } from "../support/fixture.ts";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { openSqliteStore } from "../../src/store/sqlite.ts";
import { faultyStore } from "../support/faulty-store.ts";
import { emptyStore, testBucket, testS3Store } from "../support/s3-test-store.ts";
import { SYSTEM_CLOCK, SYSTEM_RANDOM } from "../../src/surfaces/engine-deps.ts";

const HOUR = 60 * 60 * 1000;
const later = () => new Date(Date.now() + 2 * HOUR);

let world: World;
afterEach(async () => {
  await world?.close();
});

const current = readCurrent;

/** A pack-shaped orphan: a key under packs/ named by its digest, as a lost upload leaves. */
async function orphan(store: ObjectStore, text: string): Promise<string> {
  const body = new TextEncoder().encode(text);
  const key = packKey(createHash("sha256").update(body).digest("hex"));
  expect((await store.putIfAbsent(key, body)).ok).toBe(true);
  return key;
}

/** The store with listed modification times overridden per key (ages without waiting). */
function aged(inner: ObjectStore, modified: Map<string, Date>): ObjectStore {
  return {
    ...inner,
    kind: inner.kind,
    get: (k) => inner.get(k),
    putIfAbsent: (k, b) => inner.putIfAbsent(k, b),
    putIfMatch: (k, b, e) => inner.putIfMatch(k, b, e),
    delete: (k) => inner.delete(k),
    close: () => inner.close(),
    list: async (prefix) =>
      (await inner.list(prefix)).map((o): ListedObject => ({ ...o, modified: modified.get(o.key) ?? o.modified })),
  };
}

async function seeded(store?: ObjectStore, storeId?: string): Promise<string> {
  world = makeWorld(store, storeId);
  const a = world.checkout("a");
  await seedNotebook(world.deps(), a, { "note.md": "seed\n" });
  return a;
}

async function keys(store: ObjectStore, prefix = ""): Promise<string[]> {
  return (await store.list(prefix)).map((o) => o.key);
}

describe("gc", () => {
  test("deletes only packs no manifest names that are older than the grace period; nothing else is touched", async () => {
    await seeded();
    const listed = (await current(world.store)).manifest.packs.map((p) => p.key);
    const old = await orphan(world.store, "old orphan");
    const young = await orphan(world.store, "young orphan");
    await world.store.putIfAbsent("probe/leftover", new TextEncoder().encode("x"));
    await world.store.putIfAbsent("packs/not-a-pack.txt", new TextEncoder().encode("x"));
    const now = new Date();
    const store = aged(world.store, new Map([[old, new Date(now.getTime() - 2 * HOUR)], [listed[0]!, new Date(0)]]));
    const before = await current(world.store);
    const report = await collectGarbage({ ...SYSTEM_CLOCK, ...SYSTEM_RANDOM, store, now: () => now }, {});
    expect(report.deleted).toEqual([old]);
    expect(report.young).toEqual([young]);
    expect(report.referenced).toBe(1);
    expect(await keys(world.store)).toEqual(["current", ...listed, "packs/not-a-pack.txt", young, "probe/leftover"].sort());
    // The fence rewrote `current` with the same content.
    const after = await current(world.store);
    expect(after.etag).not.toBe(before.etag);
    expect({ ...after.manifest, publication: "" }).toEqual({ ...before.manifest, publication: "" });
  });

  test("nothing to delete: `current` is not rewritten", async () => {
    await seeded();
    const before = await current(world.store);
    const report = await collectGarbage({ ...SYSTEM_CLOCK, ...SYSTEM_RANDOM, store: world.store, now: later }, {});
    expect(report).toMatchObject({ deleted: [], reason: "nothing to delete" });
    expect((await current(world.store)).etag).toBe(before.etag);
  });

  test("a dry run reports and changes nothing", async () => {
    await seeded();
    const o = await orphan(world.store, "orphan");
    const before = await current(world.store);
    const report = await collectGarbage({ ...SYSTEM_CLOCK, ...SYSTEM_RANDOM, store: world.store, now: later }, { dryRun: true });
    expect(report).toMatchObject({ deleted: [o], reason: "dry run" });
    expect(await world.store.get(o)).not.toBeNull();
    expect((await current(world.store)).etag).toBe(before.etag);
  });

  test("without a manifest nothing is deleted: the first publication is create-only and cannot be fenced", async () => {
    world = makeWorld();
    const o = await orphan(world.store, "first writer's pack");
    const report = await collectGarbage({ ...SYSTEM_CLOCK, ...SYSTEM_RANDOM, store: world.store, now: later }, {});
    expect(report).toMatchObject({ generation: null, deleted: [], reason: "no notebook" });
    expect(await world.store.get(o)).not.toBeNull();
  });

  test("an invalid manifest fails closed: MANIFEST_INVALID and nothing deleted", async () => {
    world = makeWorld();
    const o = await orphan(world.store, "orphan");
    await world.store.putIfAbsent(MANIFEST_KEY, new TextEncoder().encode("{\"format\":1}"));
    const e = await refusal(() => collectGarbage({ ...SYSTEM_CLOCK, ...SYSTEM_RANDOM, store: world.store, now: later }, {}));
    expect(e.reason).toBe("MANIFEST_INVALID");
    expect(await world.store.get(o)).not.toBeNull();
  });

  test("a listing that fails is STORAGE_FAILURE · INTERNAL, retryable, and nothing is deleted", async () => {
    await seeded();
    const o = await orphan(world.store, "orphan");
    const before = await current(world.store);
    const failing: ObjectStore = {
      ...world.store,
      list: async () => {
        throw new StoreError("list", "injected failure", "failed");
      },
    };
    const e = await refusal(() => collectGarbage({ ...SYSTEM_CLOCK, ...SYSTEM_RANDOM, store: failing, now: later }, {}));
    expect([e.code, e.reason, e.action, e.retryable]).toEqual(["STORAGE_FAILURE", "INTERNAL", "RETRY", true]);
    expect(e.message).toBe("The store's packs could not be listed; nothing was deleted.");
    expect(await world.store.get(o)).not.toBeNull();
    expect((await current(world.store)).etag).toBe(before.etag);
  });

  test("a publication between gc's read and its fence wins; gc deletes nothing that round and tries again", async () => {
    const a = await seeded();
    const o = await orphan(world.store, "orphan");
    let fences = 0;
    const beforeFence = async () => {
      if (fences++ > 0) return;
      write(a, "note.md", "published during gc\n");
      await commit(world.deps(), { path: a, message: "during gc" });
    };
    const busy = await collectGarbage({ ...SYSTEM_CLOCK, ...SYSTEM_RANDOM, store: world.store, now: later, beforeFence }, { attempts: 1 });
    expect(busy).toMatchObject({ deleted: [], reason: "busy" });
    expect(await world.store.get(o)).not.toBeNull();
    const done = await collectGarbage({ ...SYSTEM_CLOCK, ...SYSTEM_RANDOM, store: world.store, now: later }, {});
    expect(done.deleted).toEqual([o]);
    const b = world.checkout("b");
    expect((await pull(world.deps(), { path: b })).generation).toBe(2);
    expect(read(b, "note.md")).toBe("published during gc\n");
  });

  test("after a compaction gc removes exactly the replaced packs, and every checkout keeps pulling", async () => {
    const a = await seeded();
    for (let i = 0; i < 12; i++) {
      write(a, "note.md", `${read(a, "note.md")}line ${i}\n`);
      await commit(world.deps(), { path: a, message: `line ${i}` });
    }
    const warm = world.checkout("warm");
    await pull(world.deps(), { path: warm });
    const { manifest, etag } = await current(world.store);
    const git = await ObjectCache.open(join(world.root, "maintenance"), world.memory.objects, SYSTEM_RANDOM.randomId);
    await loadAcceptedState(world.store, git);
    const result = await compactPacks({ now: new Date(), randomId: SYSTEM_RANDOM.randomId, store: world.store, git, head: manifest.head, packs: manifest.packs, policy: { maxPacks: 8, keepRecent: 3 } });
    const next = { ...manifest, publication: newPublicationId(SYSTEM_RANDOM.randomId), packs: result!.packs };
    expect((await world.store.putIfMatch(MANIFEST_KEY, serializeManifest(next), etag)).ok).toBe(true);
    const report = await collectGarbage({ ...SYSTEM_CLOCK, ...SYSTEM_RANDOM, store: world.store, now: later }, {});
    expect(report.deleted.sort()).toEqual(result!.replaced.map((p) => p.key).sort());
    expect(await keys(world.store, "packs/")).toEqual(next.packs.map((p) => p.key).sort());
    write(warm, "other.md", "after gc\n");
    await commit(world.deps(), { path: warm, message: "after gc" });
    const cold = world.checkout("cold");
    await pull(world.deps(), { path: cold });
    expect(read(cold, "note.md")).toBe(read(a, "note.md"));
    expect(read(cold, "other.md")).toBe("after gc\n");
  });

  test("gc publishes a compaction with its fence; a later run removes the packs it replaced", async () => {
    const a = await seeded();
    for (let i = 0; i < 12; i++) {
      write(a, "note.md", `${read(a, "note.md")}line ${i}\n`);
      await commit(world.deps(), { path: a, message: `line ${i}` });
    }
    const o = await orphan(world.store, "orphan");
    const before = (await current(world.store)).manifest;
    const compact = async (m: Manifest) => {
      const git = await ObjectCache.open(join(world.root, "maintenance-gc"), world.memory.objects, SYSTEM_RANDOM.randomId);
      await loadAcceptedState(world.store, git);
      const r = await compactPacks({ now: new Date(), randomId: SYSTEM_RANDOM.randomId, store: world.store, git, head: m.head, packs: m.packs, policy: { maxPacks: 8, keepRecent: 3 } });
      return r?.packs ?? null;
    };
    const first = await collectGarbage({ ...SYSTEM_CLOCK, ...SYSTEM_RANDOM, store: world.store, now: later, compact }, {});
    expect(first.compacted).toEqual({ from: 13, to: 4 });
    expect(first.deleted).toEqual([o]); // the packs it replaced were listed when gc read `current`
    const after = (await current(world.store)).manifest;
    expect(after.packs.slice(1)).toEqual(before.packs.slice(-3));
    expect({ ...after, publication: "", packs: [] }).toEqual({ ...before, publication: "", packs: [] });
    const second = await collectGarbage({ ...SYSTEM_CLOCK, ...SYSTEM_RANDOM, store: world.store, now: later }, {});
    expect(second.deleted.sort()).toEqual(before.packs.slice(0, 10).map((p) => p.key).sort());
    const cold = world.checkout("cold");
    await pull(world.deps(), { path: cold });
    expect(read(cold, "note.md")).toBe(read(a, "note.md"));
  });
});

/**
 * The stalled writer: it uploads its pack and stops before its conditional
 * write; `interfere` runs while it is stopped, with the orphaned pack's key.
 */
async function stalledWriter(interfere: (orphanKey: string) => Promise<void>): Promise<{ a: string; generation: number }> {
  const a = world.checkout("a");
  await seedNotebook(world.deps(), a, { "note.md": "seed\n" });
  write(a, "note.md", "the stalled writer's edit\n");
  let reached!: () => void;
  const atPublish = new Promise<void>((r) => (reached = r));
  let release!: () => void;
  const wake = new Promise<void>((r) => (release = r));
  let publishes = 0;
  const onStage = async (stage: string) => {
    if (stage === "publish" && publishes++ === 0) {
      reached();
      await wake;
    }
  };
  const pending = commit(world.deps({ onStage }), { path: a, message: "stalled" });
  await atPublish;
  const listed = (await current(world.store)).manifest.packs.map((p) => p.key);
  const orphans = (await keys(world.store, "packs/")).filter((k) => !listed.includes(k));
  expect(orphans).toHaveLength(1);
  await interfere(orphans[0]!);
  release();
  const out = await pending;
  return { a, generation: out.generation };
}

function stalledWriterTests(name: string, open: () => { store?: ObjectStore; storeId?: string; cleanup?: () => Promise<void> }) {
  describe(`a writer stalled past the grace period (${name})`, () => {
    test("gc keeps its pack (built on the accepted head, as a generation the store lost would be); told to delete it, it fences first: the writer wakes, loses, re-uploads, and its commit lands intact", async () => {
      const o = open();
      world = makeWorld(o.store, o.storeId);
      try {
        const { generation } = await stalledWriter(async (orphanKey) => {
          const kept = await collectGarbage({ ...SYSTEM_CLOCK, ...SYSTEM_RANDOM, store: world.store, now: later }, {});
          expect(kept.onHead).toEqual([orphanKey]);
          expect(kept.deleted).toEqual([]);
          expect(await world.store.get(orphanKey)).not.toBeNull();
          const report = await collectGarbage({ ...SYSTEM_CLOCK, ...SYSTEM_RANDOM, store: world.store, now: later }, { deleteLost: true });
          expect(report.deleted).toEqual([orphanKey]);
          expect(await world.store.get(orphanKey)).toBeNull();
        });
        expect(generation).toBe(2);
        for (const p of (await current(world.store)).manifest.packs) expect(await world.store.get(p.key)).not.toBeNull();
        const b = world.checkout("b");
        await pull(world.deps(), { path: b });
        expect(read(b, "note.md")).toBe("the stalled writer's edit\n");
      } finally {
        await o.cleanup?.();
      }
    });

    test("the same race without the fence publishes a missing pack: PACK_INVALID for every reader", async () => {
      const o = open();
      world = makeWorld(o.store, o.storeId);
      try {
        await stalledWriter(async (orphanKey) => {
          await world.store.delete(orphanKey); // what a naive gc does
        });
        const e = await refusal(() => pull(world.deps(), { path: world.checkout("b") }));
        expect(e.reason).toBe("PACK_INVALID");
      } finally {
        await o.cleanup?.();
      }
    });
  });
}

// The embedded store writes a commit's pack and `current` in one transaction
// (no orphan, no window for gc); these run the protocol every other store
// follows, through a wrapper that offers only the basic operations.
stalledWriterTests("sqlite", () => {
  const file = join(mkdtempSync(join(tmpdir(), "slivingdoc-gc-plain-")), "store.db");
  return { store: faultyStore(openSqliteStore(file, SYSTEM_CLOCK), () => null), cleanup: async () => rmSync(dirname(file), { recursive: true, force: true }) };
});

// On S3 too when the suite has a server (npm test starts Ceph RGW); each run
// uses its own prefix and removes it.
if (!testBucket) {
  // A skipped S3 test is not a passing one.
  test("gc on S3: the S3 test server is configured", () => {
    throw new Error("SLIVINGDOC_TEST_S3_BUCKET is not set: run `npm test` (it starts Ceph RGW) or see docs/s3.md");
  });
} else {
  stalledWriterTests("s3", () => {
    const prefix = `slivingdoc-test/gc-${crypto.randomUUID().slice(0, 8)}`;
    return {
      store: testS3Store(prefix),
      storeId: `s3://${testBucket}/${prefix}`,
      cleanup: async () => {
        const cleaner = testS3Store(prefix);
        await emptyStore(cleaner);
        await cleaner.close();
      },
    };
  });
}
