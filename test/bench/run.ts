/**
 * The benchmark suite (`npm run bench`; not a test). Runs every scenario against the
 * embedded store and, when the environment names an S3 server (build/bench.mjs
 * starts Ceph RGW), against S3; every comparison is measured in the same run.
 * Prints one Markdown table of medians with their ratios and bars, then the
 * stage profile of each row that misses its bar.
 *
 * `open-loop` (in the default run) is 16 writers through `serve` committing after
 * random waits (mean 5 s; 10 commits each, 5 with `--quick`) against one writer alone: the bar on waiting.
 * `--only CLI` runs the 16-file CLI rows alone (warm-commit cli, no-change cli; also run with warm-commit or no-change).
 * `--only LATENCY` runs warm-commit, warm-pull and race on S3 behind a proxy adding 20 ms a round
 * trip (latency.bench.ts) alone; they are not run by warm-commit, warm-pull or race.
 * `--only BIG` runs the 100 MB file rows (BIG merge, BIG conflict, BIG memory; embedded store),
 * which are not in the default run: a few minutes of writing, packing and merging 100 MB.
 * `--only WEB` runs the web page's first screen with 10,000 publications
 * against 10 (web.bench.ts; embedded store, Debian's Chromium), which the
 * default run leaves out: making the 10,000 takes a few minutes.
 * `--only BULK` runs the 50,000-file rows (first commit and cold pull, peak
 * memory; bulk.bench.ts), which the default run leaves out: writing the
 * files alone takes a minute or more, and each rep several.
 *
 * The race on S3 goes through a TCP proxy adding no delay, which counts the requests per commit.
 *
 *   bun test/bench/run.ts [--only warm-commit,cold-pull,…,CLI] [--store sqlite|s3] [--quick] [--curve 1,16] [--no-proxy] [--team 8x15x200] [--out FILE.json]
 *
 * The scenarios and what their bars mean: docs/performance.md; their names
 * in docs/glossary.md. `--only` also takes the numbered labels they had
 * before (S1–S9), so older commands and notes still run.
 */
import { spawnSync } from "node:child_process";
import { cpus, loadavg, totalmem } from "node:os";
import { writeFileSync } from "node:fs";
import { bigFileScenario } from "./bigfile.bench.ts";
import { cliScenarios } from "./cli.bench.ts";
import { bulkScenario } from "./bulk.bench.ts";
import { coldScenarios } from "./cold.bench.ts";
import { historyScenario } from "./history.bench.ts";
import { LATENCY_MS, LATENCY_ROWS, latencyScenarios } from "./latency.bench.ts";
import * as L from "./lib.ts";
import { OPEN_LOOP_COMMITS, openLoopScenario, QUICK_OPEN_LOOP_COMMITS } from "./open-loop.bench.ts";
import { CURVE, raceScenario, s3RaceScenario } from "./race.bench.ts";
import { renderProfiles, renderTable, type Row } from "./report.ts";
import { startupScenario } from "./startup.bench.ts";
import { TEAM, teamScenario, type TeamSizes } from "./team.bench.ts";
import { warmScenarios } from "./warm.bench.ts";
import { webScenario } from "./web.bench.ts";

function flag(name: string): string | undefined {
  const i = process.argv.indexOf(name);
  return i >= 0 ? process.argv[i + 1] : undefined;
}

/** The scenarios by their numbered labels of earlier rounds, which `--only` still takes. */
const NUMBERED: Record<string, string> = {
  s1: "warm-commit",
  s2: "warm-pull",
  s3: "cold-pull",
  s4: "no-change",
  s5: "long-history",
  s6: "race",
  s7: "pull-memory",
  s8: "start-up",
  s9: "team",
};
const DEFAULT_RUN = [...Object.values(NUMBERED), "open-loop", "latency"];
// Case does not matter: `--only CLI,start-up` and `--only cli,S8` are the same run.
const only = new Set((flag("--only")?.split(",") ?? DEFAULT_RUN).map((s) => s.trim().toLowerCase()).map((s) => NUMBERED[s] ?? s));
const quick = process.argv.includes("--quick");
const storeFilter = flag("--store");
const out = flag("--out");
// race's writer counts (`--curve 16`: only the bar row and its process-per-commit row), for measuring one change quickly.
const curveFlag = flag("--curve");
// The team scenario's team (`--team 2x3x20`: agents × rounds × tasks); its bar holds at the default only.
const teamFlag = flag("--team");
// race on S3 straight to the server, without the proxy that counts its requests: to see what the proxy itself costs.
const noProxy = process.argv.includes("--no-proxy");

