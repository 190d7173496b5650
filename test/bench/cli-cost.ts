/**
 * The CLI's own cost of a no-change pull, whole processes: `slivingdoc pull
 * DIR` of a 16-file notebook in the embedded store, beside the runtime's own
 * start (`slivingdoc --version`) and `git status --porcelain` on the same
 * files (plain: no untracked cache, no fsmonitor). The three alternate, so
 * a shared machine's noise falls on each alike; medians and the spread
 * (p10–p90) are reported, and the ratio (pull − version) / git status.
 *
 *   bun test/bench/cli-cost.ts [runs]        (default 30; SLIVINGDOC_BENCH_BINARY picks the binary)
 */
import { execFileSync } from "node:child_process";
import { join } from "node:path";
import * as L from "./lib.ts";

const runs = Number(process.argv[2] ?? 30);
const root = L.tempDir("cli-cost");
try {
  const files = L.notebookFiles(16, 2048);
  const home = join(root, "home");
  const dir = join(root, "notebook");
  const env = {
    PATH: process.env.PATH ?? "/usr/bin:/bin",
    HOME: home,
    SLIVINGDOC_STORE: `sqlite:${join(root, "store.db")}`,
    SLIVINGDOC_PRIVATE_ROOT: join(root, "private"),
  };
  // A new notebook: pulled empty once, then its files committed.
  execFileSync(L.BINARY, ["pull", dir], { env, stdio: "ignore" });
  L.writeTree(dir, files);
  execFileSync(L.BINARY, ["commit", dir, "-m", "seed"], { env, stdio: "ignore" });
  // The reference: the same files committed in a plain git repository.
  const world = L.gitWorld(join(root, "git"), files);
  const gitArgs = ["-c", "core.untrackedCache=false", "-c", "core.fsmonitor=false", "status", "--porcelain"];
  if (L.git(world.env, world.work, ...gitArgs) !== "") throw new Error("git status is not clean");
  // Warm every cache once, uncounted.
  await L.timeProcess(L.BINARY, ["pull", dir], { env });
  await L.timeProcess(L.BINARY, ["--version"], { env });
  await L.timeProcess("git", gitArgs, { cwd: world.work, env: world.env });
  const pull: number[] = [];
  const version: number[] = [];
  const status: number[] = [];
  for (let i = 0; i < runs; i++) {
    pull.push(await L.timeProcess(L.BINARY, ["pull", dir], { env }));
    version.push(await L.timeProcess(L.BINARY, ["--version"], { env }));
    status.push(await L.timeProcess("git", gitArgs, { cwd: world.work, env: world.env }));
  }
  const row = (name: string, xs: number[]) =>
    `${name.padEnd(22)} median ${L.median(xs).toFixed(1).padStart(6)} ms   p10–p90 ${L.percentile(xs, 10).toFixed(1)}–${L.percentile(xs, 90).toFixed(1)} ms`;
  console.log(`${runs} alternated runs of each, ${L.BINARY}`);
  console.log(row("pull (no change)", pull));
  console.log(row("--version", version));
  console.log(row("git status --porcelain", status));
  const own = L.median(pull) - L.median(version);
  console.log(`pull's own work (pull − version): ${own.toFixed(1)} ms; ÷ git status: ${(own / L.median(status)).toFixed(2)}×`);
} finally {
  L.removeDir(root);
}
