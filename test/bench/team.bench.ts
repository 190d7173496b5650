/**
 * team: a team's day. N agents (8) work R rounds (15) at once on one
 * notebook, each through its own MCP server (the built binary's `serve`,
 * driven as a host drives it) and, separately, each call its own CLI
 * process. Every round an agent pulls, appends a line to `shared/log.md`,
 * ticks an open task of `shared/tasks.md` (a board of T = 200) chosen at
 * random, rewrites `agents/K.md`, one round in four revises a line of
 * `shared/plan.md`, and commits. A conflict it resolves as an agent does
 * (team-agent.ts) and commits again; a retryable error it calls again.
 *
 * Run with no `.gitattributes` and with the recommended one (a union log, a
 * board whose lines stand alone). Measured: commits, conflicts per 100
 * commits (by file), the calls beyond one pull and one commit a round,
 * round time p50/p99, and what the notebook lost at the end.
 *
 * Bars (8 × 15, 200 tasks, with the attributes, both ways of running):
 * no conflict on the log (appends), at most 2 conflicts per 100 commits in
 * all, nothing lost and the board exact. The CLI runs on S3 are cut to
 * CLI_S3_ROUNDS rounds, and their rows say so and carry no verdict.
 */
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { pull } from "../../src/engine/pull.ts";
import { mulberry32 } from "../support/seeded.ts";
import * as A from "./team-agent.ts";
import * as L from "./lib.ts";
import type { Row } from "./report.ts";

/** The bar's sizes. */
export const TEAM = { agents: 8, rounds: 15, tasks: 200 };
export type TeamSizes = typeof TEAM;
/**
 * The rounds of the CLI runs on S3, at most: there every call is a process
 * that loads the S3 client, and a commit that crossed waits for other
 * publications to carry it before it answers a conflict (see the conflict
 * times in the rows), so the bar's 15 rounds would take team far past its
 * few minutes. The rows say so.
 */
export const CLI_S3_ROUNDS = 5;
/** Rounds in which an agent revises the plan: one in PLAN_EVERY, seeded. */
const PLAN_EVERY = 4;
/** A round's calls beyond this many are a runaway, not a measurement. */
const MAX_CALLS = 200;

export interface TeamOptions extends TeamSizes {
  mode: "serve" | "cli";
  /** Whether the notebook starts with the recommended `.gitattributes`. */
  attributes: boolean;
  /** The notebook is begun by `slivingdoc init`, as a new team begins it, instead of the seed's attributes. */
  init?: boolean;
  seed?: number;
  /** How an agent resolves a conflicted file (the agent's own unless a test breaks it). */
  resolver?: A.Resolver;
  /** Every agent pulls and edits before any commits, each round: every round crosses (tests). */
  lockstep?: boolean;
}

export interface TeamResult {
  options: TeamOptions;
  commits: number;
  /** Calls answered MERGE_CONFLICT. */
  conflicts: number;
  /** Of those, how many named each file. */
  conflictsByFile: Map<string, number>;
  /** PATH_CONFLICT entries (both files kept). */
  pathConflicts: number;
  /** Calls answered with a retryable error and called again. */
  retries: number;
  /** Calls beyond one pull and one commit a round. */
  extraCalls: number;
  /** How long each call answered MERGE_CONFLICT took (ms). */
  conflictMs: number[];
  roundMs: number[];
  wallMs: number;
  /** Generations published during the run (each accepted commit is one). */
  generations: number;
  losses: A.Losses;
  profile?: Record<string, number>;
}

type Outcome = L.CallOutcome;

interface Agent {
  dir: string;
  pull(): Promise<Outcome>;
  commit(message: string): Promise<Outcome>;
  close(): Promise<void>;
}

/** N agents, each with its own MCP server and checkout. */
async function serveAgents(loc: L.Location, root: string, n: number): Promise<{ agents: Agent[]; servers: L.Server[] }> {
  const servers = await L.startServers(loc, root, n);
  const agents = servers.map((s, i) => ({
    dir: join(root, `w${i}`),
    pull: () => s.tryCall("notes_pull", {}),
    commit: (message: string) => s.tryCall("notes_commit", { message }),
    close: () => s.close(),
  }));
  return { agents, servers };
}

/** N agents, every call a `slivingdoc pull|commit --json` process, as agents with a shell run it. */
function cliAgents(loc: L.Location, root: string, n: number): Agent[] {
  const run = L.cliRunner(loc, root);
  return Array.from({ length: n }, (_, i) => ({
    dir: join(root, `w${i}`),
    pull: () => run(i, "pull"),
    commit: (message: string) => run(i, "commit", "-m", message),
    close: async () => {},
  }));
}

/** All N agents wait here until the last arrives, once a round (lockstep). */
function barrier(n: number): () => Promise<void> {
  let waiting: Array<() => void> = [];
  return () =>
    new Promise<void>((resolve) => {
      waiting.push(resolve);
      if (waiting.length === n) {
        for (const r of waiting) r();
        waiting = [];
      }
    });
}

const read = (dir: string, path: string): string => readFileSync(join(dir, path), "utf8");

