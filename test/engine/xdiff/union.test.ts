/*
 * Differential test: unionMergeText against C git's `git merge-file --union
 * -p` on fuzzed three-way inputs (fast-check, seeded: UNION_SEED replays a
 * run, UNION_CASES runs more). The inputs lean on what a team's shared log
 * sees: both sides appending at the end of the same file, a last line with
 * no newline, CRLF and mixed line endings, repeated lines.
 */
import { afterAll, expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import fc from "fast-check";
import { mergeText, unionMergeText } from "../../../src/engine/merge/xdiff/index.ts";
import { isolatedGitEnv } from "../../support/seeded.ts";

const SEED = Number(process.env.UNION_SEED ?? 0x0e1017);
const CASES = Number(process.env.UNION_CASES ?? 500);

const root = mkdtempSync(join(tmpdir(), "slivingdoc-union-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));
const env = isolatedGitEnv(root);

function gitUnion(base: string, local: string, accepted: string): string {
  writeFileSync(join(root, "base"), base);
  writeFileSync(join(root, "local"), local);
  writeFileSync(join(root, "accepted"), accepted);
  const p = Bun.spawnSync(["git", "merge-file", "--union", "-p", "local", "base", "accepted"], { cwd: root, env, stdout: "pipe", stderr: "pipe" });
  // --union never leaves a conflict, so anything but 0 is git failing.
  if (p.exitCode !== 0) throw new Error(`git merge-file --union exited ${p.exitCode}: ${p.stderr.toString()}`);
  return new TextDecoder("utf-8", { fatal: true }).decode(p.stdout);
}

// Few distinct lines, so repeats are common, with blank, punctuation-only and non-ASCII ones.
const WORDS = ["a", "b", "c", "foo", "", "  ", "}", "--", "- [ ] task", "- [x] task", "héllo", "日本語 😀"];
const word = fc.constantFrom(...WORDS);
const eol = fc.constantFrom("\n", "\n", "\r\n", "mixed");

/* One edit: at a fraction of the length, remove `cut` lines and put `put` in their place. */
const edit = fc.record({ at: fc.double({ min: 0, max: 1, noNaN: true }), cut: fc.nat(3), put: fc.array(word, { maxLength: 3 }) });
const side = fc.record({
  edits: fc.array(edit, { maxLength: 4 }),
  // What every agent writing a log does: a line or two at the end.
  appends: fc.array(word, { maxLength: 3 }),
  finalNewline: fc.boolean(),
});
const threeWay = fc.record({
  base: fc.array(word, { maxLength: 16 }),
  eol,
  crlfPick: fc.array(fc.boolean(), { minLength: 64, maxLength: 64 }),
  baseFinalNewline: fc.boolean(),
  local: side,
  accepted: side,
});

type ThreeWay = typeof threeWay extends fc.Arbitrary<infer T> ? T : never;
type Side = ThreeWay["local"];

function render(c: ThreeWay, lines: string[], finalNewline: boolean): string {
  const ends = lines.map((l, i) => l + (c.eol !== "mixed" ? c.eol : c.crlfPick[i % 64] ? "\r\n" : "\n"));
  const text = ends.join("");
  return finalNewline ? text : text.replace(/\r?\n$/, "");
}

function sideLines(base: string[], s: Side): string[] {
  const lines = base.slice();
  for (const e of s.edits) lines.splice(Math.floor(e.at * (lines.length + 1)), e.cut, ...e.put);
  return lines.concat(s.appends);
}

test(`union merge agrees with git merge-file --union on ${CASES} fuzzed cases (seed ${SEED})`, () => {
  let wouldConflict = 0;
  let bothAppended = 0;
  fc.assert(
    fc.property(threeWay, (c) => {
      const base = render(c, c.base, c.baseFinalNewline);
      const local = render(c, sideLines(c.base, c.local), c.local.finalNewline);
      const accepted = render(c, sideLines(c.base, c.accepted), c.accepted.finalNewline);
      if (mergeText(base, local, accepted).conflicts.length > 0) wouldConflict++;
      if (c.local.appends.length > 0 && c.accepted.appends.length > 0) bothAppended++;
      expect(JSON.stringify(unionMergeText(base, local, accepted))).toBe(JSON.stringify(gitUnion(base, local, accepted)));
    }),
    { seed: SEED, numRuns: CASES },
  );
  // The cases must exercise the union itself, not only merges that were clean anyway.
  expect(wouldConflict).toBeGreaterThan(CASES / 4);
  expect(bothAppended).toBeGreaterThan(CASES / 4);
}, 120_000);

test("two agents appending to the same log keep both lines, in git's order", () => {
  const base = "# log\n- one\n";
  const cases: Array<[string, string]> = [
    ["# log\n- one\n- two\n", "# log\n- one\n- three\n"],
    ["# log\r\n- one\r\n- two\r\n", "# log\r\n- one\r\n- three\r\n"],
    ["# log\n- one\n- two", "# log\n- one\n- three"],
  ];
  for (const [local, accepted] of cases) {
    const b = local.includes("\r") ? base.replaceAll("\n", "\r\n") : base;
    expect(unionMergeText(b, local, accepted)).toBe(gitUnion(b, local, accepted));
  }
  expect(unionMergeText(base, cases[0]![0], cases[0]![1])).toBe("# log\n- one\n- two\n- three\n");
});
