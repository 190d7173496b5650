/**
 * The CLI's own cost of a no-change pull, whole processes, on its own: the
 * "no-change cli" row of `npm run bench` (cli.bench.ts) for several binaries at
 * once. `slivingdoc pull DIR` of a 16-file notebook in the embedded store,
 * beside the runtime's own start (`slivingdoc --version`) and `git status
 * --porcelain` on the same files (plain: no untracked cache, no fsmonitor).
 * Everything alternates, so a shared machine's noise falls on each alike;
 * medians and the spread (p10–p90) are reported, and the ratio
 * (pull − version) / git status.
 *
 *   bun test/bench/cli-cost.ts [runs] [binary...]
 *
 * runs defaults to 30; the binary to SLIVINGDOC_BENCH_BINARY or
 * dist/slivingdoc. Several binaries (a before and an after) alternate in
 * the same rounds, each on a notebook of its own, against the same git.
 */
import { join } from "node:path";
import { CLI_FILES, gitStatusOf, seedCliCheckout } from "./cli.bench.ts";
import * as L from "./lib.ts";

const runs = Number(process.argv[2] ?? 30);
const binaries = process.argv.length > 3 ? process.argv.slice(3) : [L.BINARY];
const root = L.tempDir("cli-cost");
try {
  const files = L.notebookFiles(CLI_FILES, 2048);
  const checkouts = binaries.map((binary, i) => {
    const c = L.cliCheckout(binary, L.sqliteLocation(root), root, `notebook-${i}`);
    seedCliCheckout(c, files);
    return c;
  });
  const gitStatus = gitStatusOf(join(root, "git"), files);
  const samples = await L.alternate(runs, [
    ...checkouts.flatMap((c) => [() => L.timeCli(c, "pull"), () => L.timeVersion(c)]),
    gitStatus,
  ]);
  const status = samples[samples.length - 1]!;
  const row = (name: string, xs: number[]) =>
    `  ${name.padEnd(22)} median ${L.median(xs).toFixed(1).padStart(6)} ms   p10–p90 ${L.percentile(xs, 10).toFixed(1)}–${L.percentile(xs, 90).toFixed(1)} ms`;
  console.log(`${runs} alternated rounds`);
  console.log(row("git status --porcelain", status));
  checkouts.forEach((c, i) => {
    const [pull, version] = [samples[2 * i]!, samples[2 * i + 1]!];
    const own = L.median(pull) - L.median(version);
    console.log(c.binary);
    console.log(row("pull (no change)", pull));
    console.log(row("--version", version));
    console.log(`  pull's own work (pull − version): ${own.toFixed(1)} ms; ÷ git status: ${(own / L.median(status)).toFixed(2)}×`);
  });
} finally {
  L.removeDir(root);
}
