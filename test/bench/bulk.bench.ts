/**
 * BULK (`--only BULK`, not in the default run: writing the files alone takes
 * a minute or more): a notebook of 50,000 files of about 5.6 KB (281 MB), as
 * a team's notebook grows to after a long time.
 *
 * - "BULK commit": its first commit, as one whole CLI process (pulled
 *   empty, then the files written, then `slivingdoc commit`), and "BULK
 *   pull": a cold pull of it into an empty directory, also a whole process;
 *   each with the process's peak resident memory (its maximum RSS, as
 *   `/usr/bin/time` reports it) against the bar, ≤ 256 MB.
 * - "BULK serve commit" / "BULK serve pull": the same through `serve`
 *   (a fresh notebook of its own), its VmHWM read after each call.
 *
 * The times are information, beside C git's on the same files in the same
 * run: `git add -A` and `git commit` of the checkout's files, and `git
 * clone` of them over file://.
 *
 * - "no-change cli 50k": on the checkout the first cold pull made, a pull with
 *   nothing changed, as a whole CLI process, against `git status` (its
 *   flags pinned) on the same files, alternated (≤ 1.5×).
 */
import { spawn } from "node:child_process";
import { existsSync, mkdirSync, readdirSync, renameSync } from "node:fs";
import { join } from "node:path";
import * as L from "./lib.ts";
import type { Row } from "./report.ts";

export const BULK_FILES = 50_000;
const BYTES_PER_FILE = 5_600;
const BAR_MB = 256;
const TIME = "/usr/bin/time";

/** One whole process, timed, with its peak resident memory in MB (GNU time's maximum RSS). */
async function peakProcess(cmd: string, args: string[], env: Record<string, string>): Promise<{ ms: number; mb: number }> {
  const t0 = performance.now();
  const child = spawn(TIME, ["-f", "slivingdoc-bench-maxrss %M", cmd, ...args], { env, stdio: ["ignore", "ignore", "pipe"] });
  let err = "";
  child.stderr.on("data", (chunk: Buffer) => {
    err = (err + chunk.toString("utf8")).slice(-8000);
  });
  const code = await new Promise<number | null>((resolve) => child.on("close", resolve));
  const ms = performance.now() - t0;
  const m = /slivingdoc-bench-maxrss (\d+)/.exec(err);
  if (code !== 0 || !m) throw new Error(`${cmd} ${args[0]} exited ${code}: ${err.slice(0, 2000)}`);
  return { ms, mb: Number(m[1]) / 1024 };
}

/** Move every top-level entry of `from` into `to` (the files are written once, then handed from checkout to checkout). */
function moveAll(from: string, to: string): void {
  mkdirSync(to, { recursive: true });
  for (const name of readdirSync(from)) renameSync(join(from, name), join(to, name));
}

function peakRow(scenario: string, store: string, what: string, runs: Array<{ ms: number; mb: number }>, comparison: string, comparisonMs: number[]): Row {
  const mb = L.median(runs.map((r) => r.mb));
  const ms = L.median(runs.map((r) => r.ms));
  const refMs = L.median(comparisonMs);
  return {
    scenario,
    store,
    what,
    median: mb,
    unit: "MB",
    comparison: "",
    comparisonMedian: null,
    ratio: null,
    bar: `≤ ${BAR_MB} MB`,
    met: mb <= BAR_MB,
    samples: runs.length,
    values: runs.map((r) => r.mb),
    note: `max ${Math.max(...runs.map((r) => r.mb)).toFixed(0)} MB; ${(ms / 1000).toFixed(1)} s, ${comparison} ${(refMs / 1000).toFixed(1)} s (${(ms / refMs).toFixed(2)}×)`,
  };
}

/**
 * `location(name)` gives a fresh notebook location; each rep commits to
 * new ones (a first commit needs an empty store).
 */
