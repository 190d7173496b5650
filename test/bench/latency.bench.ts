/**
 * warm-commit, warm-pull and race at the latency of a region-local S3: the S3 server behind
 * the TCP proxy of test/support/tcp-proxy.ts, which adds 20 ms to every
 * round trip (and one to every new connection), with every reference
 * measured through the same proxy in the same run. On a loopback RGW a
 * request costs well under a millisecond of network, so the other S3 rows
 * hardly see how many requests a call waits for in turn; here each one
 * costs what it would against AWS.
 *
 * warm-commit +20 ms — a warm commit of one changed file (warm.bench.ts) against the
 *      commit floor through the proxy (bar ≤ 1.5×), each with the round
 *      trips it waited for in turn, as the proxy counted them.
 * warm-pull +20 ms — a warm pull of one remote change against the pull floor,
 *      likewise (bar ≤ 1.5×).
 * race +20 ms — 16 writers committing at once, each through its own `serve`
 *      (race.bench.ts), against one writer alone through the same proxy:
 *      at least one writer's commits per second, and (the `p99` row) a p99
 *      per commit of at most 16× one writer's p50 — no worse than taking
 *      turns.
 */
import { startTcpProxy, type TcpProxy } from "../support/tcp-proxy.ts";
import * as L from "./lib.ts";
import { proxiedS3, RACERS, race, type RaceResult, rowOf } from "./race.bench.ts";
import type { Row } from "./report.ts";
import { warmScenarios } from "./warm.bench.ts";

/** Round-trip time added by the proxy: a region-local AWS S3 answers a small request in about 10–30 ms. */
export const LATENCY_MS = 20;
const LABEL = `+${LATENCY_MS} ms`;
/** The rows, in the table's order. */
export const LATENCY_ROWS = [`warm-commit ${LABEL}`, `warm-pull ${LABEL}`, `race ${LABEL}`, `race ${LABEL} p99`];

/** A race through serve (race.bench.ts), and the requests per accepted commit the proxy counted from its writers' first commit to their last. */
async function countedRace(proxy: TcpProxy, loc: L.Location, writers: number, commits: number): Promise<{ result: RaceResult; perCommit: string }> {
  const result = await race(loc, writers, commits, "serve", { proxy });
  return { result, perCommit: (result.requests! / result.accepted).toFixed(1) };
}

export async function latencyScenarios(s3: L.S3Env, reps: number, commits: number): Promise<Row[]> {
  const proxy = await startTcpProxy(s3.endpoint, { delayMs: LATENCY_MS });
  const through = proxiedS3(s3, proxy.url);
  try {
    const rows = await warmScenarios(L.s3Location(through, "latency-warm"), reps, { proxy, label: LABEL, bar: 1.5 });

    const loc = L.s3Location(through, "latency-race");
    const { result: one, perCommit: onePerCommit } = await countedRace(proxy, loc, 1, commits);
    const { result: many, perCommit } = await countedRace(proxy, loc, RACERS, commits);
    await loc.dispose();
    const oneRate = (one.accepted * 1000) / one.wallMs;
    const oneP50 = L.percentile(one.latencies, 50);
    const p99 = L.percentile(many.latencies, 99);
    const clean = many.refused.size === 0 && many.lost === 0 && many.generationsOk;
    const throughput = rowOf(loc, many, `race ${LABEL}`, "serve", oneRate, null);
    rows.push(
      {
        ...throughput,
        note: `${throughput.note}; ${perCommit} requests per commit (1 writer: ${onePerCommit})`,
        comparison: `1 writer × ${one.commits} commits (serve)`,
        bar: "100% accepted, ≥ 1 writer's commits/s",
        met: clean && throughput.ratio! >= 1,
        comparisonValues: one.latencies,
      },
      {
        scenario: `race ${LABEL} p99`,
        store: loc.label,
        what: `p99 per commit, ${RACERS} writers × ${many.commits} commits (serve)`,
        median: p99,
        unit: "ms",
        comparison: "1 writer's p50 per commit",
        comparisonMedian: oneP50,
        ratio: p99 / oneP50,
        bar: `≤ ${RACERS}×`,
        met: p99 / oneP50 <= RACERS,
        samples: many.latencies.length,
        profile: many.profile,
      },
    );
    return rows;
  } finally {
    await proxy.close();
  }
}
