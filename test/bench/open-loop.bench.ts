/**
 * open-loop: a team's own load. RACERS writers, each through its own
 * `serve` (race.bench.ts), commit to their own file after a random wait
 * drawn from an exponential distribution (mean 5 s), 10 commits each (5
 * with `--quick`: the same load for half the time) — a load far below what the store takes, at which most
 * commits meet nobody and some meet another. Beside them, in the same run,
 * one writer alone commits the same way, with the first writer's waits.
 *
 * Bar: p99 per commit at RACERS writers ≤ 3× one writer's p50, every
 * commit accepted on its first call, nothing lost. The row's note gives
 * p50, p99 and max, the stage medians of one writer's commits (what a
 * commit that meets nobody costs), and of the RACERS writers' commits:
 * of all of them, and of those over the bar, where the waiting goes
 * (`retry` on S3, `queue` on the embedded store).
 *
 * The waits come from a seeded generator, so two runs (two builds) draw
 * the same ones.
 */
import { mulberry32 } from "../support/seeded.ts";
import * as L from "./lib.ts";
import { RACERS, race, type RaceResult } from "./race.bench.ts";
import type { Row } from "./report.ts";

/** Commits per writer, and `--quick`'s: the same waits, fewer of them, so the load is the bar's. */
export const OPEN_LOOP_COMMITS = 10;
export const QUICK_OPEN_LOOP_COMMITS = 5;
/** The bar: p99 at RACERS writers against one writer's p50. */
export const OPEN_LOOP_BAR = 3;
/** The mean wait before each commit (ms). */
export const MEAN_WAIT_MS = 5_000;
const SEED = 35;

/** One draw from an exponential distribution of mean `meanMs`, from a uniform draw `u` in [0, 1). */
export function exponential(u: number, meanMs: number): number {
  return meanMs * -Math.log1p(-u);
}

/** `writers` × `commits` waits (ms), exponential of mean `meanMs`, the same for the same seed: waits[i][j] comes before writer i's commit j. */
export function exponentialWaits(seed: number, writers: number, commits: number, meanMs: number): number[][] {
  const rand = mulberry32(seed);
  return Array.from({ length: writers }, () => Array.from({ length: commits }, () => exponential(rand(), meanMs)));
}

export async function openLoopScenario(loc: L.Location, commits = OPEN_LOOP_COMMITS, meanMs = MEAN_WAIT_MS): Promise<Row[]> {
  const waits = exponentialWaits(SEED, RACERS, commits, meanMs);
  const one = await race(loc, 1, commits, "serve", { pace: (_, j) => waits[0]![j]! });
  const many = await race(loc, RACERS, commits, "serve", { pace: (i, j) => waits[i]![j]! });
  await loc.dispose();
  return [openLoopRow(loc, many, one, meanMs)];
}

function stagesText(profile: Record<string, number>): string {
  const stages = Object.entries(profile).filter(([, ms]) => ms > 0).sort((a, b) => b[1] - a[1]);
  return stages.length === 0 ? "none" : stages.map(([k, ms]) => `${k} ${ms}`).join(", ");
}

/**
 * The three longest commits, each with its own stages: the p99 of a short
 * run is its one or two longest commits, and a median of two hides which
 * stage made them long.
 */
function slowest(completions: L.Completion[]): string {
  const top = [...completions].sort((a, b) => b.durationMs - a.durationMs).slice(0, 3);
  return top.map((c) => `${c.durationMs} ms (${stagesText(c.stages)})`).join(", ");
}

function openLoopRow(loc: L.Location, many: RaceResult, one: RaceResult, meanMs: number): Row {
  const total = many.writers * many.commits;
  const p99 = L.percentile(many.latencies, 99);
  const oneP50 = L.percentile(one.latencies, 50);
  const clean = many.firstCall === total && many.lost === 0 && many.generationsOk;
  // The commits over the bar, by the server's own duration: where their time went.
  const slow = many.completions.filter((c) => c.durationMs > OPEN_LOOP_BAR * oneP50);
  const note = [
    `exponential waits of mean ${meanMs / 1000} s, seed ${SEED}, ${many.commits} commits each${many.commits === OPEN_LOOP_COMMITS ? "" : ` (${OPEN_LOOP_COMMITS} in the bar)`}; one writer alone: the same ${one.commits} commits after the first writer's waits`,
    `${many.firstCall}/${total} accepted on the first call, ${many.retried} retried`,
    many.lost === 0 && many.generationsOk ? "nothing lost" : `${many.lost} writers lost edits`,
    `p50 ${L.percentile(many.latencies, 50).toFixed(0)} ms, p99 ${p99.toFixed(0)} ms, max ${Math.max(...many.latencies).toFixed(0)} ms`,
    `one writer: p50 ${oneP50.toFixed(0)} ms, p99 ${L.percentile(one.latencies, 99).toFixed(0)} ms, stage medians (ms) ${stagesText(L.stageMedians(one.completions))}`,
    `stage medians (ms), all ${many.completions.length} commits: ${stagesText(L.stageMedians(many.completions))}`,
    slow.length === 0 ? "no commit over the bar" : `the ${slow.length} over ${OPEN_LOOP_BAR}× one writer's p50: ${stagesText(L.stageMedians(slow))}`,
    `the slowest by the server's duration: ${slowest(many.completions)}`,
  ].join("; ");
  return {
    scenario: "open-loop",
    store: loc.label,
    what: `p99 per commit, ${many.writers} writers through serve × ${many.commits} commits, each after a random wait`,
    median: p99,
    unit: "ms",
    comparison: "one writer's p50, the same way",
    comparisonMedian: oneP50,
    ratio: p99 / oneP50,
    bar: `≤ ${OPEN_LOOP_BAR}× one writer's p50, every commit accepted on its first call, nothing lost`,
    met: clean && p99 <= OPEN_LOOP_BAR * oneP50,
    samples: many.latencies.length,
    values: many.latencies,
    comparisonValues: one.latencies,
    note,
    profile: many.profile,
  };
}
