/*
 * Differential test: our mergeText against C git's `git merge-file -p` on
 * seeded pseudo-random three-way cases. Set XDIFF_SEED to replay a seed,
 * XDIFF_CASES to run more cases.
 */

import { describe, expect, test } from "bun:test";
import { mkdtempSync, mkdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { mergeText } from "../../../src/engine/merge/xdiff/index.ts";
import { isolatedGitEnv, mulberry32 } from "../../support/seeded.ts";

const SEED = Number(process.env.XDIFF_SEED ?? 0x5eed2390);
const CASES = Number(process.env.XDIFF_CASES ?? 640);
const PARALLEL = 4;


class Gen {
  constructor(readonly next: () => number) {}
  int(n: number): number {
    return Math.floor(this.next() * n);
  }
  range(lo: number, hi: number): number {
    return lo + this.int(hi - lo + 1);
  }
  chance(p: number): boolean {
    return this.next() < p;
  }
  pick<T>(xs: readonly T[]): T {
    return xs[this.int(xs.length)] as T;
  }
}

// Few distinct lines, so repeats (and xdiff's multi-match handling) are common;
// includes blank, whitespace-only, punctuation-only and non-ASCII lines.
const SMALL = ["a", "b", "c", "d", "e", "foo", "bar", "", "  ", "\t", "}", "{", "--", "héllo wörld", "日本語", "x y"];
const WIDE = [...SMALL, "return x;", "if (y) {", "    z();", "ü", "é", "// note", "*", "1", "2", "end", "ünïcödé 😀", " ", "=="];

type Eol = "lf" | "crlf" | "mixed";

interface Doc {
  lines: string[]; // complete lines, each with its terminator
  eol: Eol;
}

function eolFor(g: Gen, eol: Eol): string {
  if (eol === "lf") return "\n";
  if (eol === "crlf") return "\r\n";
  return g.chance(0.5) ? "\n" : "\r\n";
}

function randomLines(g: Gen, n: number, alphabet: readonly string[], eol: Eol): string[] {
  const out: string[] = [];
  for (let i = 0; i < n; i++) out.push(g.pick(alphabet) + eolFor(g, eol));
  return out;
}

/* One random edit in place: modify, insert, delete or replace a range. */
function edit(g: Gen, doc: Doc, alphabet: readonly string[]): void {
  const n = doc.lines.length;
  const op = n === 0 ? 1 : g.int(4);
  const at = g.int(n + 1);
  if (op === 0) {
    const i = Math.min(at, n - 1);
    doc.lines[i] = g.pick(alphabet) + eolFor(g, doc.eol);
  } else if (op === 1) {
    doc.lines.splice(at, 0, ...randomLines(g, g.range(1, 3), alphabet, doc.eol));
  } else if (op === 2) {
    doc.lines.splice(Math.min(at, n - 1), g.range(1, 3));
  } else {
    doc.lines.splice(Math.min(at, n - 1), g.range(1, 3), ...randomLines(g, g.range(1, 3), alphabet, doc.eol));
  }
}

function render(lines: string[], finalNewline: boolean): string {
  const text = lines.join("");
  if (finalNewline) return text;
  if (text.endsWith("\r\n")) return text.slice(0, -2);
  if (text.endsWith("\n")) return text.slice(0, -1);
  return text;
}

interface Case {
  kind: string;
  base: string;
  ours: string;
  theirs: string;
}

const KINDS = [
  "random",
  "overlap",
  "adjacent",
  "identical",
  "deleteAll",
  "empty",
  "crlf",
  "eolConvert",
  "partialSame",
  "nonAlnum",
  "separated",
  "code",
  "big",
  "huge",
  "sharedEnds",
] as const;

function makeCase(g: Gen, index: number): Case {
  // Large cases are slow to generate and to diff, so keep them rare.
  const kind = index % 320 === 159 ? "huge" : index % 40 === 39 ? "big" : index % 8 === 5 ? "sharedEnds" : g.pick(KINDS.filter((k) => k !== "big" && k !== "huge" && k !== "sharedEnds"));
  if (kind === "huge") return hugeCase(g);
  if (kind === "sharedEnds") return sharedEndsCase(g);
  const alphabet = g.chance(0.5) ? SMALL : WIDE;
  const eol: Eol = kind === "crlf" ? "crlf" : g.pick<Eol>(["lf", "lf", "lf", "crlf", "mixed"]);
  let baseLines = randomLines(g, kind === "big" ? g.range(300, 1500) : g.range(0, 24), alphabet, eol);
  const copy = (): Doc => ({ lines: baseLines.slice(), eol });
  let ours = copy();
  let theirs = copy();

  switch (kind) {
    case "random":
    case "crlf": {
      for (let k = g.range(0, 4); k > 0; k--) edit(g, ours, alphabet);
      for (let k = g.range(0, 4); k > 0; k--) edit(g, theirs, alphabet);
      break;
    }
    case "overlap":
    case "partialSame": {
      const n = baseLines.length;
      const at = g.int(n + 1);
      const len = Math.min(g.range(0, 4), n - at);
      const shared = randomLines(g, g.range(1, 4), alphabet, eol);
      const a = kind === "partialSame" ? shared.slice() : randomLines(g, g.range(0, 4), alphabet, eol);
      const b = kind === "partialSame" ? shared.slice() : randomLines(g, g.range(0, 4), alphabet, eol);
      if (kind === "partialSame") {
        // both sides make mostly the same change, differing in a line or two
        a.splice(g.int(a.length + 1), g.int(2), ...randomLines(g, g.int(2), alphabet, eol));
        b.splice(g.int(b.length + 1), g.int(2), ...randomLines(g, g.int(2), alphabet, eol));
      }
      const shift = g.range(-2, 2);
      ours.lines.splice(at, len, ...a);
      const at2 = Math.max(0, Math.min(n, at + shift));
      theirs.lines.splice(at2, Math.min(len + g.int(2), n - at2), ...b);
      break;
    }
    case "adjacent": {
      const n = baseLines.length;
      if (n >= 2) {
        const k = g.int(n - 1);
        ours.lines[k] = g.pick(alphabet) + "!" + eolFor(g, eol);
        if (g.chance(0.5)) theirs.lines[k + 1] = g.pick(alphabet) + "?" + eolFor(g, eol);
        else theirs.lines.splice(k + 1, 0, ...randomLines(g, g.range(1, 2), alphabet, eol));
      } else {
        edit(g, ours, alphabet);
        edit(g, theirs, alphabet);
      }
      if (g.chance(0.5)) [ours, theirs] = [theirs, ours];
      break;
    }
    case "identical": {
      const seed = g.int(2 ** 31);
      const g1 = new Gen(mulberry32(seed));
      const g2 = new Gen(mulberry32(seed));
      const k = g.range(1, 4);
      for (let j = 0; j < k; j++) edit(g1, ours, alphabet);
      for (let j = 0; j < k; j++) edit(g2, theirs, alphabet);
      if (g.chance(0.5)) edit(g, g.chance(0.5) ? ours : theirs, alphabet);
      break;
    }
    case "deleteAll": {
      const victim = g.chance(0.5) ? ours : theirs;
      const other = victim === ours ? theirs : ours;
      victim.lines = g.chance(0.8) ? [] : randomLines(g, 1, alphabet, eol);
      for (let k = g.range(0, 3); k > 0; k--) edit(g, other, alphabet);
      break;
    }
    case "empty": {
      const which = g.int(4);
      if (which === 0) {
        baseLines = [];
        ours = { lines: randomLines(g, g.range(0, 5), alphabet, eol), eol };
        theirs = { lines: randomLines(g, g.range(0, 5), alphabet, eol), eol };
      } else if (which === 1) {
        baseLines = [];
        ours = { lines: [], eol };
        theirs = { lines: randomLines(g, g.range(0, 5), alphabet, eol), eol };
      } else if (which === 2) {
        ours = { lines: [], eol };
        theirs = { lines: [], eol };
      } else {
        baseLines = [];
        const same = randomLines(g, g.range(1, 4), alphabet, eol);
        ours = { lines: same.slice(), eol };
        theirs = { lines: same.concat(g.chance(0.5) ? randomLines(g, 1, alphabet, eol) : []), eol };
      }
      break;
    }
    case "eolConvert": {
      const conv = g.chance(0.5) ? ours : theirs;
      conv.lines = conv.lines.map((l) => (l.endsWith("\r\n") ? l.slice(0, -2) + "\n" : l.slice(0, -1) + "\r\n"));
      edit(g, g.chance(0.5) ? ours : theirs, alphabet);
      break;
    }
    case "nonAlnum": {
      // conflicts separated by short runs of lines without letters or digits
      const filler = ["}", "", "  ", "--", "{", "*"];
      baseLines = [];
      for (let i = 0; i < 30; i++) {
        baseLines.push((g.chance(0.4) ? g.pick(["alpha", "beta", "gamma", "delta"]) : g.pick(filler)) + eolFor(g, eol));
      }
      ours = copy();
      theirs = copy();
      for (let i = 0; i < baseLines.length; i++) {
        if (g.chance(0.2)) {
          ours.lines[i] = "o" + i + eolFor(g, eol);
          theirs.lines[i] = "t" + i + eolFor(g, eol);
        }
      }
      break;
    }
    case "separated": {
      // conflicts separated by exactly 0..6 untouched lines
      const n = baseLines.length;
      if (n >= 4) {
        const a = g.int(n - 2);
        const gap = g.range(0, 6);
        const b = Math.min(n - 1, a + 1 + gap);
        ours.lines[a] = "O1" + eolFor(g, eol);
        theirs.lines[a] = "T1" + eolFor(g, eol);
        ours.lines[b] = "O2" + eolFor(g, eol);
        theirs.lines[b] = "T2" + eolFor(g, eol);
      }
      break;
    }
    case "code": {
      // blank lines everywhere and runs of new unique lines: xdiff discards
      // some of the blanks before diffing, which moves hunk boundaries
      let u = 0;
      baseLines = Array.from({ length: g.range(40, 160) }, () => (g.chance(0.4) ? "" : "s" + g.int(30)) + eolFor(g, eol));
      ours = copy();
      theirs = copy();
      for (const side of [ours, theirs]) {
        for (let k = g.range(1, 4); k > 0; k--) {
          const ins = Array.from({ length: g.range(2, 14) }, () => (g.chance(0.15) ? "" : "n" + u++) + eolFor(g, eol));
          side.lines.splice(g.int(side.lines.length + 1), g.int(5), ...ins);
        }
      }
      break;
    }
    case "big": {
      for (let k = g.range(1, 30); k > 0; k--) edit(g, ours, alphabet);
      for (let k = g.range(1, 30); k > 0; k--) edit(g, theirs, alphabet);
      if (g.chance(0.5)) {
        // a large rewrite on one side drives xdl_split into its cost heuristics
        const at = g.int(ours.lines.length + 1);
        ours.lines.splice(at, g.range(100, 600), ...randomLines(g, g.range(200, 700), alphabet, eol));
      }
      break;
    }
  }

  // missing final newline on any of the three
  const fnl = () => !g.chance(0.15);
  return {
    kind,
    base: render(baseLines, fnl()),
    ours: render(ours.lines, fnl()),
    theirs: render(theirs.lines, fnl()),
  };
}

/*
 * xdl_split only tries its "good snake" shortcuts when mxcost exceeds 256,
 * that is with more than ~65k lines in the two files together, and only when
 * a cheap diff still costs over 256: so many small scattered block rewrites
 * over lines that keep matching (never discarded as unique).
 */
function hugeCase(g: Gen): Case {
  const n = g.range(33000, 36000);
  const alpha = g.range(100, 300);
  const word = () => "w" + g.int(alpha) + "\n";
  const base = Array.from({ length: n }, word);
  const rewrite = (p: number, block: number): string[] => {
    const out = base.slice();
    for (let i = 0; i + block <= n; i += block) if (g.chance(p)) for (let j = 0; j < block; j++) out[i + j] = word();
    return out;
  };
  const ours = rewrite(g.range(5, 10) / 100, g.range(22, 40));
  const theirs = rewrite(0.01, g.range(5, 30));
  return { kind: "huge", base: base.join(""), ours: ours.join(""), theirs: theirs.join("") };
}

/*
 * Edits only between long ends the three files share, which the diff trims
 * before it classifies lines: the ends repeat the middle's lines (few
 * distinct ones), so how often a line occurs over the whole file — which
 * decides what xdiff discards — depends on the ends too.
 */
function sharedEndsCase(g: Gen): Case {
  const alphabet = g.chance(0.5) ? SMALL : WIDE;
  const eol: Eol = g.pick<Eol>(["lf", "lf", "crlf", "mixed"]);
  const head = randomLines(g, g.range(0, 300), alphabet, eol);
  const tail = randomLines(g, g.range(0, 300), alphabet, eol);
  const middle = randomLines(g, g.range(0, 30), alphabet, eol);
  const side = (): string[] => {
    const doc: Doc = { lines: middle.slice(), eol };
    for (let k = g.range(0, 5); k > 0; k--) edit(g, doc, alphabet);
    return [...head, ...doc.lines, ...tail];
  };
  const fnl = () => !g.chance(0.15);
  return { kind: "sharedEnds", base: render([...head, ...middle, ...tail], fnl()), ours: render(side(), fnl()), theirs: render(side(), fnl()) };
}

async function gitMergeFile(dir: string, env: Record<string, string>): Promise<{ out: string; code: number }> {
  const proc = Bun.spawn(["git", "merge-file", "-p", "-L", "local", "-L", "baseline", "-L", "accepted", "ours", "base", "theirs"], {
    cwd: dir,
    env,
    stdout: "pipe",
    stderr: "pipe",
  });
  const [bytes, err, code] = await Promise.all([
    new Response(proc.stdout).arrayBuffer(),
    new Response(proc.stderr).text(),
    proc.exited,
  ]);
  if (code < 0 || code > 127 || err.includes("error")) throw new Error(`git merge-file failed in ${dir}: ${err}`);
  return { out: new TextDecoder("utf-8", { fatal: true }).decode(bytes), code };
}

async function runLimited<T>(n: number, limit: number, task: (i: number) => Promise<T>): Promise<T[]> {
  const results = new Array<T>(n);
  let nextIndex = 0;
  const worker = async () => {
    while (nextIndex < n) {
      const i = nextIndex++;
      results[i] = await task(i);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, n) }, worker));
  return results;
}

