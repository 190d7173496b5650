/**
 * The fault kinds of test/support/faulty-store.ts do what their names say
 * on the real embedded store — so that a test built on them (the torture
 * run, the secrets test, crash and integrity tests) injects the failure it
 * means to: delay, answer-500, answer-409 and corrupt-read, plus custom
 * messages and causes. The engine's answer to a corrupted read is checked
 * too: the store is not trusted, nothing is materialised.
 */
import { afterEach, expect, test } from "bun:test";
import { commit } from "../../src/engine/commit.ts";
import { pull } from "../../src/engine/pull.ts";
import { StoreError } from "../../src/store/object-store.ts";
import { type Fault, faultyStore } from "../support/faulty-store.ts";
import { makeWorld, read, refusal, seedNotebook, snapshotStore, type World, write } from "../support/fixture.ts";

let world: World;
afterEach(async () => {
  await world?.close();
});

const bytes = (s: string) => new TextEncoder().encode(s);

async function thrown(fn: () => Promise<unknown>): Promise<StoreError> {
  try {
    await fn();
  } catch (e) {
    if (e instanceof StoreError) return e;
    throw e;
  }
  throw new Error("expected a StoreError");
}

test("delay: the operation takes effect, late", async () => {
  world = makeWorld();
  const store = faultyStore(world.store, () => "delay", { delayMs: 120 });
  const started = performance.now();
  expect((await store.putIfAbsent("k", bytes("v"))).ok).toBe(true);
  const got = await store.get("k");
  expect(performance.now() - started).toBeGreaterThanOrEqual(2 * 120 - 5);
  expect(new TextDecoder().decode(got!.body)).toBe("v");
  expect(store.injected).toBe(2);
});

test("answer-500: a write throws with an unknown outcome and writes nothing; a read throws", async () => {
  world = makeWorld();
  await world.store.putIfAbsent("k", bytes("v"));
  const etag = (await world.store.get("k"))!.etag;
  const store = faultyStore(world.store, () => "answer-500");
  for (const write of [() => store.putIfAbsent("new", bytes("x")), () => store.putIfMatch("k", bytes("x"), etag)]) {
    const e = await thrown(write);
    expect(e.outcome).toBe("unknown");
  }
  expect((await thrown(() => store.get("k"))).outcome).toBe("failed");
  expect(await world.store.get("new")).toBeNull();
  expect((await world.store.get("k"))!.etag).toBe(etag);
  expect(store.injected).toBe(3);
});

test("answer-409: a conditional write is a lost precondition and writes nothing; a read throws", async () => {
  world = makeWorld();
  await world.store.putIfAbsent("k", bytes("v"));
  const etag = (await world.store.get("k"))!.etag;
  const store = faultyStore(world.store, () => "answer-409");
  expect(await store.putIfAbsent("new", bytes("x"))).toEqual({ ok: false });
  expect(await store.putIfMatch("k", bytes("x"), etag)).toEqual({ ok: false });
  expect((await thrown(() => store.get("k"))).outcome).toBe("failed");
  expect(await world.store.get("new")).toBeNull();
  expect((await world.store.get("k"))!.etag).toBe(etag);
});

test("corrupt-read: the body comes back damaged, the stored object is untouched, writes pass through", async () => {
  world = makeWorld();
  const store = faultyStore(world.store, () => "corrupt-read");
  expect((await store.putIfAbsent("k", bytes("hello"))).ok).toBe(true);
  const got = await store.get("k");
  expect(Buffer.from(got!.body).equals(Buffer.from("hello"))).toBe(false);
  expect(got!.body.byteLength).toBe(5);
  expect(new TextDecoder().decode((await world.store.get("k"))!.body)).toBe("hello");
  expect(await store.get("absent")).toBeNull();
  // Only the read was a fault.
  expect(store.injected).toBe(1);
});

test("custom messages and causes travel in the injected StoreError", async () => {
  world = makeWorld();
  const cause = new Error("the cause");
  const store = faultyStore(world.store, () => "fail-before", { message: (op, fault) => `${op}/${fault}`, cause: () => cause });
  const e = await thrown(() => store.get("k"));
  expect(e.message).toBe("get/fail-before");
  expect(e.cause).toBe(cause);
  // Without options the messages stay as they were.
  const plain = faultyStore(world.store, () => "drop-request");
  expect((await thrown(() => plain.putIfAbsent("k", bytes("v")))).message).toBe("injected timeout");
});

test("a corrupted read of current or of a pack: STORAGE_INTEGRITY, nothing materialised, nothing published", async () => {
  world = makeWorld();
  const a = world.checkout("a");
  await seedNotebook(world.deps(), a, { "x.md": "x\n" });
  // A checkout already holding every pack never downloads one: only the fresh one meets a corrupt pack.
  const cases: Array<[(key: string) => boolean, string, boolean]> = [
    [(key) => key === "current", "MANIFEST_INVALID", true],
    [(key) => key.startsWith("packs/"), "PACK_INVALID", false],
  ];
  for (const [which, reason, commitToo] of cases) {
    const store = faultyStore(world.store, (op, key): Fault | null => (op === "get" && which(key) ? "corrupt-read" : null));
    const fresh = world.checkout(`fresh-${reason}`);
    write(fresh, "mine.md", "unpublished\n");
    write(a, "x.md", `x ${reason}\n`);
    const before = await snapshotStore(world.store);
    // The commit must read `current` to meet the fault, not publish on the state it last saw.
    const runs = [() => pull(world.deps({ store }), { path: fresh }), ...(commitToo ? [() => commit(world.deps({ store, guessCurrent: false }), { path: a, message: "m" })] : [])];
    for (const run of runs) {
      const e = await refusal(run);
      expect<string[]>([e.code, e.reason, e.action]).toEqual(["STORAGE_INTEGRITY", reason, "OPERATOR"]);
    }
    expect(store.injected).toBeGreaterThan(0);
    expect(await snapshotStore(world.store)).toBe(before);
    expect(read(fresh, "mine.md")).toBe("unpublished\n");
    expect(read(fresh, "x.md")).toBeNull();
    expect(read(a, "x.md")).toBe(`x ${reason}\n`);
  }
});
