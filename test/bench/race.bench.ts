/**
 * race: writers committing at once, each to its own file, with the default
 * retry bound — the contention curve. For N = 1, 2, 4, 8, 16, 32 and 64
 * writers, every writer is a running MCP server (the built binary) with its
 * own checkout, driven as N hosts; at 16 writers also as N shells, every
 * commit its own `slivingdoc commit` process.
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
 * And no waste under contention, each as a ratio from the same run, both
 * ways of running: the CPU per accepted commit at 16 writers (the OS's
 * accounting of the writer processes, and on S3 of the store's server
 * processes) ≤ 1.5× that of the same 16 writers taking turns, one commit
 * at a time, each catching up on the ones before it — the same work, with
 * nobody waiting; p99 at 16 writers ≤ 16× one writer's p50 (no worse than
 * taking turns); commits per second at 16 ≥ one writer's alone.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { pull } from "../../src/engine/pull.ts";
import * as L from "./lib.ts";
import type { Row } from "./report.ts";

export const CURVE = [1, 2, 4, 8, 16, 32, 64];
/** The bar writer count, and its commits per writer. */
export const RACERS = 16;
export const COMMITS = 20;
/** The embedded store's race throughput before this round (docs/performance.md), which the bar doubles. */
const SQLITE_BEFORE = 46;
/** The most CPU per accepted commit at RACERS writers, as a multiple of the same writers taking turns. */
const CPU_BAR = 1.5;

