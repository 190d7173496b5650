/**
 * The CLI's own cost, as agents with a shell pay it: every call a new
 * process. On a 16-file notebook, alternated round by round with the
 * runtime's own start (`slivingdoc --version`) and C git:
 *
 * no-change cli — a no-change `pull`, its own work (pull − `--version`, both
 *          medians from the same rounds) against `git status --porcelain`
 *          on the same files (bar ≤ 2×). On S3 the pull's process also loads
 *          the S3 client: that is part of its cost.
 * warm-commit cli — a commit of one changed file, whole process (info, beside warm-commit:
 *          its notebook is 16 files, not warm-commit's 1,000; the comparison is
 *          `--version`, and the note gives its own work).
 *
 * The same no-change pull at 10,000 files is "no-change cli 10k" (cold.bench.ts,
 * on cold-pull/no-change's notebook). test/bench/cli-cost.ts runs the pull row alone,
 * for a before/after of several binaries.
 */
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import * as L from "./lib.ts";
import type { Row } from "./report.ts";
import { RACY_PAUSE_MS } from "./warm.bench.ts";

export const CLI_FILES = 16;
const BYTES_PER_FILE = 2048;

/** A new notebook at `loc` through the CLI: pulled empty once, then `files` committed. */
export function seedCliCheckout(c: L.CliCheckout, files: Map<string, string>): void {
  execFileSync(c.binary, ["pull", c.dir, ...c.flags], { env: c.env, stdio: "ignore" });
  L.writeTree(c.dir, files);
  execFileSync(c.binary, ["commit", c.dir, "-m", "seed", ...c.flags], { env: c.env, stdio: "ignore" });
}

/** The same files committed in a plain git repository; `git status` timed with the pinned flags. */
export function gitStatusOf(dir: string, files: Map<string, string>): () => Promise<number> {
  const world = L.gitWorld(dir, files);
  if (L.git(world.env, world.work, ...L.GIT_STATUS_ARGS) !== "") throw new Error("git status is not clean");
  return () => L.timeProcess("git", L.GIT_STATUS_ARGS, { cwd: world.work, env: world.env });
}

export async function cliScenarios(loc: L.Location, rounds: number): Promise<Row[]> {
  const root = L.tempDir(`cli-${loc.kind}`);
  try {
    const files = L.notebookFiles(CLI_FILES, BYTES_PER_FILE);
    const c = L.cliCheckout(L.BINARY, loc, root, "notebook");
    seedCliCheckout(c, files);
    const gitStatus = gitStatusOf(join(root, "git"), files);
    const changed = files.keys().next().value!;
    const [pulls, versions, status, commits] = await L.alternate(rounds, [
      () => L.timeCli(c, "pull"),
      () => L.timeVersion(c),
      gitStatus,
      async (i) => {
        L.writeTree(c.dir, new Map([[changed, `${readFileSync(join(c.dir, changed), "utf8")}line ${i}\n`]]));
        const ms = await L.timeCli(c, "commit", "-m", `change ${i}`);
        // The next round's pull must not fall in the stat cache's racy window of this write.
        await Bun.sleep(RACY_PAUSE_MS);
        return ms;
      },
    ]);
    const pullM = L.median(pulls!);
    const versionM = L.median(versions!);
    const statusM = L.median(status!);
    const commitM = L.median(commits!);
    const own = pullM - versionM;
    return [
      {
        scenario: "warm-commit cli",
        store: loc.label,
        what: `CLI commit, 1 of ${CLI_FILES} files changed, whole process`,
        median: commitM,
        unit: "ms",
        comparison: "slivingdoc --version (runtime start)",
        comparisonMedian: versionM,
        ratio: commitM / versionM,
        bar: "—",
        met: null,
        samples: rounds,
        values: commits,
        comparisonValues: versions,
        note: `own work ${(commitM - versionM).toFixed(1)} ms`,
        profile: L.processProfile(commitM, versionM),
      },
      {
        scenario: "no-change cli",
        store: loc.label,
        what: `CLI pull, nothing changed, ${CLI_FILES} files, own work (pull ${pullM.toFixed(1)} − --version ${versionM.toFixed(1)} ms)`,
        median: own,
        unit: "ms",
        comparison: "git status --porcelain",
        comparisonMedian: statusM,
        ratio: own / statusM,
        bar: "≤ 2×",
        met: own / statusM <= 2,
        samples: rounds,
        values: pulls,
        comparisonValues: status,
        profile: L.processProfile(pullM, versionM),
      },
    ];
  } finally {
    await loc.dispose();
    L.removeDir(root);
  }
}
