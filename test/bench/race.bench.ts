/**
 * race: writers committing at once, each to its own file, with the default
 * retry bound — the contention curve. For N = 1, 4, 16 and 64 writers
 * (`--curve` takes others), every writer is a running MCP server (the
 * built binary) with its own checkout, driven as N hosts; at 16 writers
 * also as N shells, every commit its own `slivingdoc commit` process. On
 * S3 every request goes through a TCP proxy that adds no delay and counts
 * them (test/support/tcp-proxy.ts).
 *
 * Beside the curve, the protocol's own limit measured in the same run: one
 * writer looping `GET current` + conditional `PUT` — the fastest any
 * coordinator-free protocol can publish.
 *
 * Bars (at 16 writers, both ways of running): every call accepted (no
 * REMOTE_BUSY), nothing lost (a fresh pull holds every line of every
 * writer); p99 per commit ≤ 2 s on S3, ≤ 0.5 s on the embedded store;
 * throughput ≥ 0.5× the GET+CAS loop on S3, ≥ 92 commits/s (2× the 46 of
 * the protocol before this round) on the embedded store.
 *
 * Saturation, each as a ratio from the same run, both ways of running:
 * commits per second at 16 ≥ one writer's alone, every commit accepted on
 * its first call, nothing lost (`rate`); the CPU per accepted commit at 16
 * writers (the OS's accounting of the writer processes, and on S3 of the
 * store's server processes) ≤ 1.5× that of the same 16 writers taking
 * turns, one commit at a time, each catching up on the ones before it —
 * the same work, with nobody waiting (`cpu`); on S3, the requests per
 * accepted commit at 16 fewer than one writer's (`requests`). p99 at 16
 * against one writer's p50 is shown without a bar (`tail`): in a closed
 * loop it follows from throughput, and open-loop.bench.ts holds the bar
 * on waiting. And the curve itself (`race curve`): throughput does not
 * fall, beyond its spread, as writers are added up to 16 (curve.ts).
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { pull } from "../../src/engine/pull.ts";
import * as L from "./lib.ts";
import type { Row } from "./report.ts";
import { startTcpProxy, type TcpProxy } from "../support/tcp-proxy.ts";
import { curveCheck, rateSpread } from "./curve.ts";

/** The default run's writer counts; `--curve` takes others (2, 8, 32…). */
export const CURVE = [1, 4, 16, 64];
/** The bar writer count, and its commits per writer. */
export const RACERS = 16;
export const COMMITS = 20;
/** The embedded store's race throughput before this round (docs/performance.md), which the bar doubles. */
const SQLITE_BEFORE = 46;
/** The most CPU per accepted commit at RACERS writers, as a multiple of the same writers taking turns. */
const CPU_BAR = 1.5;

/**
 * Fewer commits each for many writers: the same total work, bounded on 2
 * cores. One writer, the reference of the rate rows, always makes at least
 * COMMITS: with `--quick`'s 5, the first commit of a fresh server (several
 * times the others) weighed on its rate by half.
 */
function commitsFor(writers: number, commits: number): number {
  if (writers === 1) return Math.max(commits, COMMITS);
  return writers <= RACERS ? commits : Math.max(3, Math.round((commits * RACERS) / writers));
}

export interface RaceResult {
  writers: number;
  commits: number;
  accepted: number;
  refused: Map<string, number>;
  firstCall: number;
  latencies: number[];
  wallMs: number;
  lost: number;
  generationsOk: boolean;
  retried: number;
  profile?: Record<string, number>;
  /** The servers' completion records of the commits (none for a process per commit). */
  completions: L.Completion[];
  /** When each commit was accepted (ms from the first commit's start), in order. */
  acceptedAt: number[];
  /** The store's requests from the first commit to the last, when a proxy counted them. */
  requests?: number;
  /** CPU time while committing (ms, the OS's accounting): the writer processes', and the S3 server's (0 for the embedded store). */
  writersCpuMs: number;
  storeCpuMs: number;
}

/** Every writer commits at once, or they take turns: one commit at a time, writer after writer, round after round. */
type Schedule = "at once" | "turns";

interface Writer {
  /** One commit of the writer's checkout; ok, or the error's structured result. */
  commit(message: string): Promise<L.CallOutcome>;
  close(): Promise<void>;
}

