/**
 * cold-pull, pull-memory and no-change on one 10,000-file notebook (~40 MB, 100 files a directory):
 *
 * cold-pull — a cold pull (fresh private state, empty directory) through a fresh
 *      MCP server, against `git clone file://…` of the same tree (≤ 1.5×).
 * pull-memory — the server's peak resident memory (VmHWM) during that pull (≤ 256 MB).
 * no-change — on the pulled checkout, a commit and a pull with nothing changed
 *      through a warm server, each against `git status` on the same tree
 *      (≤ 1×: a server already holds what git reads from its index at
 *      every start); and "no-change cli 10k",
 *      the no-change pull as a whole CLI process on a checkout of its own,
 *      against `git status` with its flags pinned (≤ 1.5×).
 *
 * The two sides alternate, clone and pull, each rep: every timed side
 * follows the removal of the other's 10,000 files. The order matters here:
 * on this machine's ext4 (no journal) creating files right after many were
 * deleted costs several times more (the inode allocator skips recently
 * freed inodes), so timing one side after the other's clean-up, and not the
 * other way round, measured the file system rather than the code.
 */
import { join } from "node:path";
import * as L from "./lib.ts";
import type { Row } from "./report.ts";
import { RACY_PAUSE_MS } from "./warm.bench.ts";

export const COLD_FILES = 10_000;
const BYTES_PER_FILE = 4096;

interface GitWorld {
  dir: string;
  url: string;
  work: string;
  env: Record<string, string>;
}

function gitWorld(files: Map<string, string>): GitWorld {
  const dir = L.tempDir("cold-git");
  return { dir, ...L.gitWorld(dir, files) };
}

/** One timed `git clone`, then its removal. */
async function timeClone(w: GitWorld, i: number): Promise<number> {
  const target = join(w.dir, `clone-${i}`);
  const ms = await L.timeProcess("git", ["clone", "-q", w.url, target], { cwd: w.dir, env: w.env });
  L.removeDir(target);
  return ms;
}

/** `git status` with a warm index, as a user runs it between edits. */
async function timeStatus(w: GitWorld, reps: number): Promise<number[]> {
  await L.timeProcess("git", L.GIT_STATUS_ARGS, { cwd: w.work, env: w.env });
  const status: number[] = [];
  for (let i = 0; i < reps; i++) status.push(await L.timeProcess("git", L.GIT_STATUS_ARGS, { cwd: w.work, env: w.env }));
  return status;
}

