/**
 * The arithmetic behind the race curve row: the curve's check (curve.ts)
 * must see a fall beyond the spread and forgive one within it.
 */
import { describe, expect, test } from "bun:test";
import { curveCheck, type CurvePoint, rateSpread } from "./curve.ts";

describe("the race curve's check", () => {
  const point = (writers: number, rate: number, spread = 0.05): CurvePoint => ({ writers, rate, spread });

  test("a run's spread: 0 when acceptances come evenly, two standard errors of the rate when not", () => {
    expect(rateSpread([10, 20, 30, 40])).toBe(0);
    // Gaps 10 and 30: mean 20, standard deviation 14.1; 2 × 14.1 / 20 / √2 = 1.
    expect(rateSpread([40, 10])).toBeCloseTo(1, 6);
    // The same gaps four times over: the sample standard deviation √(800/7) over √8 gaps.
    expect(rateSpread([10, 40, 50, 80, 90, 120, 130, 160])).toBeCloseTo((2 * Math.sqrt(800 / 7)) / 20 / Math.sqrt(8), 6);
    expect(rateSpread([10])).toBe(0);
  });

  test("met when throughput holds or rises up to the bar's count, whatever lies beyond it", () => {
    const check = curveCheck([point(1, 20), point(4, 22), point(16, 21.5), point(64, 5)], 16)!;
    expect(check.met).toBe(true);
    expect(check.steps.map((s) => s.to.writers)).toEqual([4, 16]);
    expect(check.worst.to.writers).toBe(16);
  });

  test("not met when a step falls beyond the larger spread of its two points", () => {
    const check = curveCheck([point(1, 20), point(4, 18, 0.05), point(16, 9)], 16)!;
    expect(check.met).toBe(false);
    expect(check.worst.from.writers).toBe(4);
    expect(check.worst.ratio).toBeCloseTo(0.5, 6);
  });

  test("a fall within the spread is not a fall", () => {
    expect(curveCheck([point(1, 20, 0.02), point(4, 17, 0.2)], 16)!.met).toBe(true);
    expect(curveCheck([point(1, 20, 0.02), point(4, 15, 0.2)], 16)!.met).toBe(false);
  });

  test("nothing to check with one point up to the bar's count", () => {
    expect(curveCheck([point(1, 20), point(64, 3)], 16)).toBeNull();
  });
});