/** CPU used so far (ms): by the writers (their `serve` processes, or the CLI processes that ended), and by the S3 server. */
function cpuMeter(loc: L.Location, servers: L.Server[]): { writers: () => number; store: () => number; onCall: (r: L.CallOutcome) => void } {
  let cliMs = 0;
  const storePids = loc.kind === "s3" ? L.storeServerPids() : [];
  const sum = (pids: number[]) => pids.reduce((a, pid) => a + L.processCpuMs(pid), 0);
  const serverPids = servers.map((s) => s.pid);
  return {
    writers: () => cliMs + sum(serverPids),
    store: () => sum(storePids),
    onCall: (r) => (cliMs += r.cpuMs ?? 0),
  };
}

/** N writers, each through its own MCP server. */
async function serveWriters(loc: L.Location, root: string, n: number): Promise<{ writers: Writer[]; servers: L.Server[] }> {
  const servers = await L.startServers(loc, root, n);
  await Promise.all(servers.map((s) => s.call("notes_pull", {})));
  const writers = servers.map((s) => ({
    commit: (message: string) => s.tryCall("notes_commit", { message }),
    close: () => s.close(),
  }));
  return { writers, servers };
}

/** N writers, each commit a `slivingdoc commit --json` process, as agents with a shell run it. */
async function cliWriters(loc: L.Location, root: string, n: number): Promise<Writer[]> {
  const run = L.cliRunner(loc, root);
  await Promise.all(Array.from({ length: n }, (_, i) => run(i, "pull")));
  return Array.from({ length: n }, (_, i) => ({ commit: (message: string) => run(i, "commit", "-m", message), close: async () => {} }));
}

/** How a race runs beyond its writers and commits. */
export interface RaceOptions {
  schedule?: Schedule;
  /** Counts the store's requests from the first commit to the last (the S3 server behind it), into `requests`. */
  proxy?: TcpProxy;
  /** An open loop: how long writer i waits before its commit j (ms); none, a closed loop (each commits again at once). */
  pace?: (writer: number, commit: number) => number;
}

/** One race: `n` writers, `commits` each, through `serve` or a process per commit. */
export async function race(loc: L.Location, n: number, commits: number, mode: "serve" | "cli", opts: RaceOptions = {}): Promise<RaceResult> {
  const schedule = opts.schedule ?? "at once";
  const root = L.tempDir(`race-${loc.kind}-${mode}-${n}${schedule === "turns" ? "-turns" : ""}`);
  const store = loc.open();
  let servers: L.Server[] = [];
  let writers: Writer[] = [];
  try {
    // A small notebook: the scenario measures contention on `current`, not scanning.
    await L.seedNotebook(L.engineDepsFor(store, loc, join(root, "seed-private")), join(root, "seed"), L.notebookFiles(100, 2048, 6));
    const before = await headGeneration(store, loc, root);
    if (mode === "serve") ({ writers, servers } = await serveWriters(loc, root, n));
    else writers = await cliWriters(loc, root, n);
    const run = await runCommits(root, writers, commits, cpuMeter(loc, servers), { ...opts, schedule });
    // Nothing lost: a fresh checkout holds every line of every writer.
    const check = join(root, "check");
    const out = await pull(L.engineDepsFor(store, loc, join(root, "check-private")), { path: check });
    const completions = servers.flatMap((s) => s.completions.filter((c) => c.tool === "notes_commit"));
    return {
      ...run,
      writers: n,
      commits,
      lost: lostWriters(check, n, commits),
      generationsOk: out.generation === before + n * commits,
      retried: completions.filter((c) => (c.stages.retry ?? 0) > 0).length,
      profile: completions.length > 0 ? L.stageMedians(completions) : undefined,
      completions,
    };
  } finally {
    await Promise.all(writers.map((w) => w.close()));
    await store.close();
    L.removeDir(root);
  }
}

const agentFile = (i: number) => `agents/agent-${String(i).padStart(2, "0")}.md`;
const agentLine = (i: number, j: number) => `agent ${i} commit ${j}\n`;

type CommitRun = Pick<RaceResult, "accepted" | "refused" | "firstCall" | "latencies" | "acceptedAt" | "wallMs" | "writersCpuMs" | "storeCpuMs" | "requests">;