/** Repetitions: a few for the big scenarios, more for the cheap ones (about 12 minutes on 2 cores). */
const REPS = quick
  ? { warm: 3, cold: 1, noop: 3, history: 1, commits: 100, startup: 5, cli: 5, curve: [1, 4, 16], raceCommits: 5, openLoop: QUICK_OPEN_LOOP_COMMITS, team: { ...TEAM, rounds: 5 }, big: 1, bulk: 1, web: 5, publications: 1000 }
  : { warm: 9, cold: 3, noop: 7, history: 3, commits: 1000, startup: 15, cli: 15, curve: CURVE, raceCommits: 20, openLoop: OPEN_LOOP_COMMITS, team: TEAM, big: 3, bulk: 3, web: 5, publications: 10_000 };
const team: TeamSizes = teamFlag === undefined ? REPS.team : teamSizes(teamFlag);

function teamSizes(text: string): TeamSizes {
  const [agents, rounds, tasks] = text.split("x").map(Number);
  if (![agents, rounds, tasks].every((n) => Number.isInteger(n) && n! > 0)) throw new Error(`--team wants AGENTSxROUNDSxTASKS, e.g. 8x15x200, not ${text}`);
  return { agents: agents!, rounds: rounds!, tasks: tasks! };
}

const s3 = L.s3FromEnv();
const root = L.tempDir("run");
const stores: Array<"sqlite" | "s3"> = (["sqlite", "s3"] as const).filter(
  (k) => (storeFilter === undefined || storeFilter === k) && (k === "sqlite" || s3 !== null),
);
if (s3 === null && storeFilter !== "sqlite") L.log("no S3 server in the environment (SLIVINGDOC_TEST_S3_BUCKET): embedded store only");

const location = (kind: "sqlite" | "s3", name: string): L.Location => (kind === "sqlite" ? L.sqliteLocation(root) : L.s3Location(s3!, name));

const rows: Row[] = [];
const started = performance.now();
// Other work on the machine skews every number; the load is printed with the table.
const loadBefore = loadavg()[0]!;
async function stage(name: string, fn: () => Promise<Row[]>): Promise<void> {
  const t0 = performance.now();
  L.log(`${name} …`);
  const got = await fn();
  rows.push(...got);
  for (const r of got) L.log(`  ${r.scenario} ${r.store}: ${r.median.toFixed(1)} ${r.unit}${r.ratio !== null ? ` (${r.ratio.toFixed(2)}×)` : ""}${r.note ? ` — ${r.note}` : ""}`);
  L.log(`${name} done in ${((performance.now() - t0) / 1000).toFixed(0)} s`);
}

