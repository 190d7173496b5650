/* diffStat against `git diff --no-index --numstat` on seeded generated pairs. */

import { describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { lineCount } from "../../../src/engine/merge/diffstat.ts";
import { diffStat } from "../../../src/engine/merge/xdiff/index.ts";
import { mulberry32, isolatedGitEnv } from "../../support/seeded.ts";

const SEED = Number(process.env.XDIFF_SEED ?? 0x5eed2390);
const PAIRS = 48;


const ALPHABET = ["a", "b", "c", "", " ", "}", "héllo", "日本", "foo bar", "x"];

function makePair(rnd: () => number, index: number): [string, string] {
  const int = (n: number) => Math.floor(rnd() * n);
  const eol = () => (index % 5 === 4 && rnd() < 0.5 ? "\r\n" : "\n");
  const size = index % 12 === 11 ? 2000 + int(2000) : int(30);
  const a = Array.from({ length: size }, () => ALPHABET[int(ALPHABET.length)] + eol());
  const b = a.slice();
  for (let k = int(index % 12 === 11 ? 60 : 6); k > 0; k--) {
    const at = int(b.length + 1);
    const op = int(3);
    if (op === 0) b.splice(at, 0, ...Array.from({ length: 1 + int(3) }, () => ALPHABET[int(ALPHABET.length)] + eol()));
    else if (op === 1) b.splice(at, 1 + int(3));
    else b[Math.min(at, b.length - 1)] = ALPHABET[int(ALPHABET.length)] + "!" + eol();
  }
  const trim = (s: string) => (rnd() < 0.2 ? s.replace(/\r?\n$/, "") : s);
  return [trim(a.join("")), trim(b.join(""))];
}

/* Every pair whose diffStat differs from git's numstat (empty when all agree). */
function disagreements(pairs: Array<[string, string]>): unknown[] {
  const root = mkdtempSync(join(tmpdir(), "xdiff-stat-"));
  const env = isolatedGitEnv(root);
  try {
    const failures: unknown[] = [];
    pairs.forEach(([a, b], i) => {
      writeFileSync(join(root, "a"), a);
      writeFileSync(join(root, "b"), b);
      const proc = Bun.spawnSync(["git", "diff", "--no-index", "--numstat", "a", "b"], { cwd: root, env });
      if (proc.exitCode !== 0 && proc.exitCode !== 1) throw new Error(proc.stderr.toString());
      const out = proc.stdout.toString().trim();
      const m = out === "" ? ["", "0", "0"] : /^(\d+)\t(\d+)\t/.exec(out);
      if (!m) throw new Error(`unexpected numstat output: ${out}`);
      const want = { insertions: Number(m[1]), deletions: Number(m[2]) };
      const got = diffStat(a, b);
      if (got.insertions !== want.insertions || got.deletions !== want.deletions) {
        failures.push({ seed: SEED, pair: i, want, got, a, b });
      }
    });
    return failures;
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
}

describe("diffStat agrees with git diff --numstat", () => {
  test(`${PAIRS} seeded pairs (seed ${SEED})`, () => {
    const rnd = mulberry32(SEED);
    const pairs = Array.from({ length: PAIRS }, (_, i) => makePair(rnd, i));
    expect(disagreements(pairs).slice(0, 3)).toEqual([]);
  });

  test("a file added or removed (one side empty), which diffStat counts without diffing", () => {
    const rnd = mulberry32(SEED ^ 0xadd);
    const texts = [...Array.from({ length: 16 }, (_, i) => makePair(rnd, i)[0]), "\n", "\n\n", "x", "x\ny", "\r\n", "a\r\nb"];
    const pairs = texts.flatMap((t): Array<[string, string]> => [["", t], [t, ""]]);
    expect(disagreements(pairs).slice(0, 3)).toEqual([]);
  });

  test("lineCount (a pull's count of a file it writes) is what diffStat counts for an added file", () => {
    const rnd = mulberry32(SEED ^ 0x11e5);
    const texts = [...Array.from({ length: 24 }, (_, i) => makePair(rnd, i)[1]), "", "\n", "x", "x\ny", "\r\n", "a\r\nb", "日本\n語"];
    for (const t of texts) expect(lineCount(new TextEncoder().encode(t))).toBe(diffStat("", t).insertions);
  });

  test("identical and empty inputs", () => {
    expect(diffStat("", "")).toEqual({ insertions: 0, deletions: 0 });
    expect(diffStat("a\n", "a\n")).toEqual({ insertions: 0, deletions: 0 });
    expect(diffStat("", "a\nb\n")).toEqual({ insertions: 2, deletions: 0 });
    expect(diffStat("a\nb", "a\nb\n")).toEqual({ insertions: 1, deletions: 1 });
  });
});
