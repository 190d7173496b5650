/**
 * The CLI's own cost of a no-change pull, whole processes: `slivingdoc pull
 * DIR` of a 16-file notebook in the embedded store, beside the runtime's own
 * start (`slivingdoc --version`) and `git status --porcelain` on the same
 * files (plain: no untracked cache, no fsmonitor). Everything alternates, so
 * a shared machine's noise falls on each alike; medians and the spread
 * (p10–p90) are reported, and the ratio (pull − version) / git status.
 *
 *   bun test/bench/cli-cost.ts [runs] [binary...]
 *
 * runs defaults to 30; the binary to SLIVINGDOC_BENCH_BINARY or
 * dist/slivingdoc. Several binaries (a before and an after) alternate in
 * the same rounds, each on a notebook of its own, against the same git.
 */
import { execFileSync } from "node:child_process";
import { join } from "node:path";
import * as L from "./lib.ts";

const runs = Number(process.argv[2] ?? 30);
const binaries = process.argv.length > 3 ? process.argv.slice(3) : [L.BINARY];
const root = L.tempDir("cli-cost");
try {
  const files = L.notebookFiles(16, 2048);
  const subjects = binaries.map((binary, i) => {
    const home = join(root, `home-${i}`);
    const dir = join(root, `notebook-${i}`);
    const env = {
      PATH: process.env.PATH ?? "/usr/bin:/bin",
      HOME: home,
      SLIVINGDOC_STORE: `sqlite:${join(root, `store-${i}.db`)}`,
      SLIVINGDOC_PRIVATE_ROOT: join(root, `private-${i}`),
    };
    // A new notebook: pulled empty once, then its files committed.
    execFileSync(binary, ["pull", dir], { env, stdio: "ignore" });
    L.writeTree(dir, files);
    execFileSync(binary, ["commit", dir, "-m", "seed"], { env, stdio: "ignore" });
    return { binary, dir, env, pull: [] as number[], version: [] as number[] };
  });
  // The reference: the same files committed in a plain git repository.
  const world = L.gitWorld(join(root, "git"), files);
  const gitArgs = ["-c", "core.untrackedCache=false", "-c", "core.fsmonitor=false", "status", "--porcelain"];
  if (L.git(world.env, world.work, ...gitArgs) !== "") throw new Error("git status is not clean");
  const status: number[] = [];
  const gitStatus = () => L.timeProcess("git", gitArgs, { cwd: world.work, env: world.env });
  // Warm every cache once, uncounted.
  for (const s of subjects) {
    await L.timeProcess(s.binary, ["pull", s.dir], { env: s.env });
    await L.timeProcess(s.binary, ["--version"], { env: s.env });
  }
  await gitStatus();
  for (let i = 0; i < runs; i++) {
    for (const s of subjects) {
      s.pull.push(await L.timeProcess(s.binary, ["pull", s.dir], { env: s.env }));
      s.version.push(await L.timeProcess(s.binary, ["--version"], { env: s.env }));
    }
    status.push(await gitStatus());
  }
  const row = (name: string, xs: number[]) =>
    `  ${name.padEnd(22)} median ${L.median(xs).toFixed(1).padStart(6)} ms   p10–p90 ${L.percentile(xs, 10).toFixed(1)}–${L.percentile(xs, 90).toFixed(1)} ms`;
  console.log(`${runs} alternated rounds`);
  console.log(row("git status --porcelain", status));
  for (const s of subjects) {
    const own = L.median(s.pull) - L.median(s.version);
    console.log(s.binary);
    console.log(row("pull (no change)", s.pull));
    console.log(row("--version", s.version));
    console.log(`  pull's own work (pull − version): ${own.toFixed(1)} ms; ÷ git status: ${(own / L.median(status)).toFixed(2)}×`);
  }
} finally {
  L.removeDir(root);
}