/** Fewer commits each for many writers: the same total work, bounded on 2 cores. */
function commitsFor(writers: number, commits: number): number {
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

/** `window`: told when the writers start and when the last of them is done (latency.bench.ts counts requests in between). */
export async function race(
  loc: L.Location,
  n: number,
  commits: number,
  mode: "serve" | "cli",
  schedule: Schedule = "at once",
  window?: { open(): void; close(): void },
): Promise<RaceResult> {
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

    const latencies: number[] = [];
    let accepted = 0;
    let firstCall = 0;
    const refused = new Map<string, number>();
    const file = (i: number) => `agents/agent-${String(i).padStart(2, "0")}.md`;
    const texts = writers.map(() => "");
    const commitOnce = async (i: number, j: number) => {
      texts[i] += `agent ${i} commit ${j}\n`;
      L.writeTree(join(root, `w${i}`), new Map([[file(i), texts[i]!]]));
      // Per commit: from its first call to its acceptance, re-calls included.
      const started = performance.now();
      for (let call = 0; ; call++) {
        const r = await writers[i]!.commit(`agent ${i} commit ${j}`);
        cpu.onCall(r);
        if (r.ok) {
          latencies.push(performance.now() - started);
          accepted++;
          if (call === 0) firstCall++;
          break;
        }
        // Not accepted: counted against the bar, then called again so
        // the "nothing lost" check still covers every edit.
        const token = `${String(r.data.code)} · ${String(r.data.reason)}`;
        refused.set(token, (refused.get(token) ?? 0) + 1);
        if (r.data.retryable !== true) throw new Error(`writer ${i}: ${JSON.stringify(r.data)}`);
      }
    };
    const cpu = cpuMeter(loc, servers);
    const cpu0 = { writers: cpu.writers(), store: cpu.store() };
    window?.open();
    const t0 = performance.now();
    if (schedule === "turns") {
      for (let j = 0; j < commits; j++) for (let i = 0; i < n; i++) await commitOnce(i, j);
    } else {
      await Promise.all(writers.map(async (_, i) => {
        for (let j = 0; j < commits; j++) await commitOnce(i, j);
      }));
    }
    const wallMs = performance.now() - t0;
    window?.close();
    const writersCpuMs = cpu.writers() - cpu0.writers;
    const storeCpuMs = cpu.store() - cpu0.store;

    // Nothing lost: a fresh checkout holds every line of every writer.
    const check = join(root, "check");
    const out = await pull(L.engineDepsFor(store, loc, join(root, "check-private")), { path: check });
    let lost = 0;
    for (let i = 0; i < n; i++) {
      const want = Array.from({ length: commits }, (_, j) => `agent ${i} commit ${j}\n`).join("");
      let got = "";
      try {
        got = readFileSync(join(check, file(i)), "utf8");
      } catch {
        /* missing: lost */
      }
      if (got !== want) lost++;
    }
    const all = servers.flatMap((s) => s.completions.filter((c) => c.tool === "notes_commit"));
    return {
      writers: n,
      commits,
      accepted,
      refused,
      firstCall,
      latencies,
      wallMs,
      lost,
      generationsOk: out.generation === before + n * commits,
      retried: all.filter((c) => (c.stages.retry ?? 0) > 0).length,
      profile: all.length > 0 ? L.stageMedians(all) : undefined,
      writersCpuMs,
      storeCpuMs,
    };
  } finally {
    await Promise.all(writers.map((w) => w.close()));
    await store.close();
    L.removeDir(root);
  }
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
 * p50, and throughput against one writer's.
 */
function wasteRows(loc: L.Location, scenario: string, how: string, atOnce: RaceResult, turns: RaceResult, alone: RaceResult): Row[] {
  const cpu = cpuPerCommit(atOnce);
  const ref = cpuPerCommit(turns);
  const split = (c: { writers: number; store: number }) => (loc.kind === "s3" ? ` (writers ${c.writers.toFixed(0)}, RGW ${c.store.toFixed(0)})` : "");
  const what = `${atOnce.writers} writers × ${atOnce.commits} commits, ${how}`;
  const p99 = L.percentile(atOnce.latencies, 99);
  const aloneP50 = L.percentile(alone.latencies, 50);
  const rate = (r: RaceResult) => (r.accepted * 1000) / r.wallMs;
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
      scenario: `${scenario} tail`,
      store: loc.label,
      what: `p99 per commit, ${what}`,
      median: p99,
      unit: "ms",
      comparison: "one writer's p50",
      comparisonMedian: aloneP50,
      ratio: p99 / aloneP50,
      bar: `≤ ${RACERS}× one writer's p50`,
      met: p99 <= RACERS * aloneP50,
      samples: atOnce.accepted,
      values: atOnce.latencies,
      comparisonValues: alone.latencies,
    },
    {
      scenario: `${scenario} rate`,
      store: loc.label,
      what: `throughput, ${what}`,
      median: rate(atOnce),
      unit: "commits/s",
      comparison: "one writer alone",
      comparisonMedian: rate(alone),
      ratio: rate(atOnce) / rate(alone),
      bar: "≥ 1× one writer",
      met: rate(atOnce) >= rate(alone),
      samples: atOnce.accepted,
    },
  ];
}

/** The contention curve; `curve` lists the writer counts (the bar row is RACERS). */
export async function raceScenario(loc: L.Location, curve = CURVE, commits = COMMITS): Promise<Row[]> {
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
    const r = await race(loc, n, commitsFor(n, commits), "serve");
    results.set(n, r);
    rows.push(rowOf(loc, r, n === RACERS ? "race" : `race ×${n}`, "serve", limit, n === RACERS ? bar : null));
    L.log(`  race ${loc.label} ${n} writers: ${rows.at(-1)!.note}`);
  }
  if (curve.includes(RACERS)) {
    const alone = results.get(1) ?? (await race(loc, 1, commits, "serve"));
    rows.push(...wasteRows(loc, "race", "serve", results.get(RACERS)!, await race(loc, RACERS, commits, "serve", "turns"), alone));
    const r = await race(loc, RACERS, commits, "cli");
    rows.push(rowOf(loc, r, "race cli", "a process per commit", limit, bar));
    const cliTurns = await race(loc, RACERS, commits, "cli", "turns");
    rows.push(...wasteRows(loc, "race cli", "a process per commit", r, cliTurns, await race(loc, 1, commits, "cli")));
  }
  await loc.dispose();
  return rows;
}