/** Every writer's commits, on the schedule: each appends a line to its own file and commits it until accepted. */
async function runCommits(root: string, writers: Writer[], commits: number, cpu: ReturnType<typeof cpuMeter>, opts: RaceOptions): Promise<CommitRun> {
  const run: CommitRun = { accepted: 0, refused: new Map(), firstCall: 0, latencies: [], acceptedAt: [], wallMs: 0, writersCpuMs: 0, storeCpuMs: 0 };
  const texts = writers.map(() => "");
  let t0 = 0;
  const commitOnce = async (i: number, j: number) => {
    texts[i] += agentLine(i, j);
    L.writeTree(join(root, `w${i}`), new Map([[agentFile(i), texts[i]!]]));
    // Per commit: from its first call to its acceptance, re-calls included.
    const started = performance.now();
    for (let call = 0; ; call++) {
      const r = await writers[i]!.commit(`agent ${i} commit ${j}`);
      cpu.onCall(r);
      if (r.ok) {
        run.latencies.push(performance.now() - started);
        run.acceptedAt.push(performance.now() - t0);
        run.accepted++;
        if (call === 0) run.firstCall++;
        return;
      }
      // Not accepted: counted against the bar, then called again so
      // the "nothing lost" check still covers every edit.
      const token = `${String(r.data.code)} · ${String(r.data.reason)}`;
      run.refused.set(token, (run.refused.get(token) ?? 0) + 1);
      if (r.data.retryable !== true) throw new Error(`writer ${i}: ${JSON.stringify(r.data)}`);
    }
  };
  const cpu0 = { writers: cpu.writers(), store: cpu.store() };
  opts.proxy?.resetCounts();
  t0 = performance.now();
  if (opts.schedule === "turns") {
    for (let j = 0; j < commits; j++) for (let i = 0; i < writers.length; i++) await commitOnce(i, j);
  } else {
    await Promise.all(writers.map(async (_, i) => {
      for (let j = 0; j < commits; j++) {
        if (opts.pace) await Bun.sleep(opts.pace(i, j));
        await commitOnce(i, j);
      }
    }));
  }
  run.wallMs = performance.now() - t0;
  if (opts.proxy) run.requests = opts.proxy.counts().requests;
  run.writersCpuMs = cpu.writers() - cpu0.writers;
  run.storeCpuMs = cpu.store() - cpu0.store;
  return run;
}

/** How many writers' files in the fresh checkout `check` lack a line they committed, or hold one they did not. */
function lostWriters(check: string, n: number, commits: number): number {
  let lost = 0;
  for (let i = 0; i < n; i++) {
    const want = Array.from({ length: commits }, (_, j) => agentLine(i, j)).join("");
    let got = "";
    try {
      got = readFileSync(join(check, agentFile(i)), "utf8");
    } catch {
      /* missing: lost */
    }
    if (got !== want) lost++;
  }
  return lost;
}

async function headGeneration(store: import("../../src/store/object-store.ts").ObjectStore, loc: L.Location, root: string): Promise<number> {
  return (await pull(L.engineDepsFor(store, loc, join(root, "gen-private")), { path: join(root, "gen") })).generation;
}

export function rowOf(loc: L.Location, r: RaceResult, scenario: string, how: string, limit: number, bar: { p99Ms: number; minRate: number } | null): Row {
  const total = r.writers * r.commits;
  const throughput = (r.accepted * 1000) / r.wallMs;
  const p99 = L.percentile(r.latencies, 99);
  const allAccepted = [...r.refused.values()].reduce((a, b) => a + b, 0) === 0;
  const note = [
    `${how}, ${r.firstCall}/${total} accepted on the first call`,
    allAccepted ? "" : `refusals: ${[...r.refused].map(([k, v]) => `${v}× ${k}`).join(", ")}`,
    r.lost === 0 && r.generationsOk ? "all accepted, nothing lost" : `${r.lost} writers lost edits`,
    `p50 ${L.percentile(r.latencies, 50).toFixed(0)} ms`,
    `p99 ${p99.toFixed(0)} ms`,
    `max ${Math.max(...r.latencies).toFixed(0)} ms`,
    r.profile ? `${r.retried} commits retried` : "",
    r.requests === undefined ? "" : `${requestsPerCommit(r).toFixed(1)} S3 requests per accepted commit`,
  ]
    .filter(Boolean)
    .join("; ");
  return {
    scenario,
    store: loc.label,
    what: `${r.writers} writers × ${r.commits} commits`,
    median: throughput,
    unit: "commits/s",
    comparison: "GET + conditional PUT loop",
    comparisonMedian: limit,
    comparisonUnit: "commits/s",
    ratio: throughput / limit,
    bar: bar === null ? "" : `100% accepted, p99 ≤ ${bar.p99Ms / 1000} s, ≥ ${loc.kind === "s3" ? "0.5× the loop" : `${bar.minRate} commits/s`}`,
    met: bar === null ? null : allAccepted && r.lost === 0 && r.generationsOk && p99 <= bar.p99Ms && throughput >= bar.minRate,
    samples: total,
    values: r.latencies,
    note,
    profile: r.profile,
  };
}

/** CPU per accepted commit (ms): the writers', and the S3 server's. */
function cpuPerCommit(r: RaceResult): { total: number; writers: number; store: number } {
  const per = (ms: number) => ms / Math.max(1, r.accepted);
  return { total: per(r.writersCpuMs + r.storeCpuMs), writers: per(r.writersCpuMs), store: per(r.storeCpuMs) };
}