export async function coldScenarios(loc: L.Location, reps: number, noopReps: number): Promise<Row[]> {
  const root = L.tempDir(`cold-${loc.kind}`);
  const files = L.notebookFiles(COLD_FILES, BYTES_PER_FILE, 3);
  const store = loc.open();
  let server: L.Server | null = null;
  let git: GitWorld | null = null;
  try {
    const t = await L.timed(() => L.seedNotebook(L.engineDepsFor(store, loc, join(root, "seed-private")), join(root, "seed"), files));
    L.log(`  seeded ${COLD_FILES} files on ${loc.label} in ${(t.ms / 1000).toFixed(1)} s`);
    L.removeDir(join(root, "seed"));
    L.removeDir(join(root, "seed-private"));
    git = gitWorld(files);
    const gitBytes = L.treeBytes(files);

    const clones: number[] = [];
    const pulls: number[] = [];
    const peaks: number[] = [];
    const profiles: L.Completion[] = [];
    for (let i = 0; i < reps; i++) {
      clones.push(await timeClone(git, i));
      server = await L.startServer(loc, {
        privateRoot: join(root, `private-${i}`),
        workspace: join(root, `ws-${i}`),
        home: join(root, "home"),
      });
      const pulled = await L.timed(() => server!.call("notes_pull", {}));
      pulls.push(pulled.ms);
      peaks.push(server.peakMb());
      profiles.push(...server.completions);
      if (i < reps - 1) {
        await server.close();
        server = null;
        L.removeDir(join(root, `ws-${i}`));
        L.removeDir(join(root, `private-${i}`));
      }
    }
    const status = await timeStatus(git, noopReps);

    // no-change on the last pulled checkout. One call of each first, not counted:
    // the first commit after a cold pull reads again the files the pull
    // wrote in its last 100 ms, the stat cache's racy window (reported as
    // "no-change first"); then a pause past that window, as in warm.bench.ts.
    const warm = await L.timed(() => server!.call("notes_commit", { message: "nothing changed" }));
    L.log(`  first commit after the cold pull: ${warm.ms.toFixed(0)} ms`);
    await server!.call("notes_pull", {});
    await Bun.sleep(RACY_PAUSE_MS);
    const first = server!.completions.length;
    const noopCommit: number[] = [];
    const noopPull: number[] = [];
    for (let i = 0; i < noopReps; i++) {
      noopCommit.push((await L.timed(() => server!.call("notes_commit", { message: "nothing changed" }))).ms);
      noopPull.push((await L.timed(() => server!.call("notes_pull", {}))).ms);
    }
    const noop = server!.completions.slice(first);
    const commitProfile = L.stageMedians(noop.filter((c) => c.tool === "notes_commit"));
    const pullProfile = L.stageMedians(noop.filter((c) => c.tool === "notes_pull"));

    // no-change cli 10k: the same no-change pull as a whole CLI process, on a
    // checkout of its own, alternated with `git status` (flags pinned) and
    // the runtime's own start.
    const cli = L.cliCheckout(L.BINARY, loc, root, "cli");
    await L.timeCli(cli, "pull");
    await Bun.sleep(RACY_PAUSE_MS);
    const [cliPulls, cliVersions, cliStatus] = await L.alternate(noopReps, [
      () => L.timeCli(cli, "pull"),
      () => L.timeVersion(cli),
      () => L.timeProcess("git", L.GIT_STATUS_ARGS, { cwd: git!.work, env: git!.env }),
    ]);
    const cliPullM = L.median(cliPulls!);
    const cliStatusM = L.median(cliStatus!);

    const pullM = L.median(pulls);
    const cloneM = L.median(clones);
    const statusM = L.median(status);
    const peakM = L.median(peaks);
    const mb = (gitBytes / 1e6).toFixed(0);
    return [
      {
        scenario: "cold-pull",
        store: loc.label,
        what: `cold pull, ${COLD_FILES.toLocaleString("en")} files / ${mb} MB, MCP`,
        median: pullM,
        unit: "ms",
        comparison: "git clone file://",
        comparisonMedian: cloneM,
        ratio: pullM / cloneM,
        bar: "≤ 1.5×",
        met: pullM / cloneM <= 1.5,
        samples: reps,
        values: pulls,
        comparisonValues: clones,
        profile: L.stageMedians(profiles),
      },
      {
        scenario: "no-change commit",
        store: loc.label,
        what: `commit, nothing changed, ${COLD_FILES.toLocaleString("en")} files`,
        median: L.median(noopCommit),
        unit: "ms",
        comparison: "git status",
        comparisonMedian: statusM,
        ratio: L.median(noopCommit) / statusM,
        bar: "≤ 1×",
        met: L.median(noopCommit) / statusM <= 1,
        samples: noopReps,
        values: noopCommit,
        comparisonValues: status,
        profile: commitProfile,
      },
      {
        scenario: "no-change first",
        store: loc.label,
        what: "first commit after the cold pull, nothing changed",
        median: warm.ms,
        unit: "ms",
        comparison: "git status",
        comparisonMedian: statusM,
        ratio: warm.ms / statusM,
        bar: "—",
        met: null,
        samples: 1,
        note: "reads again the files the pull wrote within the racy window",
      },
      {
        scenario: "no-change pull",
        store: loc.label,
        what: `pull, nothing changed, ${COLD_FILES.toLocaleString("en")} files`,
        median: L.median(noopPull),
        unit: "ms",
        comparison: "git status",
        comparisonMedian: statusM,
        ratio: L.median(noopPull) / statusM,
        bar: "≤ 1×",
        met: L.median(noopPull) / statusM <= 1,
        samples: noopReps,
        values: noopPull,
        comparisonValues: status,
        profile: pullProfile,
      },
      {
        scenario: "no-change cli 10k",
        store: loc.label,
        what: `CLI pull, nothing changed, ${COLD_FILES.toLocaleString("en")} files, whole process`,
        median: cliPullM,
        unit: "ms",
        comparison: "git status --porcelain",
        comparisonMedian: cliStatusM,
        ratio: cliPullM / cliStatusM,
        bar: "≤ 1.5×",
        met: cliPullM / cliStatusM <= 1.5,
        samples: noopReps,
        values: cliPulls,
        comparisonValues: cliStatus,
        note: `--version ${L.median(cliVersions!).toFixed(1)} ms`,
        profile: L.processProfile(cliPullM, L.median(cliVersions!)),
      },
      {
        scenario: "pull-memory",
        store: loc.label,
        what: "server peak memory (VmHWM) during cold-pull",
        median: peakM,
        unit: "MB",
        comparison: "",
        comparisonMedian: null,
        ratio: null,
        bar: "≤ 256 MB",
        met: peakM <= 256,
        samples: reps,
        values: peaks,
        note: `max ${Math.max(...peaks).toFixed(0)} MB`,
        profile: L.stageMedians(profiles),
      },
    ];
  } finally {
    await server?.close();
    await store.close();
    await loc.dispose();
    if (git) L.removeDir(git.dir);
    L.removeDir(root);
  }
}
