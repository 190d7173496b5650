/**
 * The arithmetic behind the open-loop and race curve rows: the open loop's
 * waits (open-loop.bench.ts) must be exponential of the mean asked and the
 * same for the same seed, or two builds' runs are not comparable; the
 * curve's check (curve.ts) must see a fall beyond the spread and forgive
 * one within it.
 */
import { describe, expect, test } from "bun:test";
import { curveCheck, type CurvePoint, rateSpread } from "./curve.ts";
import { exponential, exponentialWaits } from "./open-loop.bench.ts";

describe("the open loop's waits", () => {
  test("an exponential draw maps 0 to 0 and 1 − 1/e to the mean", () => {
    expect(exponential(0, 5000)).toBe(0);
    expect(exponential(1 - Math.exp(-1), 5000)).toBeCloseTo(5000, 6);
  });

  test("are the same for the same seed, differ for another, and are writers × commits", () => {
    const a = exponentialWaits(35, 16, 10, 5000);
    expect(a).toEqual(exponentialWaits(35, 16, 10, 5000));
    expect(a).not.toEqual(exponentialWaits(36, 16, 10, 5000));
    expect(a).toHaveLength(16);
    expect(a.every((w) => w.length === 10 && w.every((ms) => ms >= 0))).toBe(true);
  });

  test("have the mean asked, and an exponential's spread (standard deviation ≈ mean)", () => {
    const all = exponentialWaits(1, 100, 100, 2000).flat();
    const mean = all.reduce((s, x) => s + x, 0) / all.length;
    const sd = Math.sqrt(all.reduce((s, x) => s + (x - mean) ** 2, 0) / all.length);
    expect(Math.abs(mean - 2000) / 2000).toBeLessThan(0.05);
    expect(Math.abs(sd - 2000) / 2000).toBeLessThan(0.1);
  });
});

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