/**
 * The waste of contention, as ratios of the same run: CPU per accepted
 * commit against the same writers taking turns, p99 against one writer's
 * p50 (informational), and throughput against one writer's.
 */
function wasteRows(loc: L.Location, scenario: string, how: string, atOnce: RaceResult, turns: RaceResult, alone: RaceResult): Row[] {
  const cpu = cpuPerCommit(atOnce);
  const ref = cpuPerCommit(turns);
  const split = (c: { writers: number; store: number }) => (loc.kind === "s3" ? ` (writers ${c.writers.toFixed(0)}, RGW ${c.store.toFixed(0)})` : "");
  const what = `${atOnce.writers} writers × ${atOnce.commits} commits, ${how}`;
  const p99 = L.percentile(atOnce.latencies, 99);
  const aloneP50 = L.percentile(alone.latencies, 50);
  return [
    {
      scenario: `${scenario} cpu`,
      store: loc.label,
      what: `CPU per accepted commit, ${what}`,
      median: cpu.total,
      unit: "ms",
      comparison: `the same writers taking turns, one commit at a time${split(ref)}`,
      comparisonMedian: ref.total,
      ratio: cpu.total / ref.total,
      bar: `≤ ${CPU_BAR}× taking turns`,
      met: cpu.total <= CPU_BAR * ref.total,
      samples: atOnce.accepted,
      note: `the OS's accounting${loc.kind === "s3" ? " of the writers and of RGW (radosgw, ceph-osd), shared with anything else using it" : ""}${split(cpu)}; taking turns: ${rate(turns).toFixed(1)} commits/s, p50 ${L.percentile(turns.latencies, 50).toFixed(0)} ms`,
    },
    {
      // No bar: in a closed loop each of the writers waits for its answer
      // before committing again, so the mean latency is writers ÷ throughput
      // (Little's law). The open-loop row is the bar about waiting.
      scenario: `${scenario} tail`,
      store: loc.label,
      what: `p99 per commit, ${what}`,
      median: p99,
      unit: "ms",
      comparison: "one writer's p50",
      comparisonMedian: aloneP50,
      ratio: p99 / aloneP50,
      bar: "none (closed loop; see open-loop)",
      met: null,
      samples: atOnce.accepted,
      values: atOnce.latencies,
      comparisonValues: alone.latencies,
    },
    rateRow(loc, scenario, what, atOnce, alone),
  ];
}

/** Saturation: commits per second at RACERS writers against one writer's, every commit accepted on its first call, nothing lost. */
function rateRow(loc: L.Location, scenario: string, what: string, atOnce: RaceResult, alone: RaceResult): Row {
  const total = atOnce.writers * atOnce.commits;
  const clean = atOnce.firstCall === total && atOnce.lost === 0 && atOnce.generationsOk;
  return {
    scenario: `${scenario} rate`,
    store: loc.label,
    what: `throughput, ${what}`,
    median: rate(atOnce),
    unit: "commits/s",
    comparison: `one writer alone × ${alone.commits}`,
    comparisonMedian: rate(alone),
    ratio: rate(atOnce) / rate(alone),
    bar: "≥ 1× one writer, every commit accepted on its first call, nothing lost",
    met: clean && rate(atOnce) >= rate(alone),
    samples: atOnce.accepted,
    note: `${atOnce.firstCall}/${total} accepted on the first call; ${atOnce.lost === 0 && atOnce.generationsOk ? "nothing lost" : `${atOnce.lost} writers lost edits`}`,
  };
}

const rate = (r: RaceResult) => (r.accepted * 1000) / r.wallMs;
const requestsPerCommit = (r: RaceResult) => (r.requests ?? Number.NaN) / Math.max(1, r.accepted);

/** S3 requests per accepted commit at RACERS writers against one writer's, as the proxy counted them; none without a proxy. */
function requestsRows(loc: L.Location, scenario: string, how: string, atOnce: RaceResult, alone: RaceResult): Row[] {
  if (atOnce.requests === undefined || alone.requests === undefined) return [];
  const ratio = requestsPerCommit(atOnce) / requestsPerCommit(alone);
  return [
    {
      scenario: `${scenario} requests`,
      store: loc.label,
      what: `S3 requests per accepted commit, ${atOnce.writers} writers × ${atOnce.commits} commits, ${how}, from the first commit to the last`,
      median: requestsPerCommit(atOnce),
      unit: "requests/commit",
      comparison: `one writer alone × ${alone.commits}`,
      comparisonMedian: requestsPerCommit(alone),
      ratio,
      bar: "< 1× one writer's",
      met: ratio < 1,
      samples: atOnce.accepted,
      note: `counted by a TCP proxy adding no delay: ${atOnce.requests} requests, ${atOnce.accepted} commits; one writer ${alone.requests}, ${alone.accepted}`,
    },
  ];
}

