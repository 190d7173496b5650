/**
 * The benchmark suite (`npm run bench`; not a test). Runs S1–S9 against the
 * embedded store and, when the environment names an S3 server (build/bench.mjs
 * starts Ceph RGW), against S3; every comparison is measured in the same run.
 * Prints one Markdown table of medians with their ratios and bars, then the
 * stage profile of each row that misses its bar.
 *
 * `--only CLI` runs the 16-file CLI rows alone (S1 cli, S4 cli; also run with S1 or S4).
 * `--only LATENCY` runs S1, S2 and S6 on S3 behind a proxy adding 20 ms a round
 * trip (latency.bench.ts) alone; they are not run by S1, S2 or S6.
 * `--only BIG` runs the 100 MB file rows (BIG merge, BIG conflict, BIG memory; embedded store),
 * which are not in the default run: a few minutes of writing, packing and merging 100 MB.
 * `--only WEB` runs the web page's first screen with 10,000 publications
 * against 10 (web.bench.ts; embedded store, Debian's Chromium), which the
 * default run leaves out: making the 10,000 takes a few minutes.
 * `--only BULK` runs the 50,000-file rows (first commit and cold pull, peak
 * memory; bulk.bench.ts), which the default run leaves out: writing the
 * files alone takes a minute or more, and each rep several.
 *
 *   bun test/bench/run.ts [--only S1,S3,…,CLI] [--store sqlite|s3] [--quick] [--curve 1,16] [--team 8x15x200] [--out FILE.json]
 *
 * The scenarios and what their bars mean: docs/performance.md.
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
import { CURVE, raceScenario } from "./race.bench.ts";
import { renderProfiles, renderTable, type Row } from "./report.ts";
import { startupScenario } from "./startup.bench.ts";
import { TEAM, teamScenario, type TeamSizes } from "./team.bench.ts";
import { warmScenarios } from "./warm.bench.ts";
import { webScenario } from "./web.bench.ts";

function flag(name: string): string | undefined {
  const i = process.argv.indexOf(name);
  return i >= 0 ? process.argv[i + 1] : undefined;
}

const only = new Set((flag("--only") ?? "S1,S2,S3,S4,S5,S6,S7,S8,S9,LATENCY").split(",").map((s) => s.trim().toUpperCase()));
const quick = process.argv.includes("--quick");
const storeFilter = flag("--store");
const out = flag("--out");
// S6's writer counts (`--curve 16`: only the bar row and its process-per-commit row), for measuring one change quickly.
const curveFlag = flag("--curve");
// S9's team (`--team 2x3x20`: agents × rounds × tasks); its bar holds at the default only.
const teamFlag = flag("--team");

/** Repetitions: a few for the big scenarios, more for the cheap ones (about 12 minutes on 2 cores). */
const REPS = quick
  ? { warm: 3, cold: 1, noop: 3, history: 1, commits: 100, startup: 5, cli: 5, curve: [1, 4, 16], raceCommits: 5, team: { ...TEAM, rounds: 5 }, big: 1, bulk: 1, web: 5, publications: 1000 }
  : { warm: 9, cold: 3, noop: 7, history: 3, commits: 1000, startup: 15, cli: 15, curve: CURVE, raceCommits: 20, team: TEAM, big: 3, bulk: 3, web: 5, publications: 10_000 };
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
    if (only.has("S8")) await stage(`S8 start-up (${kind})`, () => startupScenario(location(kind, "startup"), REPS.startup));
  }
  for (const kind of stores) {
    if (only.has("S1") || only.has("S2")) await stage(`S1/S2 warm calls (${kind})`, () => warmScenarios(location(kind, "warm"), REPS.warm));
  }
  for (const kind of stores) {
    if (only.has("S1") || only.has("S4") || only.has("CLI")) await stage(`S1/S4 cli, whole processes (${kind})`, () => cliScenarios(location(kind, "cli"), REPS.cli));
  }
  for (const kind of stores) {
    if (only.has("S6")) await stage(`S6 race (${kind})`, () => raceScenario(location(kind, "race"), curveFlag === undefined ? REPS.curve : curveFlag.split(",").map(Number), REPS.raceCommits));
  }
  if (only.has("LATENCY") && stores.includes("s3")) {
    await stage(`S1/S2/S6 at +${LATENCY_MS} ms a round trip (s3)`, () => latencyScenarios(s3!, REPS.warm, REPS.raceCommits));
  }
  for (const kind of stores) {
    if (only.has("S3") || only.has("S4") || only.has("S7")) {
      await stage(`S3/S4/S7 10,000 files (${kind})`, () => coldScenarios(location(kind, "cold"), REPS.cold, REPS.noop));
    }
  }
  for (const kind of stores) {
    if (only.has("S5")) {
      await stage(`S5 history (${kind})`, () => historyScenario(location(kind, "history"), location(kind, "history-one"), REPS.history, REPS.commits));
    }
  }
  for (const kind of stores) {
    if (only.has("BULK")) await stage(`BULK 50,000 files (${kind})`, () => bulkScenario(kind, (name) => location(kind, name), REPS.bulk));
  }
  for (const kind of stores) {
    if (only.has("S9")) await stage(`S9 team (${kind})`, () => teamScenario(kind, (name) => location(kind, name), team));
  }
  if (only.has("BIG") && stores.includes("sqlite")) await stage("BIG 100 MB file (sqlite)", () => bigFileScenario(location("sqlite", "big"), REPS.big));
  if (only.has("WEB") && stores.includes("sqlite")) await stage("WEB first screen (sqlite)", () => webScenario(REPS.web, REPS.publications));
} finally {
  L.removeDir(root);
}

const order = ["S1", "S1 ref", "S1 cli", "S2", "S2 ref", "S3", "S4 commit", "S4 pull", "S4 first", "S4 cli", "S4 cli 10k", "S4 cli 50k", "S5", "S5 +compact", "S6", "S6 cpu", "S6 tail", "S6 rate", "S6 cli", "S6 cli cpu", "S6 cli tail", "S6 cli rate", ...CURVE.map((n) => `S6 ×${n}`), ...LATENCY_ROWS, "S7", "S8", "S9 none", "S9", "S9 cli none", "S9 cli", "BIG merge", "BIG conflict", "BIG memory", "BULK commit", "BULK serve commit", "BULK pull", "BULK serve pull", "WEB"];
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
