/**
 * A checkout's state files survive a power loss once a call has answered:
 * each is written to a temporary file, flushed, renamed over the old one,
 * and then its directory is flushed — until that last flush the rename is
 * only in memory, and a power loss can take it back, leaving the old
 * baseline (or none) behind a call that answered. A crash test that drops
 * unflushed directory entries needs a block device of its own, which this
 * machine may lack; the order of the calls, as strace sees them, is the
 * proof here (docs/failures.md, "Crashes and a damaged machine").
 */
import { afterAll, expect, test } from "bun:test";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, dirname, join } from "node:path";
import { CannotRun, run } from "../support/debian.ts";
import { BINARY, requireBinary } from "../support/mcp.ts";

const STRACE = "/usr/bin/strace";
const root = mkdtempSync(join(tmpdir(), "slivingdoc-state-flush-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));
const env = { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: join(root, "home"), XDG_STATE_HOME: join(root, "state"), SLIVINGDOC_STORE: `sqlite:${join(root, "store.db")}` };

/** One traced call in a thread's trace: a rename (to `path`) or a flush (of `path`). */
type Traced = { call: "rename" | "fsync"; path: string };

/** The renames and flushes `args` made, per thread, in order (strace -ff writes one file per thread). */
function traced(name: string, args: string[]): Traced[][] {
  if (!existsSync(STRACE)) {
    // Never skipped: `npm test` installs strace (build/test.mjs) before any suite runs.
    throw new CannotRun("the state-flush test", `${STRACE} is missing`, "Run it through `npm test`, which installs strace as root with apt-get, or `apt-get install strace`.");
  }
  const prefix = join(root, `trace-${name}`);
  const r = run(STRACE, ["-ff", "-y", "-qq", "-e", "trace=rename,renameat,renameat2,fsync,fdatasync", "-o", prefix, BINARY, ...args], { env });
  if (r.status !== 0) throw new Error(`strace ${args.join(" ")} failed (exit ${r.status}): ${r.stderr.trim().split("\n").slice(-3).join(" / ")}`);
  const threads: Traced[][] = [];
  for (const file of readdirSync(root).filter((f) => f.startsWith(`${basename(prefix)}.`))) {
    const calls: Traced[] = [];
    for (const line of readFileSync(join(root, file), "utf8").split("\n")) {
      const renamed = /^rename(?:at2?)?\(.*"([^"]+)"(?:, \w+)?\) = 0$/.exec(line);
      if (renamed) calls.push({ call: "rename", path: renamed[1]! });
      const flushed = /^f(?:data)?sync\(\d+<([^>]+)>\) = 0$/.exec(line);
      if (flushed) calls.push({ call: "fsync", path: flushed[1]! });
    }
    threads.push(calls);
  }
  return threads;
}

/**
 * Every rename onto a state file (`state.json`, `journal.json`) in the
 * trace, with the flushes around it: the temporary file's before the
 * rename, and the next flush after it, which must be the state directory's.
 */
type StateRename = { file: string; fileFlushedBefore: boolean; next: string | null };

function stateRenames(threads: Traced[][]): StateRename[] {
  const found: StateRename[] = [];
  for (const calls of threads) {
    calls.forEach((c, i) => {
      if (c.call !== "rename" || !/\/(state|journal)\.json$/.test(c.path)) return;
      const before = calls.slice(0, i).filter((b) => b.call === "fsync").pop();
      const next = calls.slice(i + 1).find((a) => a.call === "fsync");
      found.push({
        file: c.path,
        fileFlushedBefore: before !== undefined && before.path.startsWith(`${c.path}.tmp-`),
        next: next === undefined ? null : next.path,
      });
    });
  }
  return found;
}

test("state.json and journal.json: the file flushed before its rename, its directory flushed after, before anything else is flushed or renamed", () => {
  requireBinary();
  const nb = join(root, "nb");
  const pulled = stateRenames(traced("pull", ["pull", nb]));
  writeFileSync(join(nb, "a.md"), "a\n");
  const committed = stateRenames(traced("commit", ["commit", "-m", "first", nb]));
  // Another checkout's publication, which the next pull journals as it writes it.
  const other = join(root, "other");
  expect(run(BINARY, ["pull", other], { env }).status).toBe(0);
  writeFileSync(join(other, "b.md"), "b\n");
  expect(run(BINARY, ["commit", "-m", "second", other], { env }).status).toBe(0);
  const brought = stateRenames(traced("pull-again", ["pull", nb]));
  // The pull records its baseline; the commit records its publication and moves the baseline; the second pull journals its writes too.
  expect(pulled.length).toBeGreaterThanOrEqual(1);
  expect(committed.filter((r) => r.file.endsWith("/state.json")).length).toBeGreaterThanOrEqual(2);
  expect(brought.some((r) => r.file.endsWith("/journal.json"))).toBe(true);
  for (const r of [...pulled, ...committed, ...brought]) {
    expect(r).toEqual({ file: r.file, fileFlushedBefore: true, next: dirname(r.file) });
  }
});
