/**
 * A pull sends its read of `current` before it scans the notebook, so that
 * against a store behind a network the scan's local work is done while the
 * request is on its way (docs/performance.md, scenario `warm-pull` at 20 ms) — and the order
 * in which a pull refuses is unchanged: the scan's refusals still come
 * before a failed read.
 */
import { afterEach, expect, test } from "bun:test";
import { DomainError } from "../../src/contract/errors.ts";
import { pull } from "../../src/engine/pull.ts";
import { faultyStore } from "../support/faulty-store.ts";
import { makeWorld, read, seedNotebook, type World, write } from "../support/fixture.ts";

let world: World;
afterEach(async () => {
  await world?.close();
});

test("the read of current is sent before the scan begins, and the pull brings the change", async () => {
  world = makeWorld();
  const a = world.checkout("a");
  const b = world.checkout("b");
  await pull(world.deps(), { path: a });
  await seedNotebook(world.deps(), b, { "plan.md": "from b\n" });

  const events: string[] = [];
  const store = faultyStore(world.store, (op, key) => {
    if (op === "get" && key === "current") events.push("get current");
    return null;
  });
  await pull(world.deps({ store, onStage: (stage) => void events.push(stage) }), { path: a });
  expect(events.indexOf("get current")).toBeGreaterThanOrEqual(0);
  expect(events.indexOf("get current")).toBeLessThan(events.indexOf("scan"));
  expect(read(a, "plan.md")).toBe("from b\n");
});

/** A pulled checkout holding `file`, pulled again through a store whose read of current fails: what the pull threw. */
async function pullWithCurrentUnreadable(file: string, text: string): Promise<{ a: string; refused: DomainError }> {
  world = makeWorld();
  const a = world.checkout("a");
  await pull(world.deps(), { path: a });
  write(a, file, text);
  const broken = faultyStore(world.store, (op, key) => (op === "get" && key === "current" ? "fail-before" : null));
  const refused = await pull(world.deps({ store: broken }), { path: a }).catch((e: unknown) => e);
  expect(refused).toBeInstanceOf(DomainError);
  return { a, refused: refused as DomainError };
}

test("a notebook the scan refuses is refused for that, even when the read of current fails too", async () => {
  const { refused } = await pullWithCurrentUnreadable("image.bin", "\u0000binary\n");
  expect(refused.reason).toBe("INVALID_CONTENT");
});

test("a clean notebook whose read of current fails: MANIFEST_READ, as before", async () => {
  const { a, refused } = await pullWithCurrentUnreadable("note.md", "kept\n");
  expect(refused.reason).toBe("MANIFEST_READ");
  expect(read(a, "note.md")).toBe("kept\n");
});
