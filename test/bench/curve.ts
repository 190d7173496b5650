/**
 * The race curve's check (race.bench.ts): throughput must not fall, beyond
 * its spread, as writers are added up to the bar's count. One run has no
 * spread across runs, so each point's spread is estimated inside its own
 * run, from how irregular the gaps between its acceptances are.
 * Pure, so its arithmetic is tested (bench.test.ts).
 */

export interface CurvePoint {
  writers: number;
  /** Accepted commits per second. */
  rate: number;
  /** How far the point's rate wanders inside its run, as a fraction of it. */
  spread: number;
}

export interface CurveStep {
  from: CurvePoint;
  to: CurvePoint;
  /** to.rate / from.rate */
  ratio: number;
  /** The lowest ratio that is not a fall: 1 less the larger spread of the two points. */
  allowed: number;
}

/**
 * A run's spread: two standard errors of its rate, as a fraction of it.
 * The rate is the commits over the time they took, the sum of the gaps
 * between one acceptance and the next (from the start); with N gaps of
 * coefficient of variation CV, that sum's relative standard error is
 * CV / √N. `acceptedAt`: ms from the start; 0 with fewer than two.
 */
export function rateSpread(acceptedAt: number[]): number {
  if (acceptedAt.length < 2) return 0;
  const sorted = [...acceptedAt].sort((a, b) => a - b);
  const gaps = sorted.map((t, i) => t - (i === 0 ? 0 : sorted[i - 1]!));
  const mean = gaps.reduce((s, g) => s + g, 0) / gaps.length;
  if (!(mean > 0)) return 0;
  const sd = Math.sqrt(gaps.reduce((s, g) => s + (g - mean) ** 2, 0) / (gaps.length - 1));
  return (2 * sd) / mean / Math.sqrt(gaps.length);
}

/**
 * Each step between consecutive writer counts up to `upTo`, the lowest one
 * (`worst`), and whether none falls beyond its spread; null with fewer
 * than two points up to `upTo`.
 */
export function curveCheck(points: CurvePoint[], upTo: number): { steps: CurveStep[]; worst: CurveStep; met: boolean } | null {
  const upToBar = points.filter((p) => p.writers <= upTo).sort((a, b) => a.writers - b.writers);
  const steps: CurveStep[] = [];
  for (let i = 1; i < upToBar.length; i++) {
    const from = upToBar[i - 1]!;
    const to = upToBar[i]!;
    steps.push({ from, to, ratio: to.rate / from.rate, allowed: 1 - Math.max(from.spread, to.spread) });
  }
  if (steps.length === 0) return null;
  const worst = steps.reduce((a, b) => (b.ratio < a.ratio ? b : a));
  return { steps, worst, met: steps.every((s) => s.ratio >= s.allowed) };
}