export async function bulkScenario(kind: "sqlite" | "s3", location: (name: string) => L.Location, reps: number): Promise<Row[]> {
  if (!existsSync(TIME)) throw new Error(`BULK reads peak memory with GNU time, and ${TIME} is not there (apt-get install time)`);
  const root = L.tempDir(`bulk-${kind}`);
  const locations: L.Location[] = [];
  const fresh = (name: string) => {
    const loc = location(name);
    locations.push(loc);
    return loc;
  };
  const commits: Array<{ ms: number; mb: number }> = [];
  const pulls: Array<{ ms: number; mb: number }> = [];
  const serveCommits: Array<{ ms: number; mb: number }> = [];
  const servePulls: Array<{ ms: number; mb: number }> = [];
  const gitCommits: number[] = [];
  const clones: number[] = [];
  let noChange: { pulls: number[]; versions: number[]; statuses: number[] } | null = null;
  // The notebook's files, written once and moved from checkout to checkout.
  const files = join(root, "files");
  try {
    const tree = L.notebookFiles(BULK_FILES, BYTES_PER_FILE, 7);
    const bytes = L.treeBytes(tree);
    const t = await L.timed(async () => L.writeTree(files, tree));
    L.log(`  wrote ${BULK_FILES.toLocaleString("en")} files (${(bytes / 1e6).toFixed(0)} MB) in ${(t.ms / 1000).toFixed(0)} s`);
    const env = L.gitEnv(join(root, "git-home"));
    for (let i = 0; i < reps; i++) {
      // C git: add and commit the same files (a git directory beside them), then a clone over file://.
      const gitDir = join(root, `git-${i}.git`);
      const bare = join(root, `bare-${i}.git`);
      L.git(env, root, "--git-dir", gitDir, "init", "-q", "-b", "main");
      const gitArgs = ["--git-dir", gitDir, "--work-tree", files];
      const add = await L.timeProcess("git", [...gitArgs, "add", "-A"], { cwd: root, env });
      const commit = await L.timeProcess("git", [...gitArgs, "commit", "-q", "-m", "first"], { cwd: root, env });
      gitCommits.push(add + commit);
      L.git(env, root, "init", "-q", "--bare", "-b", "main", bare);
      L.git(env, root, ...gitArgs, "push", "-q", `file://${bare}`, "main");
      const clone = join(root, `clone-${i}`);
      clones.push(await L.timeProcess("git", ["clone", "-q", `file://${bare}`, clone], { cwd: root, env }));
      L.removeDir(clone);
      L.removeDir(bare);
      L.removeDir(gitDir);

      // The CLI, whole processes.
      const loc = fresh(`bulk-cli-${i}`);
      const writer = L.cliCheckout(L.BINARY, loc, root, `cli-w${i}`);
      await L.timeCli(writer, "pull");
      moveAll(files, writer.dir);
      try {
        commits.push(await peakProcess(writer.binary, ["commit", writer.dir, "-m", "first", ...writer.flags, "--deadline", "30m"], writer.env));
      } finally {
        moveAll(writer.dir, files);
      }
      const reader = L.cliCheckout(L.BINARY, loc, root, `cli-r${i}`);
      pulls.push(await peakProcess(reader.binary, ["pull", reader.dir, ...reader.flags, "--deadline", "30m"], reader.env));
      if (i === 0) noChange = await noChangePulls(reader, env, join(root, "status.git"), Math.max(3, reps * 3));
      L.removeDir(reader.dir);
      L.removeDir(`${reader.dir}-private`);
      L.removeDir(`${writer.dir}-private`);
      await loc.dispose();

      // Through `serve`: a server that commits them, then a fresh one that pulls.
      const sloc = fresh(`bulk-serve-${i}`);
      const ws = join(root, `serve-w${i}`);
      const server = await L.startServer(sloc, { privateRoot: join(root, `serve-p${i}`), workspace: ws, home: join(root, "home"), extraArgs: ["--deadline", "30m"] });
      try {
        await server.call("notes_pull", {});
        moveAll(files, ws);
        try {
          const done = await L.timed(() => server.call("notes_commit", { message: "first" }));
          serveCommits.push({ ms: done.ms, mb: server.peakMb() });
        } finally {
          moveAll(ws, files);
        }
      } finally {
        await server.close();
      }
      const cold = await L.startServer(sloc, { privateRoot: join(root, `serve-q${i}`), workspace: join(root, `serve-r${i}`), home: join(root, "home"), extraArgs: ["--deadline", "30m"] });
      try {
        const done = await L.timed(() => cold.call("notes_pull", {}));
        servePulls.push({ ms: done.ms, mb: cold.peakMb() });
      } finally {
        await cold.close();
      }
      L.removeDir(join(root, `serve-r${i}`));
      L.removeDir(join(root, `serve-p${i}`));
      L.removeDir(join(root, `serve-q${i}`));
      await sloc.dispose();
    }
    const label = locations[0]!.label;
    const n = BULK_FILES.toLocaleString("en");
    const mb = (bytes / 1e6).toFixed(0);
    const noop = noChange!;
    const noopM = L.median(noop.pulls);
    const statusM = L.median(noop.statuses);
    return [
      {
        scenario: "no-change cli 50k",
        store: label,
        what: `CLI pull, nothing changed, ${n} files, whole process`,
        median: noopM,
        unit: "ms",
        comparison: "git status --porcelain",
        comparisonMedian: statusM,
        ratio: noopM / statusM,
        bar: "≤ 1.5×",
        met: noopM / statusM <= 1.5,
        samples: noop.pulls.length,
        values: noop.pulls,
        comparisonValues: noop.statuses,
        note: `--version ${L.median(noop.versions).toFixed(1)} ms`,
        profile: L.processProfile(noopM, L.median(noop.versions)),
      },
      peakRow("BULK commit", label, `first commit, ${n} files / ${mb} MB, CLI, whole-process peak RSS`, commits, "git add -A + git commit", gitCommits),
      peakRow("BULK pull", label, `cold pull of it into an empty directory, CLI, whole-process peak RSS`, pulls, "git clone", clones),
      peakRow("BULK serve commit", label, `first commit, ${n} files, through serve, server VmHWM`, serveCommits, "git add -A + git commit", gitCommits),
      peakRow("BULK serve pull", label, "cold pull of it through a fresh serve, server VmHWM", servePulls, "git clone", clones),
    ];
  } finally {
    for (const loc of locations) await loc.dispose().catch(() => {});
    L.removeDir(root);
  }
}

/**
 * A pull with nothing changed of the checkout `reader` (just pulled), whole
 * processes, alternated with `--version` and with `git status` on the same
 * files (a git directory of their own beside them, flags pinned).
 */
async function noChangePulls(reader: L.CliCheckout, env: Record<string, string>, gitDir: string, rounds: number) {
  const gitArgs = ["--git-dir", gitDir, "--work-tree", reader.dir];
  L.git(env, reader.dir, "--git-dir", gitDir, "init", "-q", "-b", "main");
  L.git(env, reader.dir, ...gitArgs, "add", "-A");
  L.git(env, reader.dir, ...gitArgs, "commit", "-q", "-m", "files");
  if (L.git(env, reader.dir, ...gitArgs, ...L.GIT_STATUS_ARGS) !== "") throw new Error("git status is not clean");
  try {
    const [pulls, versions, statuses] = await L.alternate(rounds, [
      () => L.timeCli(reader, "pull"),
      () => L.timeVersion(reader),
      () => L.timeProcess("git", [...gitArgs, ...L.GIT_STATUS_ARGS], { cwd: reader.dir, env }),
    ]);
    return { pulls: pulls!, versions: versions!, statuses: statuses! };
  } finally {
    L.removeDir(gitDir);
  }
}
