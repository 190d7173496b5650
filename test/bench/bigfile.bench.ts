/**
 * BIG: a commit merging a 100 MB text file that both sides changed, through
 * a running MCP server (the built binary), on the embedded store.
 *
 * BIG merge — the commit's merge stage (its completion record), against
 *      `git merge-file` on the same three files, timed in the same round
 *      (bar ≤ 2×). The changes are far apart: the merge is clean.
 * BIG conflict — the same, with both sides changing one line as well: the
 *      commit stops at the conflict (bar ≤ 2×).
 * BIG memory — the peak resident memory (VmHWM) of the server during the
 *      clean commit alone, against the file's size (bar ≤ 6×).
 *
 * Not in the default run: each round writes, packs and merges 100 MB several
 * times (`--only BIG`).
 */
import { spawn } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { mulberry32 } from "../support/seeded.ts";
import * as L from "./lib.ts";
import type { Row } from "./report.ts";

const FILE_BYTES = 100_000_000;

/** `git merge-file -p` on the three files in `dir` (local, base, accepted); it exits with the number of conflicts. */
function timeMergeFile(dir: string, env: Record<string, string>): Promise<number> {
  return new Promise((resolve, reject) => {
    const t0 = performance.now();
    const child = spawn("git", ["merge-file", "-p", "-L", "local", "-L", "baseline", "-L", "accepted", "local", "base", "accepted"], { cwd: dir, env, stdio: ["ignore", "ignore", "ignore"] });
    child.on("error", reject);
    child.on("exit", (code) => (code !== null && code < 128 ? resolve(performance.now() - t0) : reject(new Error(`git merge-file exited ${code}`))));
  });
}

/** The server's peak resident memory starts over (Linux: clear_refs 5), so the next call's own peak is measured. */
function resetPeak(pid: number): void {
  writeFileSync(`/proc/${pid}/clear_refs`, "5");
}

function withLine(lines: string[], at: number, text: string): string {
  const out = lines.slice();
  out[at] = text;
  return out.join("");
}

export async function bigFileScenario(loc: L.Location, reps: number): Promise<Row[]> {
  const root = L.tempDir("big");
  const servers: L.Server[] = [];
  try {
    const lines = L.prose(mulberry32(24), FILE_BYTES).split(/(?<=\n)/);
    const base = lines.join("");
    const size = Buffer.byteLength(base);
    const env = L.gitEnv(join(root, "home"));
    const start = (name: string) => L.startServer(loc, { privateRoot: join(root, `p-${name}`), workspace: join(root, name), home: join(root, "home"), extraArgs: ["--deadline", "30m"] });
    const a = await start("a");
    const b = await start("b");
    servers.push(a, b);
    await a.call("notes_pull", {});
    writeFileSync(join(root, "a", "big.md"), base);
    await a.call("notes_commit", { message: "big" });
    await b.call("notes_pull", {});

    const merge: number[] = [];
    const gitMerge: number[] = [];
    const peak: number[] = [];
    const conflictMerge: number[] = [];
    const conflictGit: number[] = [];
    const profiles: L.Completion[] = [];
    for (let i = 0; i <= reps; i++) {
      const conflict = i === reps;
      // Each round changes lines of its own, near the start (a) and near the end (b), on what both hold now.
      const held = readFileSync(join(root, "b", "big.md"), "utf8").split(/(?<=\n)/);
      const accepted = withLine(held, 10 + i, `a changed this line in round ${i}\n`);
      let local = withLine(held, held.length - 20 - i, `b changed this line in round ${i}\n`);
      if (conflict) local = withLine(local.split(/(?<=\n)/), 10 + i, `b changed the same line in round ${i}\n`);
      writeFileSync(join(root, "a", "big.md"), accepted);
      await a.call("notes_commit", { message: `a ${i}` });
      // Past the stat cache's racy window, as an agent's work between calls gives it.
      await Bun.sleep(300);
      writeFileSync(join(root, "b", "big.md"), local);
      resetPeak(b.pid);
      const outcome = await b.tryCall("notes_commit", { message: `b ${i}` });
      if (outcome.ok === conflict) throw new Error(`round ${i}: the commit ${outcome.ok ? "landed" : "failed"}: ${JSON.stringify(outcome.data).slice(0, 500)}`);
      const record = b.completions.at(-1)!;
      writeFileSync(join(root, "local"), local);
      writeFileSync(join(root, "base"), held.join(""));
      writeFileSync(join(root, "accepted"), accepted);
      const reference = await timeMergeFile(root, env);
      if (conflict) {
        conflictMerge.push(record.stages.merge ?? 0);
        conflictGit.push(reference);
        // The conflict's markers are in the file: resolve by taking the accepted side, and publish it.
        writeFileSync(join(root, "b", "big.md"), accepted);
        await b.call("notes_commit", { message: "resolved" });
      } else {
        merge.push(record.stages.merge ?? 0);
        gitMerge.push(reference);
        peak.push(b.peakMb());
        profiles.push(record);
        await b.call("notes_pull", {});
      }
    }
    const m = L.median(merge);
    const g = L.median(gitMerge);
    const p = L.median(peak);
    const mb = size / 2 ** 20;
    const cm = L.median(conflictMerge);
    const cg = L.median(conflictGit);
    const profile = L.stageMedians(profiles);
    return [
      { scenario: "BIG merge", store: loc.label, what: "commit merging a 100 MB file changed far apart on both sides: its merge stage", median: m, unit: "ms", comparison: "git merge-file, same three files", comparisonMedian: g, ratio: m / g, bar: "≤ 2×", met: m / g <= 2, samples: merge.length, values: merge, comparisonValues: gitMerge, profile },
      { scenario: "BIG conflict", store: loc.label, what: "the same with one line changed on both sides: the merge stage of the conflicting commit", median: cm, unit: "ms", comparison: "git merge-file, same three files", comparisonMedian: cg, ratio: cm / cg, bar: "≤ 2×", met: cm / cg <= 2, samples: conflictMerge.length, values: conflictMerge, comparisonValues: conflictGit },
      { scenario: "BIG memory", store: loc.label, what: "peak resident memory (VmHWM) of the server during that commit", median: p, unit: "MB", comparison: "the file's size", comparisonMedian: mb, ratio: p / mb, bar: "≤ 6×", met: p / mb <= 6, samples: peak.length, values: peak, profile },
    ];
  } finally {
    for (const s of servers) await s.close();
    await loc.dispose();
    L.removeDir(root);
  }
}
