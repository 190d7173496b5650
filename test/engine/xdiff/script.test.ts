/*
 * The diff core on its own: our edit script (after compaction) against the
 * hunks of `git diff --no-index -U0 --no-indent-heuristic`. With no context
 * every change is its own hunk, so the headers give git's script exactly.
 * Merged text hides most alignment choices (a clean merge reads the same
 * however hunks line up), so this is where xdiff's discard and split
 * heuristics are pinned down.
 */

import { describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { diffScript, splitRecords, type XdChange } from "../../../src/engine/merge/xdiff/diff.ts";
import { mulberry32, isolatedGitEnv } from "../../support/seeded.ts";

const SEED = Number(process.env.XDIFF_SEED ?? 0x5eed2390);


const ALPHABET = ["a", "b", "c", "d", "", "  ", "\t", "}", "{", "foo", "héllo", "日本", "x y", "return;"];

type Pair = { kind: string; a: string[]; b: string[] };

function generate(rnd: () => number): Pair[] {
  const int = (n: number) => Math.floor(rnd() * n);
  const pick = <T>(xs: readonly T[]) => xs[int(xs.length)] as T;
  const pairs: Pair[] = [];

  // small random pairs with repeats, CRLF and mixed endings
  for (let i = 0; i < 60; i++) {
    const eol = () => (i % 4 === 3 ? pick(["\n", "\r\n"]) : i % 4 === 2 ? "\r\n" : "\n");
    const a = Array.from({ length: int(40) }, () => pick(ALPHABET) + eol());
    const b = a.slice();
    for (let k = 1 + int(5); k > 0; k--) {
      b.splice(int(b.length + 1), int(4), ...Array.from({ length: int(4) }, () => pick(ALPHABET) + eol()));
    }
    pairs.push({ kind: "small", a, b });
  }

  // xdl_cleanup_records: a line with many matches inside a run of unmatched
  // lines is discarded (and it matters where the blank lines end up)
  for (let i = 0; i < 40; i++) {
    let u = 0;
    const a = Array.from({ length: 60 + int(200) }, () => (rnd() < 0.4 ? "\n" : `s${int(30)}\n`));
    const b = a.slice();
    for (let k = 1 + int(5); k > 0; k--) {
      const ins = Array.from({ length: 4 + int(16) }, () => (rnd() < 0.15 ? "\n" : `n${u++}\n`));
      b.splice(int(b.length + 1), int(6), ...ins);
    }
    pairs.push({ kind: "discard", a, b });
  }

  // xdl_split's heuristics only run with > ~65k lines in total; the first
  // shape keeps unchanged stretches at 11..20 lines, around XDL_SNAKE_CNT,
  // the others rewrite scattered blocks so the edit cost passes 256
  const huge = (kind: string, alpha: number, gap: () => number, cut: () => number, add: () => number): Pair => {
    const word = () => `w${int(alpha)}\n`;
    const a = Array.from({ length: 34000 }, word);
    const b: string[] = [];
    for (let i = 0; i < a.length; ) {
      const g = gap();
      b.push(...a.slice(i, i + g));
      i += g + cut();
      for (let k = add(); k > 0; k--) b.push(word());
    }
    return { kind, a, b };
  };
  pairs.push(huge("huge-short-snakes", 300, () => 11 + int(10), () => 1 + int(6), () => 1 + int(6)));
  pairs.push(huge("huge-blocks", 200, () => 25 * (1 + int(20)), () => 25, () => 25));
  pairs.push(huge("huge-mixed", 150, () => 5 + int(40), () => 1 + int(20), () => 1 + int(25)));

  // Leave no common tail of 1024 bytes or more: git diff trims such a tail
  // before xdiff sees the files (trim_common_tail), merge-file does not.
  for (const p of pairs) {
    if (p.a.join("").length + p.b.join("").length > 900) {
      p.a.push("END-A\n");
      p.b.push("END-B\n");
    }
    // a missing final newline now and then
    if (rnd() < 0.15 && p.a.length) p.a[p.a.length - 1] = (p.a[p.a.length - 1] as string).replace(/\r?\n$/, "");
    if (rnd() < 0.15 && p.b.length) p.b[p.b.length - 1] = (p.b[p.b.length - 1] as string).replace(/\r?\n$/, "");
  }
  return pairs;
}

function gitScript(root: string, env: Record<string, string>): XdChange[] {
  const proc = Bun.spawnSync(["git", "diff", "--no-index", "--no-indent-heuristic", "--diff-algorithm=myers", "-U0", "a", "b"], {
    cwd: root,
    env,
  });
  if (proc.exitCode !== 0 && proc.exitCode !== 1) throw new Error(proc.stderr.toString());
  const out: XdChange[] = [];
  for (const line of proc.stdout.toString().split("\n")) {
    const m = /^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@/.exec(line);
    if (!m) continue;
    const chg1 = m[2] === undefined ? 1 : Number(m[2]);
    const chg2 = m[4] === undefined ? 1 : Number(m[4]);
    // an empty side is reported at the line before it, a non-empty one one-based
    const i1 = chg1 === 0 ? Number(m[1]) : Number(m[1]) - 1;
    const i2 = chg2 === 0 ? Number(m[3]) : Number(m[3]) - 1;
    out.push({ i1, i2, chg1, chg2 });
  }
  return out;
}

describe("diff script agrees with git diff -U0", () => {
  test(`seeded pairs, including xdiff's heuristics (seed ${SEED})`, () => {
    const pairs = generate(mulberry32(SEED));
    const root = mkdtempSync(join(tmpdir(), "xdiff-script-"));
    const env = isolatedGitEnv(root);
    try {
      const failures: unknown[] = [];
      pairs.forEach((p, i) => {
        const a = p.a.join("");
        const b = p.b.join("");
        writeFileSync(join(root, "a"), a);
        writeFileSync(join(root, "b"), b);
        const want = gitScript(root, env);
        const got = diffScript(splitRecords(Buffer.from(a)), splitRecords(Buffer.from(b))).script.map(({ i1, i2, chg1, chg2 }) => ({ i1, i2, chg1, chg2 }));
        if (JSON.stringify(got) !== JSON.stringify(want)) {
          const small = a.length + b.length < 4000;
          failures.push({ seed: SEED, pair: i, kind: p.kind, ...(small ? { a, b, want, got } : { hunks: [want.length, got.length] }) });
        }
      });
      expect(failures.slice(0, 3)).toEqual([]);
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  }, 60_000);
});
