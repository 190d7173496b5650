/**
 * A store that goes backwards never destroys a checkout's notebook
 * (docs/storage-protocol.md, "A store that went backwards"): the embedded
 * store deleted, truncated to zero or put back from an older copy; an S3
 * prefix emptied; an older `current` put back with the later packs still
 * there, then published on by others; another notebook begun at the same
 * place; a wrong --store. On the embedded store and on S3 (Ceph RGW under
 * `npm test`): every refusal is STORAGE_INTEGRITY · HISTORY_INVALID ·
 * OPERATOR, says what was expected and what was found, and leaves every
 * visible file byte for byte as it was; gc deletes none of the lost packs;
 * `attach` keeps every file and the next commit publishes it.
 */
import { afterAll, afterEach, describe, expect, test } from "bun:test";
import { copyFileSync, existsSync, mkdtempSync, readFileSync, realpathSync, rmSync, truncateSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { readManifest } from "../../src/engine/publish/accepted-state.ts";
import { checkoutStateDir } from "../../src/engine/checkout/registry.ts";
import { commit } from "../../src/engine/commit.ts";
import { collectGarbage } from "../../src/engine/gc.ts";
import { readLocalChanges } from "../../src/engine/local-changes.ts";
import { MANIFEST_KEY, type Manifest, parseManifest, serializeManifest } from "../../src/engine/publish/manifest.ts";
import { attach, pull } from "../../src/engine/pull.ts";
import { restore } from "../../src/engine/restore.ts";
import type { ObjectStore } from "../../src/store/object-store.ts";
import { openSqliteStore } from "../../src/store/sqlite.ts";
import { faultyStore } from "../support/faulty-store.ts";
import { filesOf, makeWorld, read, refusal, type World, write } from "../support/fixture.ts";
import { emptyStore, testBucket, testEndpoint, testS3Store } from "../support/s3-test-store.ts";
import { SYSTEM_CLOCK, SYSTEM_RANDOM } from "../../src/surfaces/engine-deps.ts";

const HOUR = 60 * 60 * 1000;
const later = () => new Date(Date.now() + 2 * HOUR);

/** The closing numbers: how often a store went backwards under a checkout, and how often that was refused. */
const counts = { swapped: 0, refused: 0 };
afterAll(() => {
  console.log(`went-backwards (engine): ${counts.swapped} stores swapped, rewound or emptied under a checkout; ${counts.refused} refusals, every visible file byte for byte as it was`);
});

/** A store location whose content the test can take back: the embedded store's file, or an S3 prefix. */
interface Place {
  kind: "sqlite" | "s3";
  /** The store as it is now (the embedded store is opened again once its file is replaced). */
  readonly store: ObjectStore;
  storeId: string;
  /** Delete the embedded store's file; on S3, empty the prefix. */
  wipe(): Promise<void>;
  close(): Promise<void>;
}

/** Delete `current` only: the packs stay (a lifecycle rule, a mistaken delete). */
async function deleteCurrent(place: Place): Promise<void> {
  await place.store.delete(MANIFEST_KEY);
  counts.swapped++;
}

/** Put `body` back as `current` over whatever is there: the later packs stay. */
async function putBackCurrent(place: Place, body: Uint8Array): Promise<void> {
  await place.store.delete(MANIFEST_KEY);
  expect((await place.store.putIfAbsent(MANIFEST_KEY, body)).ok).toBe(true);
  counts.swapped++;
}

function sqlitePlace(): Place & { file: string; truncate(): Promise<void>; copy(): Promise<string>; putBackCopy(copy: string): Promise<void> } {
  const dir = mkdtempSync(join(tmpdir(), "slivingdoc-backwards-"));
  const file = join(dir, "store.db");
  let store = openSqliteStore(file, SYSTEM_CLOCK);
  const files = [file, `${file}-wal`, `${file}-shm`];
  const reopen = async (change: () => void) => {
    await store.close(); // a closed store is checkpointed: its whole content is in store.db
    change();
    store = openSqliteStore(file, SYSTEM_CLOCK);
    counts.swapped++;
  };
  return {
    kind: "sqlite",
    file,
    get store() {
      return store;
    },
    storeId: `sqlite:${file}`,
    wipe: () => reopen(() => files.forEach((f) => rmSync(f, { force: true }))),
    truncate: () => reopen(() => truncateSync(file, 0)),
    async copy() {
      await store.close();
      const copy = mkdtempSync(join(tmpdir(), "slivingdoc-backwards-copy-"));
      copyFileSync(file, join(copy, "store.db"));
      store = openSqliteStore(file, SYSTEM_CLOCK);
      return copy;
    },
    putBackCopy: (copy) => reopen(() => copyFileSync(join(copy, "store.db"), file)),
    async close() {
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}


function s3Place(): Place {
  const prefix = `slivingdoc-test/backwards-${crypto.randomUUID().slice(0, 8)}`;
  const store = testS3Store(prefix);
  const empty = () => emptyStore(store);
  return {
    kind: "s3",
    store,
    storeId: `s3://${testBucket}/${prefix}/@${testEndpoint ?? "aws"}`,
    async wipe() {
      await empty();
      counts.swapped++;
    },
    async close() {
      await empty();
      await store.close();
    },
  };
}

const PLACES: Array<[string, () => Place]> = [["the embedded store", sqlitePlace]];
if (testBucket) PLACES.push(["S3", s3Place]);
else {
  // A skipped S3 test is not a passing one.
  test("a store that went backwards on S3: the S3 test server is configured", () => {
    throw new Error("SLIVINGDOC_TEST_S3_BUCKET is not set: run `npm test` (it starts Ceph RGW) or see docs/s3.md");
  });
}

let world: World;
let place: Place;
let others: Place[] = [];
afterEach(async () => {
  for (const p of others) await p.close();
  others = [];
  await place?.close();
  await world?.close();
});

/** A world on `p`: every call reads the place's store as it is now. */
function open(p: Place): { deps: (o?: Parameters<World["deps"]>[0]) => ReturnType<World["deps"]> } {
  place = p;
  world = makeWorld(p.store, p.storeId);
  return { deps: (o = {}) => world.deps({ store: place.store, ...o }) };
}

function stateFile(storeId: string, dir: string): string {
  return join(checkoutStateDir(world.privateRoot, storeId, realpathSync(dir)), "state.json");
}

/** The refusal of a store that went backwards, with its words; every visible file of `dir` as it was. */
async function refusedBackwards(dir: string, fn: () => Promise<unknown>, ...words: string[]) {
  const before = filesOf(dir);
  const e = await refusal(fn);
  expect([e.code, e.reason, e.action]).toEqual(["STORAGE_INTEGRITY", "HISTORY_INVALID", "OPERATOR"]);
  for (const w of words) expect(e.message).toContain(w);
  expect(filesOf(dir)).toEqual(before);
  counts.refused++;
  return e;
}

async function manifestOf(store: ObjectStore): Promise<Manifest | null> {
  return (await readManifest(store)).manifest;
}

/** `a` at generation 3: plan.md, then notes/one.md, then notes/two.md, one commit each. */
async function threeGenerations(deps: ReturnType<typeof open>["deps"], a: string): Promise<Uint8Array[]> {
  const bodies: Uint8Array[] = [];
  await pull(deps(), { path: a });
  for (const [path, text] of [["plan.md", "# plan\nship friday\n"], ["notes/one.md", "one\n"], ["notes/two.md", "two\r\nno final newline"]] as const) {
    write(a, path, text);
    await commit(deps(), { path: a, message: `add ${path}` });
    bodies.push((await place.store.get(MANIFEST_KEY))!.body);
  }
  return bodies;
}

for (const [name, make] of PLACES) {
  describe(`a store that went backwards (${name})`, () => {
    test(`${make === sqlitePlace ? "the store file deleted" : "the prefix emptied"}: pull, status, restore and commit refuse, and no generation 1 is published over the checkout's generation 3; attach keeps every file and the next commit publishes it`, async () => {
      const { deps } = open(make());
      const a = world.checkout("a");
      await threeGenerations(deps, a);
      write(a, "draft.md", "an unpublished edit\n");
      const { manifest: seen } = (await readManifest(place.store)) as { manifest: Manifest };
      expect(seen.format).toBe(4);
      expect(seen.notebook).toMatch(/^[0-9a-f]{32}$/);
      const state = readFileSync(stateFile(place.storeId, a));
      expect(JSON.parse(state.toString()).baseline.notebook).toBe(seen.notebook);

      await place.wipe();
      await refusedBackwards(a, () => pull(deps(), { path: a }), `generation 3 of notebook ${seen.notebook!.slice(0, 8)}`, "the store holds no notebook", "slivingdoc attach");
      expect(readFileSync(stateFile(place.storeId, a))).toEqual(state);
      await refusedBackwards(a, () => readLocalChanges(deps(), { path: a }), "holds no notebook");
      await refusedBackwards(a, () => restore(deps(), { path: a, from: 1, paths: [], force: true }), "holds no notebook");
      // The commit builds on the state this process remembers without reading
      // `current` (the guess; turns off on the embedded store's line, hence the
      // plain wrapper): its conditional write loses, and what it reads back is refused.
      let writes = 0;
      const plain = faultyStore(place.store, (op, key) => {
        if (key === MANIFEST_KEY && (op === "putIfMatch" || op === "putIfAbsent")) writes++;
        return null;
      });
      await refusedBackwards(a, () => commit(deps({ store: plain }), { path: a, message: "over an empty store" }), "holds no notebook");
      expect(writes).toBe(1);
      await refusedBackwards(a, () => commit(deps(), { path: a, message: "over an empty store" }), "holds no notebook");
      expect(await manifestOf(place.store)).toBeNull();
      // The refused commit's publication record is not settled against this store either.
      expect(JSON.parse(readFileSync(stateFile(place.storeId, a), "utf8")).publishing).toBeDefined();
      await refusedBackwards(a, () => pull(deps(), { path: a }), "holds no notebook");

      // The operator's one way on: attach. Nothing changes on disk; the next commit publishes every file.
      const files = filesOf(a);
      const attached = await attach(deps(), { path: a });
      expect(attached.attached).toBe(true);
      expect(attached.outcome.generation).toBe(0);
      expect(filesOf(a)).toEqual(files);
      expect(JSON.parse(readFileSync(stateFile(place.storeId, a), "utf8")).publishing).toBeUndefined();
      const status = await readLocalChanges(deps(), { path: a });
      expect(status.changes.map((c) => [c.path, c.change])).toEqual([
        ["draft.md", "added"],
        ["notes/one.md", "added"],
        ["notes/two.md", "added"],
        ["plan.md", "added"],
      ]);
      const published = await commit(deps(), { path: a, message: "the notebook again" });
      expect(published.generation).toBe(1);
      const after = (await manifestOf(place.store))!;
      expect(after.notebook).not.toBe(seen.notebook); // a new notebook, minted with its generation 1
      const fresh = world.checkout("fresh");
      await pull(deps(), { path: fresh });
      expect(filesOf(fresh)).toEqual(files);
    });

    test("an older `current` put back, the later packs still there: pull and commit refuse; gc deletes none of them; then others publish on it, and the checkout still refuses; attach merges, losing nothing", async () => {
      const { deps } = open(make());
      const a = world.checkout("a");
      const b = world.checkout("b");
      const bodies = await threeGenerations(deps, a);
      await pull(deps(), { path: b }); // b saw generation 3 as well
      const packKeys = async () => (await place.store.list("packs/")).map((o) => o.key).sort();
      const allPacks = await packKeys();

      // Put back by one generation, the lost pack holds one commit on the
      // accepted head, as a commit in flight does: gc keeps it, and refuses nothing.
      await putBackCurrent(place, bodies[1]!);
      const kept = await collectGarbage({ ...SYSTEM_CLOCK, ...SYSTEM_RANDOM, store: place.store, now: later }, {});
      expect(kept.onHead.length).toBe(1);
      expect(kept.deleted).toEqual([]);
      expect(await packKeys()).toEqual(allPacks);

      await putBackCurrent(place, bodies[0]!);
      await refusedBackwards(a, () => pull(deps(), { path: a }), "this checkout was brought to generation 3", "the store shows generation 1");
      write(a, "plan.md", "# plan\nship monday\n");
      await refusedBackwards(a, () => commit(deps(), { path: a, message: "edit" }), "shows generation 1");
      // gc finds the later generations' packs, two built one on another: with
      // the checkouts under its private root, and without them.
      const packs = await packKeys();
      const local = { privateRoot: world.privateRoot, storeId: place.storeId, memory: world.memory };
      await refusedBackwards(a, () => collectGarbage({ ...SYSTEM_CLOCK, ...SYSTEM_RANDOM, store: place.store, now: later, local }, {}), "a checkout under this private root was brought to generation 3");
      await refusedBackwards(a, () => collectGarbage({ ...SYSTEM_CLOCK, ...SYSTEM_RANDOM, store: place.store, now: later }, {}), "commits built one on another onto the retained history");
      await refusedBackwards(a, () => collectGarbage({ ...SYSTEM_CLOCK, ...SYSTEM_RANDOM, store: place.store, now: later }, { dryRun: true }), "built one on another");
      expect(await packKeys()).toEqual(packs);

      // Others, who saw only generation 1, publish on it: generation 2 and 3 again, then 4.
      const c = world.checkout("c");
      await pull(deps(), { path: c });
      expect(read(c, "notes/one.md")).toBeNull();
      write(c, "plan.md", "# plan\nship tuesday\n");
      await commit(deps(), { path: c, message: "c: tuesday" });
      write(c, "c.md", "c's note\n");
      await commit(deps(), { path: c, message: "c: note" });
      await refusedBackwards(a, () => pull(deps(), { path: a }), "this checkout was brought to generation 3", "shows another generation 3");
      write(c, "c.md", "c's note, longer\n");
      await commit(deps(), { path: c, message: "c: longer" });
      await refusedBackwards(a, () => pull(deps(), { path: a }), "shows generation 4, whose history does not pass through the generation 3");
      await refusedBackwards(b, () => pull(deps(), { path: b }), "does not pass through");
      // Generations 2 and 3 the store lost are two packs built one on another onto its history.
      await refusedBackwards(a, () => collectGarbage({ ...SYSTEM_CLOCK, ...SYSTEM_RANDOM, store: place.store, now: later }, {}), "commits built one on another onto the retained history");
      for (const key of allPacks) expect(await place.store.get(key)).not.toBeNull();

      // Attach: the store's history does not pass through a's, so the merge has
      // no base: a file both hold differently comes back as a conflict block
      // holding both, every other file is kept or comes in.
      const e = await refusal(() => attach(deps(), { path: a }));
      expect(e.reason).toBe("MERGE_CONFLICT");
      expect(e.files.map((f) => f.path)).toEqual(["plan.md"]);
      expect(read(a, "plan.md")).toContain("ship monday");
      expect(read(a, "plan.md")).toContain("ship tuesday");
      expect(read(a, "notes/one.md")).toBe("one\n");
      expect(read(a, "notes/two.md")).toBe("two\r\nno final newline");
      expect(read(a, "c.md")).toBe("c's note, longer\n");
      write(a, "plan.md", "# plan\nship monday, or tuesday\n");
      await commit(deps(), { path: a, message: "a: the notebook again" });
      const fresh = world.checkout("fresh");
      await pull(deps(), { path: fresh });
      expect(filesOf(fresh)).toEqual(filesOf(a));
      // Once its checkouts were attached, the operator lets gc delete what the store lost.
      const report = await collectGarbage({ ...SYSTEM_CLOCK, ...SYSTEM_RANDOM, store: place.store, now: later }, { deleteLost: true });
      expect(report.deleted.length).toBeGreaterThan(0);
    });

    test("one generation lost under a checkout, then published on past it: gc keeps its pack for the checkout, live or set aside, and lists it apart; a gc under another private root does not know it; status refuses as pull does", async () => {
      const { deps } = open(make());
      const a = world.checkout("a");
      const bodies = await threeGenerations(deps, a);
      const referenced = new Set(parseManifest(bodies[1]!).packs.map((p) => p.key));
      const lostPacks = (await place.store.list("packs/")).map((o) => o.key).filter((key) => !referenced.has(key));
      expect(lostPacks.length).toBe(1);
      await putBackCurrent(place, bodies[1]!);
      const c = world.checkout("c");
      await pull(deps(), { path: c });
      for (const text of ["tuesday", "wednesday"]) {
        write(c, "plan.md", `# plan\nship ${text}\n`);
        await commit(deps(), { path: c, message: text });
      }
      const words = "shows generation 4, whose history does not pass through the generation 3";
      await refusedBackwards(a, () => pull(deps(), { path: a }), words);
      await refusedBackwards(a, () => readLocalChanges(deps(), { path: a }), words);

      const gc = (privateRoot: string) =>
        collectGarbage({ ...SYSTEM_CLOCK, ...SYSTEM_RANDOM, store: place.store, now: later, local: { privateRoot, storeId: place.storeId, memory: world.memory } }, {});
      const kept = await gc(world.privateRoot);
      expect([kept.checkoutBaselines, kept.onHead, kept.deleted]).toEqual([lostPacks, [], []]);
      // a's directory removed: its state is set aside (by the next call's look at the checkouts), and still counts.
      rmSync(a, { recursive: true, force: true });
      await pull(deps(), { path: c });
      expect(existsSync(join(world.privateRoot, "set-aside"))).toBe(true);
      expect((await gc(world.privateRoot)).checkoutBaselines).toEqual(lostPacks);
      expect(await place.store.get(lostPacks[0]!)).not.toBeNull();
      // Checkouts under another private root are unknown to gc: one lost generation published on is a lost race to it.
      const elsewhere = mkdtempSync(join(tmpdir(), "slivingdoc-backwards-elsewhere-"));
      try {
        const report = await gc(elsewhere);
        expect([report.checkoutBaselines, report.deleted]).toEqual([[], lostPacks]);
      } finally {
        rmSync(elsewhere, { recursive: true, force: true });
      }
    });

    test("another notebook begun at the same place (`current` deleted, a new checkout commits): refused as another notebook; gc keeps the old notebook's packs", async () => {
      const { deps } = open(make());
      const a = world.checkout("a");
      await threeGenerations(deps, a);
      const first = (await manifestOf(place.store))!.notebook!;
      const oldPacks = (await place.store.list("packs/")).map((o) => o.key);

      await deleteCurrent(place);
      const other = world.checkout("other");
      await pull(deps(), { path: other });
      write(other, "plan.md", "another team's plan\n");
      await commit(deps(), { path: other, message: "theirs" });
      write(other, "theirs.md", "theirs\n");
      await commit(deps(), { path: other, message: "theirs again" });
      const second = (await manifestOf(place.store))!.notebook!;
      expect(second).not.toBe(first);
      await refusedBackwards(a, () => pull(deps(), { path: a }), `generation 3 of notebook ${first.slice(0, 8)}`, `holds another notebook (${second.slice(0, 8)}, at generation 2)`);
      write(a, "plan.md", "# plan\nour edit\n");
      await refusedBackwards(a, () => commit(deps(), { path: a, message: "ours" }), "holds another notebook");
      await refusedBackwards(a, () => collectGarbage({ ...SYSTEM_CLOCK, ...SYSTEM_RANDOM, store: place.store, now: later }, {}), "the history of another notebook");
      for (const key of oldPacks) expect(await place.store.get(key)).not.toBeNull();
    });

    test("a wrong --store naming another notebook: the directory's first pull from it is refused", async () => {
      const { deps } = open(make());
      const a = world.checkout("a");
      await threeGenerations(deps, a);
      const seen = (await manifestOf(place.store))!.notebook!;
      const wrong = make();
      others.push(wrong);
      const elsewhere = world.checkout("elsewhere");
      await pull(world.deps({ store: wrong.store, storeId: wrong.storeId }), { path: elsewhere });
      write(elsewhere, "plan.md", "the other notebook's plan\n");
      await commit(world.deps({ store: wrong.store, storeId: wrong.storeId }), { path: elsewhere, message: "other" });
      counts.swapped++;
      await refusedBackwards(
        a,
        () => pull(world.deps({ store: wrong.store, storeId: wrong.storeId }), { path: a }),
        `this directory is a checkout of generation 3 of notebook ${seen.slice(0, 8)} through another store location`,
        "this store holds notebook",
      );
      expect(existsSync(stateFile(wrong.storeId, a))).toBe(false);
    });
  });
}

describe("only on the embedded store", () => {
  test("truncated to zero bytes: refused as a store that holds no notebook", async () => {
    const p = sqlitePlace();
    const { deps } = open(p);
    const a = world.checkout("a");
    await threeGenerations(deps, a);
    await p.truncate();
    await refusedBackwards(a, () => pull(deps(), { path: a }), "this checkout was brought to generation 3", "holds no notebook");
    await refusedBackwards(a, () => commit(deps(), { path: a, message: "again" }), "holds no notebook");
    expect(await manifestOf(place.store)).toBeNull();
  });

  test("an older copy of the store file put back: refused; attach keeps the files as they are, and the next commit publishes the lost generations as one", async () => {
    const p = sqlitePlace();
    const { deps } = open(p);
    const a = world.checkout("a");
    await pull(deps(), { path: a });
    write(a, "plan.md", "# plan\n");
    await commit(deps(), { path: a, message: "plan" });
    const copy = await p.copy();
    try {
      write(a, "notes/one.md", "one\n");
      await commit(deps(), { path: a, message: "one" });
      write(a, "plan.md", "# plan\nship friday\n");
      await commit(deps(), { path: a, message: "friday" });
      write(a, "draft.md", "unpublished\n");
      await p.putBackCopy(copy);
    } finally {
      rmSync(copy, { recursive: true, force: true });
    }
    await refusedBackwards(a, () => pull(deps(), { path: a }), "this checkout was brought to generation 3", "the store shows generation 1.");
    await refusedBackwards(a, () => commit(deps(), { path: a, message: "draft" }), "shows generation 1.");
    const files = filesOf(a);
    const attached = await attach(deps(), { path: a });
    expect(attached.attached).toBe(true);
    expect(attached.outcome.generation).toBe(1);
    expect(attached.outcome.files).toEqual([]);
    expect(filesOf(a)).toEqual(files);
    // The store's generation 1 is one a passed through: what a has beyond it is its own, to publish.
    const status = await readLocalChanges(deps(), { path: a });
    expect(status.changes.map((c) => [c.path, c.change])).toEqual([
      ["draft.md", "added"],
      ["notes/one.md", "added"],
      ["plan.md", "modified"],
    ]);
    expect((await commit(deps(), { path: a, message: "the lost generations, again" })).generation).toBe(2);
    const fresh = world.checkout("fresh");
    await pull(deps(), { path: fresh });
    expect(filesOf(fresh)).toEqual(files);
  });

  test("a manifest without a notebook id put back over one that had it: refused as an older copy or another notebook", async () => {
    const p = sqlitePlace();
    const { deps } = open(p);
    const a = world.checkout("a");
    const bodies = await threeGenerations(deps, a);
    const { notebook: _id, ...legacy } = parseManifest(bodies[2]!);
    await putBackCurrent(p, serializeManifest(legacy as Manifest));
    expect((await manifestOf(p.store))!.format).toBe(1);
    await refusedBackwards(a, () => pull(deps(), { path: a }), "shows generation 3 without a notebook id");
  });

  test("a store without notebook ids (written before them): the first commit mints one; a checkout without one learns it from its next pull", async () => {
    const p = sqlitePlace();
    const { deps } = open(p);
    const bodies = await threeGenerations(deps, world.checkout("a"));
    const b = world.checkout("b");
    // The same state as written before ids: a fresh checkout b pulls it, and records none.
    const { notebook: _id, ...legacy } = parseManifest(bodies[2]!);
    await p.store.delete(MANIFEST_KEY);
    await p.store.putIfAbsent(MANIFEST_KEY, serializeManifest(legacy as Manifest));
    await pull(deps(), { path: b });
    expect(JSON.parse(readFileSync(stateFile(p.storeId, b), "utf8")).baseline.notebook).toBeUndefined();
    write(b, "b.md", "b\n");
    await commit(deps(), { path: b, message: "b" });
    const minted = (await manifestOf(p.store))!;
    expect(minted.format).toBe(4);
    expect(minted.notebook).toMatch(/^[0-9a-f]{32}$/);
    expect(JSON.parse(readFileSync(stateFile(p.storeId, b), "utf8")).baseline.notebook).toBe(minted.notebook);
  });

  test("the same notebook through another store location (the store file copied elsewhere) is no wrong store: its first pull merges as before", async () => {
    const p = sqlitePlace();
    const { deps } = open(p);
    const a = world.checkout("a");
    await threeGenerations(deps, a);
    const copy = await p.copy();
    const store = openSqliteStore(join(copy, "store.db"), SYSTEM_CLOCK);
    try {
      const out = await pull(world.deps({ store, storeId: `sqlite:${join(copy, "store.db")}` }), { path: a });
      expect(out.generation).toBe(3);
      expect(out.files).toEqual([]);
    } finally {
      await store.close();
      rmSync(copy, { recursive: true, force: true });
    }
  });
});
