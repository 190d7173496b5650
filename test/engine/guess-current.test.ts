/**
 * A commit from a checkout at the state this process last saw publishes
 * without reading `current` first: it builds on that state and lets the
 * conditional write (If-Match on the ETag it saw) say whether it is still
 * current. These tests hold the guess to the protocol: it skips the read
 * only when it can, a stale guess loses nothing and costs no retry, and a
 * commit with nothing to publish still brings in what others published.
 */
import { SYSTEM_RANDOM } from "../../src/surfaces/engine-deps.ts";
import { afterEach, expect, test } from "bun:test";
import { commit } from "../../src/engine/commit.ts";
import { newPublicationId, serializeManifest } from "../../src/engine/publish/manifest.ts";
import { pull } from "../../src/engine/pull.ts";
import type { StoreOperation } from "../../src/store/object-store.ts";
import { faultyStore } from "../support/faulty-store.ts";
import { makeWorld, read, readCurrent, type World, write } from "../support/fixture.ts";

let world: World;
afterEach(async () => {
  await world?.close();
});

/** The store, with every operation on `current` recorded. */
function watched(w: World) {
  const ops: StoreOperation[] = [];
  const store = faultyStore(w.store, (op, key) => {
    if (key === "current") ops.push(op);
    return null;
  });
  return { store, ops };
}

/** A checkout that committed once (so this process saw that state) and has an edit to publish. */
async function committedOnceThenEdited() {
  world = makeWorld();
  const a = world.checkout("a");
  await pull(world.deps(), { path: a });
  write(a, "one.md", "one\n");
  await commit(world.deps(), { path: a, message: "one" });
  write(a, "one.md", "one, two\n");
  return { a, ...watched(world) };
}

test("in sync with what this process saw: one conditional write of current, no read", async () => {
  const { a, store, ops } = await committedOnceThenEdited();
  const out = await commit(world.deps({ store }), { path: a, message: "two" });
  expect(out.generation).toBe(2);
  expect(ops).toEqual(["putIfMatch"]);
  expect((await readCurrent(world.store)).manifest.generation).toBe(2);
  // And the next commit guesses from the state this one published.
  write(a, "one.md", "one, two, three\n");
  ops.length = 0;
  expect((await commit(world.deps({ store }), { path: a, message: "three" })).generation).toBe(3);
  expect(ops).toEqual(["putIfMatch"]);
});

test("a stale guess (current replaced since) loses nothing and spends no retry", async () => {
  world = makeWorld();
  const a = world.checkout("a");
  await pull(world.deps(), { path: a });
  write(a, "a.md", "from a\n");
  await commit(world.deps(), { path: a, message: "a" });
  // Another process replaces current, as gc's fence does: same state, new
  // publication, new ETag. (Another checkout of this process would update
  // the guess itself; the multi-process race tests cover real publishers.)
  const { manifest, etag } = await readCurrent(world.store);
  const fenced = { ...manifest, publication: newPublicationId(SYSTEM_RANDOM.randomId) };
  expect((await world.store.putIfMatch("current", serializeManifest(fenced), etag)).ok).toBe(true);
  write(a, "a.md", "from a, again\n");
  const { store, ops } = watched(world);
  const out = await commit(world.deps({ store, commitRetries: 0 }), { path: a, message: "a again" });
  expect(out.generation).toBe(2);
  // The lost write, the read that proves it lost (publish/write.ts) and that the
  // next attempt builds on, the write.
  expect(ops).toEqual(["putIfMatch", "get", "putIfMatch"]);
  const c = world.checkout("c");
  await pull(world.deps(), { path: c });
  expect(read(c, "a.md")).toBe("from a, again\n");
});

test("with nothing to publish, a commit still reads current and brings in what others published", async () => {
  world = makeWorld();
  const a = world.checkout("a");
  const b = world.checkout("b");
  await pull(world.deps(), { path: a });
  write(a, "a.md", "from a\n");
  await commit(world.deps(), { path: a, message: "a" });
  await pull(world.deps(), { path: b });
  write(b, "b.md", "from b\n");
  await commit(world.deps(), { path: b, message: "b" });
  const out = await commit(world.deps(), { path: a, message: "nothing" });
  expect(out.generation).toBe(2);
  expect(read(a, "b.md")).toBe("from b\n");
});

test("guessCurrent: false reads current first, as every commit did before", async () => {
  const { a, store, ops } = await committedOnceThenEdited();
  await commit(world.deps({ store, guessCurrent: false }), { path: a, message: "two" });
  expect(ops).toEqual(["get", "putIfMatch"]);
});
