/**
 * The collection a long loop asks for once it has dropped enough buffers
 * (engine/memory/garbage.ts): one pass per bound's worth of dropped bytes,
 * however they come, and none before.
 */
import { expect, test } from "bun:test";
import { GarbageMeter } from "../../src/engine/memory/garbage.ts";

test("a pass runs once every bound's worth of dropped bytes, and not before", () => {
  let passes = 0;
  const meter = new GarbageMeter(100, () => passes++);
  meter.add(60);
  expect(passes).toBe(0);
  meter.add(39);
  expect(passes).toBe(0);
  meter.add(1);
  expect(passes).toBe(1);
  // The count starts again after a pass: many small drops make one pass per bound.
  for (let i = 0; i < 250; i++) meter.add(1);
  expect(passes).toBe(3);
  // One big drop is one pass, not one per bound it spans.
  meter.add(1_000);
  expect(passes).toBe(4);
});

test("a pass asked for now runs only if something was dropped since the last, and starts the count again", () => {
  let passes = 0;
  const meter = new GarbageMeter(100, () => passes++);
  meter.now();
  expect(passes).toBe(0);
  meter.add(70);
  meter.now();
  expect(passes).toBe(1);
  meter.now();
  expect(passes).toBe(1);
  // Counted from zero after it: 70 more do not reach the bound.
  meter.add(70);
  expect(passes).toBe(1);
  meter.add(30);
  expect(passes).toBe(2);
});