/** Run the team once on a fresh notebook at `loc`. */
export async function runTeam(loc: L.Location, opts: TeamOptions): Promise<TeamResult> {
  const root = L.tempDir(`team-${loc.kind}-${opts.mode}`);
  const store = loc.open();
  const resolver = opts.resolver ?? A.agentResolver;
  const seed = opts.seed ?? 9;
  let agents: Agent[] = [];
  let servers: L.Server[] = [];
  try {
    const seedFiles = new Map([
      [A.LOG, A.initialLog()],
      [A.BOARD, A.initialBoard(opts.tasks)],
      [A.PLAN, A.initialPlan()],
    ]);
    if (opts.attributes) seedFiles.set(".gitattributes", A.RECOMMENDED_ATTRIBUTES);
    if (opts.init) await L.cliInit(loc, root);
    const before = await L.seedNotebook(L.engineDepsFor(store, loc, join(root, "seed-private")), join(root, "seed"), seedFiles);
    if (opts.mode === "serve") ({ agents, servers } = await serveAgents(loc, root, opts.agents));
    else agents = cliAgents(loc, root, opts.agents);

    const tally = { commits: 0, conflicts: 0, conflictsByFile: new Map<string, number>(), pathConflicts: 0, retries: 0, extraCalls: 0, conflictMs: [] as number[] };
    const wrote = { logLines: [] as string[], lastNotes: new Map<number, string>(), ticked: new Set<number>(), tasks: opts.tasks };
    const roundMs: number[] = [];
    const arrive = barrier(opts.agents);

    /** One call until it is accepted: a conflict resolved, a retryable error called again. */
    const untilAccepted = async (agent: Agent, k: number, call: () => Promise<Outcome>): Promise<void> => {
      for (let calls = 1; ; calls++) {
        if (calls > MAX_CALLS) throw new Error(`agent ${k}: a round took over ${MAX_CALLS} calls`);
        const t0 = performance.now();
        const r = await call();
        if (r.ok) return;
        tally.extraCalls++;
        if (r.data.code === "CONTENT_CONFLICT" && r.data.reason === "MERGE_CONFLICT") {
          tally.conflicts++;
          tally.conflictMs.push(performance.now() - t0);
          for (const f of r.data.files as Array<{ path: string; reason: string }>) {
            tally.conflictsByFile.set(f.path, (tally.conflictsByFile.get(f.path) ?? 0) + 1);
            // A file against a directory: both are kept (the file beside it), nothing to edit.
            if (f.reason === "PATH_CONFLICT") tally.pathConflicts++;
            else writeFileSync(join(agent.dir, f.path), resolver(f.path, read(agent.dir, f.path)));
          }
        } else if (r.data.retryable === true) tally.retries++;
        else throw new Error(`agent ${k}: ${JSON.stringify(r.data)}`);
      }
    };

    const t0 = performance.now();
    await Promise.all(
      agents.map(async (agent, k) => {
        const rand = mulberry32(seed * 1000 + k);
        for (let round = 1; round <= opts.rounds; round++) {
          const started = performance.now();
          await untilAccepted(agent, k, () => agent.pull());
          const line = A.logLine(k, round);
          writeFileSync(join(agent.dir, A.LOG), `${read(agent.dir, A.LOG)}${line}\n`);
          wrote.logLines.push(line);
          const board = read(agent.dir, A.BOARD);
          const open = A.openTasks(board);
          const task = open.length === 0 ? null : open[Math.floor(rand() * open.length)]!;
          if (task !== null) {
            writeFileSync(join(agent.dir, A.BOARD), A.tick(board, task));
            wrote.ticked.add(task);
          }
          const notes = A.agentNotes(k, round, task);
          L.writeTree(agent.dir, new Map([[A.agentFile(k), notes]]));
          wrote.lastNotes.set(k, notes);
          if (rand() < 1 / PLAN_EVERY) {
            const step = 1 + Math.floor(rand() * A.PLAN_LINES);
            writeFileSync(join(agent.dir, A.PLAN), A.revisePlan(read(agent.dir, A.PLAN), step, A.planLine(step, k, round)));
          }
          if (opts.lockstep) await arrive();
          await untilAccepted(agent, k, () => agent.commit(`agent ${k} round ${round}`));
          tally.commits++;
          roundMs.push(performance.now() - started);
        }
      }),
    );
    const wallMs = performance.now() - t0;

    // What the notebook holds at the end: a fresh checkout of it.
    const check = join(root, "check");
    const out = await pull(L.engineDepsFor(store, loc, join(root, "check-private")), { path: check });
    const agentFile = (k: number): string | null => {
      try {
        return read(check, A.agentFile(k));
      } catch {
        return null;
      }
    };
    const losses = A.losses({ log: read(check, A.LOG), board: read(check, A.BOARD), agentFile }, wrote);
    const completions = servers.flatMap((s) => s.completions);
    return {
      options: opts,
      ...tally,
      roundMs,
      wallMs,
      generations: out.generation - before,
      losses,
      profile: completions.length > 0 ? L.stageMedians(completions) : undefined,
    };
  } finally {
    await Promise.all(agents.map((a) => a.close()));
    await store.close();
    L.removeDir(root);
  }
}