try {
  for (const kind of stores) {
    if (only.has("start-up")) await stage(`start-up (${kind})`, () => startupScenario(location(kind, "startup"), REPS.startup));
  }
  for (const kind of stores) {
    if (only.has("warm-commit") || only.has("warm-pull")) await stage(`warm-commit/warm-pull (${kind})`, () => warmScenarios(location(kind, "warm"), REPS.warm));
  }
  for (const kind of stores) {
    if (only.has("warm-commit") || only.has("no-change") || only.has("cli")) await stage(`warm-commit/no-change cli, whole processes (${kind})`, () => cliScenarios(location(kind, "cli"), REPS.cli));
  }
  const curve = curveFlag === undefined ? REPS.curve : curveFlag.split(",").map(Number);
  for (const kind of stores) {
    // On S3 through a proxy adding no delay, which counts the requests per commit.
    const run = () => (kind === "s3" && !noProxy ? s3RaceScenario(s3!, curve, REPS.raceCommits) : raceScenario(location(kind, "race"), curve, REPS.raceCommits));
    if (only.has("race")) await stage(`race (${kind})`, run);
  }
  for (const kind of stores) {
    if (only.has("open-loop")) await stage(`open-loop (${kind})`, () => openLoopScenario(location(kind, "open-loop"), REPS.openLoop));
  }
  if (only.has("latency") && stores.includes("s3")) {
    await stage(`warm-commit/warm-pull/race at +${LATENCY_MS} ms a round trip (s3)`, () => latencyScenarios(s3!, REPS.warm, REPS.raceCommits));
  }
  for (const kind of stores) {
    if (only.has("cold-pull") || only.has("no-change") || only.has("pull-memory")) {
      await stage(`cold-pull/no-change/pull-memory 10,000 files (${kind})`, () => coldScenarios(location(kind, "cold"), REPS.cold, REPS.noop));
    }
  }
  for (const kind of stores) {
    if (only.has("long-history")) {
      await stage(`long-history (${kind})`, () => historyScenario(location(kind, "history"), location(kind, "history-one"), REPS.history, REPS.commits));
    }
  }
  for (const kind of stores) {
    if (only.has("bulk")) await stage(`BULK 50,000 files (${kind})`, () => bulkScenario(kind, (name) => location(kind, name), REPS.bulk));
  }
  for (const kind of stores) {
    if (only.has("team")) await stage(`team (${kind})`, () => teamScenario(kind, (name) => location(kind, name), team));
  }
  if (only.has("big") && stores.includes("sqlite")) await stage("BIG 100 MB file (sqlite)", () => bigFileScenario(location("sqlite", "big"), REPS.big));
  if (only.has("web") && stores.includes("sqlite")) await stage("WEB first screen (sqlite)", () => webScenario(REPS.web, REPS.publications));
} finally {
  L.removeDir(root);
}

const order = ["warm-commit", "warm-commit ref", "warm-commit cli", "warm-pull", "warm-pull ref", "cold-pull", "no-change commit", "no-change pull", "no-change first", "no-change cli", "no-change cli 10k", "no-change cli 50k", "long-history", "long-history +compact", "open-loop", "race", "race cpu", "race tail", "race rate", "race requests", "race cli", "race cli cpu", "race cli tail", "race cli rate", "race cli requests", "race curve", ...[1, 2, 4, 8, 32, 64].map((n) => `race ×${n}`), ...LATENCY_ROWS, "pull-memory", "start-up", "team none", "team", "team cli none", "team cli", "BIG merge", "BIG conflict", "BIG memory", "BULK commit", "BULK serve commit", "BULK pull", "BULK serve pull", "WEB"];
rows.sort((a, b) => order.indexOf(a.scenario) - order.indexOf(b.scenario));
const gitVersion = spawnSync("git", ["--version"], { encoding: "utf8" }).stdout.trim();
const machine = `${cpus().length} × ${cpus()[0]?.model ?? "cpu"}, ${(totalmem() / 2 ** 30).toFixed(0)} GB; bun ${Bun.version}; ${gitVersion}; S3: ${s3 ? "Ceph RGW (test/support/ceph-rgw.sh)" : "none"}`;
const minutes = ((performance.now() - started) / 60000).toFixed(1);
const load = `load average ${loadBefore.toFixed(1)} at start, ${loadavg()[0]!.toFixed(1)} at end`;
const table = renderTable(rows);
const profiles = renderProfiles(rows);
process.stdout.write(`\n${machine}; ${minutes} min; ${load}\n\n${table}\n\n${profiles}\n`);
if (out) writeFileSync(out, `${JSON.stringify({ machine, minutes, load, rows }, null, 2)}\n`);
const unmet = rows.filter((r) => r.met === false).length;
process.stdout.write(`\n${rows.filter((r) => r.met === true).length} bars met, ${unmet} not met (see docs/performance.md)\n`);
