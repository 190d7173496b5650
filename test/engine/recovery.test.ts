/**
 * RECOVERY_FAILURE (errors.md): a failure after local mutation began runs
 * the generic recovery and reports it; the action follows whether the
 * checkout was resynchronized, and a repair never turns the call into OK.
 */
import { afterEach, expect, test } from "bun:test";
import { rmSync } from "node:fs";
import { join } from "node:path";
import { commit } from "../../src/engine/commit.ts";
import { pull } from "../../src/engine/pull.ts";
import { makeWorld, read, refusal, seedNotebook, type World, write } from "../support/fixture.ts";

let world: World;
afterEach(async () => {
  await world?.close();
});

/** a and b share generation 1; b publishes generation 2 changing two files; a has one local edit. */
async function diverged(): Promise<{ a: string; b: string }> {
  world = makeWorld();
  const a = world.checkout("a");
  const b = world.checkout("b");
  await seedNotebook(world.deps(), a, { "one.md": "one\n", "two.md": "two\n" });
  await pull(world.deps(), { path: b });
  write(b, "one.md", "one by b\n");
  write(b, "two.md", "two by b\n");
  await commit(world.deps(), { path: b, message: "b" });
  write(a, "mine.md", "unpublished\n");
  return { a, b };
}

const failOnSecondWrite = () => {
  let n = 0;
  return () => {
    if (++n === 2) throw new Error("disk full (injected)");
  };
};

test("a pull failing part-way is RECOVERY_FAILURE with the files put back: resynchronized, action PULL", async () => {
  const { a } = await diverged();
  const e = await refusal(() => pull(world.deps({ afterWrite: failOnSecondWrite() }), { path: a }));
  expect([e.code, e.reason, e.action, e.retryable]).toEqual(["RECOVERY_FAILURE", "LOCAL_MUTATION_FAILED", "PULL", true]);
  expect(e.recovery).toEqual({ stage: "pull.materialize", remoteAccepted: "no", resynchronized: true });
  // Put back exactly as before the call.
  expect([read(a, "one.md"), read(a, "two.md"), read(a, "mine.md")]).toEqual(["one\n", "two\n", "unpublished\n"]);
  // Following the action works.
  expect((await pull(world.deps(), { path: a })).generation).toBe(2);
  expect([read(a, "one.md"), read(a, "two.md"), read(a, "mine.md")]).toEqual(["one by b\n", "two by b\n", "unpublished\n"]);
});

test("a commit that landed and then failed writing files says remoteAccepted yes; the pull that follows converges", async () => {
  const { a } = await diverged();
  const e = await refusal(() => commit(world.deps({ afterWrite: failOnSecondWrite() }), { path: a, message: "mine" }));
  expect([e.code, e.reason, e.action]).toEqual(["RECOVERY_FAILURE", "LOCAL_MUTATION_FAILED", "PULL"]);
  expect(e.recovery).toEqual({ stage: "commit.materialize", remoteAccepted: "yes", resynchronized: true });
  const pulled = await pull(world.deps(), { path: a });
  expect(pulled.generation).toBe(3);
  expect([read(a, "one.md"), read(a, "two.md"), read(a, "mine.md")]).toEqual(["one by b\n", "two by b\n", "unpublished\n"]);
  // The publication is not repeated: nothing is left to commit.
  expect((await commit(world.deps(), { path: a, message: "again" })).files).toEqual([]);
});

test("when the repair fails too, resynchronized is false and the action is RETRY; nothing local is lost", async () => {
  const { a } = await diverged();
  let n = 0;
  // Before failing, take away the private object cache the repair needs.
  const sabotage = () => {
    if (++n === 2) {
      rmSync(join(world.privateRoot, "checkouts"), { recursive: true, force: true, maxRetries: 0 });
      throw new Error("disk gone (injected)");
    }
  };
  const e = await refusal(() => pull(world.deps({ afterWrite: sabotage }), { path: a }));
  expect([e.code, e.reason, e.action]).toEqual(["RECOVERY_FAILURE", "LOCAL_MUTATION_FAILED", "RETRY"]);
  expect(e.recovery).toEqual({ stage: "pull.materialize", remoteAccepted: "no", resynchronized: false });
  // With the whole private state gone the checkout is as if never pulled; pulling merges and loses nothing local.
  await pull(world.deps(), { path: a }).catch(() => {});
  expect(read(a, "mine.md")).toBe("unpublished\n");
});

test("a read-only reset failing part-way reports stage commit.readonly", async () => {
  world = makeWorld();
  const a = world.checkout("a");
  await seedNotebook(world.deps(), a, { "docs/a.md": "a\n", "docs/b.md": "b\n" });
  write(a, "docs/a.md", "changed\n");
  write(a, "docs/b.md", "changed\n");
  const e = await refusal(() => commit(world.deps({ pathSets: { readOnly: ["docs"], writable: [] }, afterWrite: failOnSecondWrite() }), { path: a, message: "m" }));
  expect([e.code, e.reason]).toEqual(["RECOVERY_FAILURE", "LOCAL_MUTATION_FAILED"]);
  expect(e.recovery?.stage).toBe("commit.readonly");
  expect(e.recovery?.remoteAccepted).toBe("no");
});

test("a private cache that cannot be trusted: commit asks for a pull (ENGINE_FAILED with its detail), and the pull repairs it", async () => {
  const { a } = await diverged();
  const { readdirSync, writeFileSync, statSync } = await import("node:fs");
  // Corrupt every cached object of a's checkout: loose objects and imported packs alike.
  const checkouts = join(world.privateRoot, "checkouts");
  const walk = (dir: string): string[] =>
    readdirSync(dir).flatMap((n) => (statSync(join(dir, n)).isDirectory() ? walk(join(dir, n)) : [join(dir, n)]));
  for (const file of walk(checkouts).filter((f) => /\/objects\//.test(f))) writeFileSync(file, "garbage");
  write(a, "mine.md", "unpublished, edited again\n");
  const e = await refusal(() => commit(world.deps(), { path: a, message: "m" }));
  expect([e.code, e.reason, e.action, e.retryable]).toEqual(["STORAGE_INTEGRITY", "ENGINE_FAILED", "OPERATOR", false]);
  expect(e.detail).toBe("part of the stored notebook state is missing locally; run notes_pull again to restore it");
  // The pull downloads the accepted state again, the baseline with it, and merges as usual.
  const repaired = await pull(world.deps(), { path: a });
  expect(repaired.generation).toBe(2);
  expect(read(a, "mine.md")).toBe("unpublished, edited again\n");
  expect(read(a, "one.md")).toBe("one by b\n");
  // And commits work again.
  const ok = await commit(world.deps(), { path: a, message: "after repair" });
  expect(ok.generation).toBe(3);
});