const per100 = (n: number, commits: number): number => (commits === 0 ? 0 : (100 * n) / commits);

function lossText(l: A.Losses): string {
  const total = A.lostTotal(l);
  if (total === 0) return "nothing lost, board exact";
  return `LOST ${total}: log ${l.logMissing} missing, ${l.logExtra} extra; ${l.agentsStale} agent files stale; board ${l.boardWrong} wrong`;
}

/** The row of one configuration; `without` is the same configuration's run with no attributes. */
function rowOf(loc: L.Location, r: TeamResult, without: TeamResult | null, bar: boolean, cut: boolean): Row {
  const o = r.options;
  const rate = per100(r.conflicts, r.commits);
  const appends = r.conflictsByFile.get(A.LOG) ?? 0;
  const byFile = [...r.conflictsByFile].sort((a, b) => b[1] - a[1]).map(([f, n]) => `${f} ${per100(n, r.commits).toFixed(1)}`);
  const note = [
    `${r.commits} commits in ${r.generations} generations`,
    `${r.conflicts} conflict${r.conflicts === 1 ? "" : "s"}${byFile.length > 0 ? ` (per 100 commits by file: ${byFile.join(", ")})` : ""}`,
    r.pathConflicts > 0 ? `${r.pathConflicts} path conflicts` : "",
    `${r.extraCalls} extra call${r.extraCalls === 1 ? "" : "s"} (${r.retries} retries)`,
    `round p50 ${L.percentile(r.roundMs, 50).toFixed(0)} ms, p99 ${L.percentile(r.roundMs, 99).toFixed(0)} ms`,
    r.conflictMs.length > 0 ? `a conflict answered in p50 ${L.percentile(r.conflictMs, 50).toFixed(0)} ms, max ${Math.max(...r.conflictMs).toFixed(0)} ms` : "",
    `${(r.wallMs / 1000).toFixed(1)} s`,
    lossText(r.losses),
  ]
    .filter(Boolean)
    .join("; ");
  const atBarSizes = o.agents === TEAM.agents && o.rounds === TEAM.rounds && o.tasks === TEAM.tasks;
  const barred = bar && o.attributes;
  const sizeNote = cut
    ? `; rounds cut to ${o.rounds} for a process per call on S3, to keep team within minutes (bar's sizes: ${TEAM.agents} × ${TEAM.rounds}, ${TEAM.tasks} tasks)`
    : barred && !atBarSizes
      ? `; not the bar's sizes (${TEAM.agents} × ${TEAM.rounds}, ${TEAM.tasks} tasks)`
      : "";
  return {
    scenario: `team${o.mode === "cli" ? " cli" : ""}${o.attributes ? "" : " none"}`,
    store: loc.label,
    what: `${o.agents} agents × ${o.rounds} rounds, ${o.tasks} tasks, ${o.mode === "cli" ? "a process per call" : "serve"}, ${o.attributes ? "recommended attributes" : "no attributes"}`,
    median: rate,
    unit: "conflicts/100 commits",
    comparison: without ? "same, no attributes" : "",
    comparisonMedian: without ? per100(without.conflicts, without.commits) : null,
    ratio: without && without.conflicts > 0 ? r.conflicts / r.commits / (without.conflicts / without.commits) : null,
    bar: barred ? "0 on the log, ≤ 2 in all, 0 lost" : "",
    met: barred && atBarSizes ? appends === 0 && rate <= 2 && A.lostTotal(r.losses) === 0 : null,
    samples: r.commits,
    values: r.roundMs,
    note: `${note}${sizeNote}`,
    profile: r.profile,
  };
}

/**
 * Both ways of running, each without and with the attributes, each on a
 * fresh notebook of store `kind` from `fresh`; the CLI runs on S3 with at
 * most CLI_S3_ROUNDS rounds.
 */
export async function teamScenario(kind: "sqlite" | "s3", fresh: (name: string) => L.Location, sizes: TeamSizes = TEAM): Promise<Row[]> {
  const rows: Row[] = [];
  for (const mode of ["serve", "cli"] as const) {
    const cut = mode === "cli" && kind === "s3" && sizes.rounds > CLI_S3_ROUNDS;
    const s = cut ? { ...sizes, rounds: CLI_S3_ROUNDS } : sizes;
    const results: TeamResult[] = [];
    for (const attributes of [false, true]) {
      const loc = fresh(`team-${mode}-${attributes ? "attrs" : "none"}`);
      try {
        results.push(await runTeam(loc, { ...s, mode, attributes }));
      } finally {
        await loc.dispose();
      }
      L.log(`  team ${loc.label} ${mode} ${attributes ? "attributes" : "none"}: ${rowOf(loc, results.at(-1)!, null, false, cut).note}`);
      if (attributes) rows.push(rowOf(loc, results[0]!, null, false, cut), rowOf(loc, results[1]!, results[0]!, true, cut));
    }
  }
  return rows;
}
