/**
 * The bound on bytes downloaded at once (engine/memory/byte-budget.ts): a
 * pull's packs are whole in memory while checked and imported, so eight
 * big ones at once would hold hundreds of megabytes.
 */
import { expect, test } from "bun:test";
import { ByteBudget } from "../../src/engine/memory/byte-budget.ts";

const MiB = 2 ** 20;

/** Takers of `sizes` bytes, each holding its share until released; the most ever held at once. */
async function mostHeld(bound: number, sizes: number[]): Promise<{ most: number; order: number[] }> {
  const budget = new ByteBudget(bound);
  let held = 0;
  let most = 0;
  const order: number[] = [];
  await Promise.all(
    sizes.map(async (size, i) => {
      await budget.take(size);
      held += size;
      most = Math.max(most, held);
      order.push(i);
      // Held across a few turns of the event loop, as a download and an import are.
      for (let t = 0; t < 3; t++) await Promise.resolve();
      held -= size;
      budget.give(size);
    }),
  );
  return { most, order };
}

test("takers share the bound: never more than it is held at once, and every one gets its turn", async () => {
  const { most, order } = await mostHeld(32 * MiB, Array.from({ length: 8 }, () => 20 * MiB));
  expect(most).toBe(20 * MiB);
  expect(order.sort((a, b) => a - b)).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
});

test("small takers go together up to the bound", async () => {
  const { most } = await mostHeld(32 * MiB, Array.from({ length: 8 }, () => 4 * MiB));
  expect(most).toBe(32 * MiB);
});

test("one taker larger than the bound goes alone, and is not kept waiting forever", async () => {
  const { most, order } = await mostHeld(32 * MiB, [100 * MiB, 4 * MiB, 4 * MiB]);
  expect(most).toBe(100 * MiB);
  expect(order).toHaveLength(3);
});