function lineAt(text: string, lineNo: number): string | undefined {
  return text.split("\n")[lineNo - 1];
}

describe("mergeText agrees with git merge-file", () => {
  test(`${CASES} seeded random cases (seed ${SEED})`, async () => {
    const g = new Gen(mulberry32(SEED));
    const cases = Array.from({ length: CASES }, (_, i) => makeCase(g, i));
    const root = mkdtempSync(join(tmpdir(), "xdiff-diff-"));
    try {
      const env = isolatedGitEnv(root);
      cases.forEach((c, i) => {
        const dir = join(root, String(i));
        mkdirSync(dir);
        writeFileSync(join(dir, "base"), c.base);
        writeFileSync(join(dir, "ours"), c.ours);
        writeFileSync(join(dir, "theirs"), c.theirs);
      });
      const expected = await runLimited(cases.length, PARALLEL, (i) => gitMergeFile(join(root, String(i)), env));

      const failures: unknown[] = [];
      const kinds = new Map<string, number>();
      let withConflicts = 0;
      cases.forEach((c, i) => {
        const want = expected[i] as { out: string; code: number };
        const got = mergeText(c.base, c.ours, c.theirs);
        kinds.set(c.kind, (kinds.get(c.kind) ?? 0) + 1);
        if (want.code > 0) withConflicts++;
        const problems: string[] = [];
        if (got.text !== want.out) problems.push("text differs");
        if (Math.min(got.conflicts.length, 127) !== want.code) problems.push(`conflicts ${got.conflicts.length} != exit ${want.code}`);
        let prevEnd = 0;
        for (const r of got.conflicts) {
          const first = lineAt(got.text, r.start) ?? "";
          const last = lineAt(got.text, r.end) ?? "";
          if (!first.startsWith("<<<<<<<") || !last.startsWith(">>>>>>>") || r.start <= prevEnd || r.end <= r.start) {
            problems.push(`bad range ${JSON.stringify(r)}`);
          }
          prevEnd = r.end;
        }
        if (problems.length > 0) {
          failures.push({ seed: SEED, case: i, kind: c.kind, problems, base: c.base, ours: c.ours, theirs: c.theirs, git: want.out, ours_text: got.text });
        }
      });
      if (failures.length > 0) console.error(`xdiff differential: seed ${SEED}, ${failures.length} failing case(s)`);
      // Keep the report readable: the first few failures carry everything needed to replay.
      expect(failures.slice(0, 3)).toEqual([]);
      // The generator must actually produce both kinds of merge.
      expect(withConflicts).toBeGreaterThan(CASES / 10);
      expect(CASES - withConflicts).toBeGreaterThan(CASES / 10);
      console.log(`xdiff differential: seed ${SEED}, ${CASES} cases, ${withConflicts} with conflicts, kinds ${JSON.stringify(Object.fromEntries(kinds))}`);
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  }, 120_000);
});