/** The contention curve; `curve` lists the writer counts (the bar rows are at RACERS). With `proxy` (S3), the store's requests are counted. */
export async function raceScenario(loc: L.Location, curve = CURVE, commits = COMMITS, proxy?: TcpProxy): Promise<Row[]> {
  const store = loc.open();
  let limit: number;
  try {
    limit = await L.readCasRate(store, 100);
  } finally {
    await store.close();
  }
  const bar = { p99Ms: loc.kind === "s3" ? 2_000 : 500, minRate: loc.kind === "s3" ? 0.5 * limit : 2 * SQLITE_BEFORE };
  const rows: Row[] = [];
  const results = new Map<number, RaceResult>();
  for (const n of curve) {
    const r = await race(loc, n, commitsFor(n, commits), "serve", { proxy });
    results.set(n, r);
    rows.push(rowOf(loc, r, n === RACERS ? "race" : `race ×${n}`, "serve", limit, n === RACERS ? bar : null));
    L.log(`  race ${loc.label} ${n} writers: ${rows.at(-1)!.note}`);
  }
  rows.push(...curveRows(loc, results));
  if (curve.includes(RACERS)) {
    const alone = results.get(1) ?? (await race(loc, 1, commitsFor(1, commits), "serve", { proxy }));
    const many = results.get(RACERS)!;
    rows.push(...wasteRows(loc, "race", "serve", many, await race(loc, RACERS, commits, "serve", { schedule: "turns" }), alone));
    rows.push(...requestsRows(loc, "race", "serve", many, alone));
    const r = await race(loc, RACERS, commits, "cli", { proxy });
    rows.push(rowOf(loc, r, "race cli", "a process per commit", limit, bar));
    const cliTurns = await race(loc, RACERS, commits, "cli", { schedule: "turns" });
    const cliAlone = await race(loc, 1, commitsFor(1, commits), "cli", { proxy });
    rows.push(...wasteRows(loc, "race cli", "a process per commit", r, cliTurns, cliAlone));
    rows.push(...requestsRows(loc, "race cli", "a process per commit", r, cliAlone));
  }
  await loc.dispose();
  return rows;
}

/** `s3` reached through the proxy at `url` instead, by the bench and its child processes alike. */
export function proxiedS3(s3: L.S3Env, url: string): L.S3Env {
  return { ...s3, endpoint: url, childEnv: { ...s3.childEnv, AWS_ENDPOINT_URL_S3: url } };
}

/**
 * The race on S3 through a TCP proxy that adds no delay and counts the
 * requests (test/support/tcp-proxy.ts): every row of the curve, and the
 * requests per commit at RACERS writers against one writer's.
 */
export async function s3RaceScenario(s3: L.S3Env, curve = CURVE, commits = COMMITS): Promise<Row[]> {
  const proxy = await startTcpProxy(s3.endpoint);
  try {
    return await raceScenario(L.s3Location(proxiedS3(s3, proxy.url), "race"), curve, commits, proxy);
  } finally {
    await proxy.close();
  }
}

/** The curve's check, from the serve points up to RACERS writers: throughput does not fall, beyond its spread, as writers are added. */
function curveRows(loc: L.Location, results: Map<number, RaceResult>): Row[] {
  const points = [...results.values()].map((r) => ({ writers: r.writers, rate: rate(r), spread: rateSpread(r.acceptedAt) }));
  const check = curveCheck(points, RACERS);
  if (check === null) return [];
  const { worst } = check;
  return [
    {
      scenario: "race curve",
      store: loc.label,
      what: `throughput as writers are added up to ${RACERS} (serve): ${check.steps.map((s) => `${s.from.writers}→${s.to.writers} ${s.ratio.toFixed(2)}×`).join(", ")}; the lowest step`,
      median: worst.to.rate,
      unit: "commits/s",
      comparison: `${worst.from.writers} writer${worst.from.writers === 1 ? "" : "s"}`,
      comparisonMedian: worst.from.rate,
      ratio: worst.ratio,
      bar: "each step ≥ 1× less its spread",
      met: check.met,
      samples: points.length,
      note: `spread (two standard errors of each rate, from the gaps between acceptances): ${points.map((p) => `${p.writers}: ±${(p.spread * 100).toFixed(0)}%`).join(", ")}`,
    },
  ];
}
