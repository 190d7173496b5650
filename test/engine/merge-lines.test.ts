/*
 * merge=lines (src/engine/merge/lines.ts): the task-board cases, a reference
 * model, and the promise that neither side's line is ever dropped, on
 * fuzzed inputs (fast-check, seeded: LINES_SEED replays a run).
 */
import { describe, expect, test } from "bun:test";
import fc from "fast-check";
import { linesMergeText } from "../../src/engine/merge/lines.ts";
import { mergeText } from "../../src/engine/merge/xdiff/index.ts";

const SEED = Number(process.env.LINES_SEED ?? 0x11e5);
const RUNS = Number(process.env.LINES_RUNS ?? 400);

const board = (ticks: Record<number, string> = {}, n = 6): string =>
  Array.from({ length: n }, (_, i) => `- ${ticks[i] ?? "[ ]"} task ${i}\n`).join("");

describe("the task board", () => {
  const cases: Array<{ name: string; local: string; accepted: string; merged: string | null }> = [
    { name: "ticking neighbouring tasks merges", local: board({ 2: "[x]" }), accepted: board({ 3: "[x]" }), merged: board({ 2: "[x]", 3: "[x]" }) },
    { name: "ticking the first and second task merges", local: board({ 0: "[x]" }), accepted: board({ 1: "[x]" }), merged: board({ 0: "[x]", 1: "[x]" }) },
    { name: "ticking the last two tasks merges", local: board({ 5: "[x]" }), accepted: board({ 4: "[x]" }), merged: board({ 4: "[x]", 5: "[x]" }) },
    { name: "ticking the same task on both sides is clean", local: board({ 2: "[x]" }), accepted: board({ 2: "[x]" }), merged: board({ 2: "[x]" }) },
    { name: "the same task changed differently conflicts", local: board({ 2: "[x]" }), accepted: board({ 2: "[-]" }), merged: null },
    {
      name: "two tasks each, interleaved, merge",
      local: board({ 1: "[x]", 3: "[x]" }),
      accepted: board({ 2: "[x]", 4: "[x]" }),
      merged: board({ 1: "[x]", 2: "[x]", 3: "[x]", 4: "[x]" }),
    },
    { name: "a task added at the end by each side keeps both, local's first", local: board() + "- [ ] new L\n", accepted: board() + "- [ ] new A\n", merged: board() + "- [ ] new L\n- [ ] new A\n" },
    { name: "the same task added by both sides is kept once", local: board() + "- [ ] new\n", accepted: board() + "- [ ] new\n", merged: board() + "- [ ] new\n" },
    { name: "a tick next to an added task merges", local: board({ 5: "[x]" }), accepted: board() + "- [ ] new\n", merged: board({ 5: "[x]" }) + "- [ ] new\n" },
    { name: "a tick next to a removed task merges", local: board({ 2: "[x]" }), accepted: board().replace("- [ ] task 3\n", ""), merged: board({ 2: "[x]" }).replace("- [ ] task 3\n", "") },
    { name: "a removed task that the other side ticked conflicts", local: board().replace("- [ ] task 3\n", ""), accepted: board({ 3: "[x]" }), merged: null },
    {
      name: "CRLF boards merge in CRLF",
      local: board({ 2: "[x]" }).replaceAll("\n", "\r\n"),
      accepted: board({ 3: "[x]" }).replaceAll("\n", "\r\n"),
      merged: board({ 2: "[x]", 3: "[x]" }).replaceAll("\n", "\r\n"),
    },
  ];
  for (const c of cases) {
    test(c.name, () => {
      const base = c.local.includes("\r") ? board().replaceAll("\n", "\r\n") : board();
      const out = linesMergeText(base, c.local, c.accepted);
      if (c.merged !== null) {
        expect(out).toEqual({ text: c.merged, conflicts: [] });
      } else {
        expect(out.conflicts.length).toBe(1);
        // Both versions of the contested task are in the block, and only that task.
        const [start, end] = [out.conflicts[0]!.start, out.conflicts[0]!.end];
        const block = out.text.split("\n").slice(start - 1, end);
        expect(block[0]).toBe("<<<<<<< local");
        expect(block[block.length - 1]).toBe(">>>>>>> accepted");
        expect(block.filter((l) => l.startsWith("- ")).length).toBeLessThanOrEqual(2);
      }
    });
  }

  test("the same line changed differently conflicts with git's markers", () => {
    expect(linesMergeText("a\nb\nc\n", "a\nB\nc\n", "a\nβ\nc\n")).toEqual({
      text: "a\n<<<<<<< local\nB\n=======\nβ\n>>>>>>> accepted\nc\n",
      conflicts: [{ start: 2, end: 6 }],
    });
  });

  test("a line with no newline that something now follows gets one", () => {
    expect(linesMergeText("a\nb\n", "a\nb", "a\nb\nc\n").text).toBe("a\nb\nc\n");
    expect(linesMergeText("a\r\nb\r\n", "A\r\nb", "a\r\nb\r\nc\r\n").text).toBe("A\r\nb\r\nc\r\n");
  });
});

/*
 * The reference model: baseline lines all distinct, each side changes a set
 * of them (to lines of its own, or to a line both sides choose) and may
 * append lines; a side that appends leaves its last line alone, so every
 * change is a change of one line or an append. Per line: kept, one side's,
 * the common one, or a conflict block of that line alone; then local's
 * appended lines and accepted's (once if they are the same).
 */
interface ModelCase {
  n: number;
  local: Map<number, "own" | "shared">;
  accepted: Map<number, "own" | "shared">;
  localAppends: string[];
  acceptedAppends: string[];
}

const modelCase: fc.Arbitrary<ModelCase> = fc
  .record({
    n: fc.integer({ min: 0, max: 30 }),
    local: fc.array(fc.tuple(fc.nat(29), fc.constantFrom("own", "shared")), { maxLength: 10 }),
    accepted: fc.array(fc.tuple(fc.nat(29), fc.constantFrom("own", "shared")), { maxLength: 10 }),
    localAppends: fc.array(fc.constantFrom("x", "y", "z"), { maxLength: 3 }),
    acceptedAppends: fc.array(fc.constantFrom("x", "y", "z"), { maxLength: 3 }),
  })
  .map(({ n, local, accepted, localAppends, acceptedAppends }) => {
    const changes = (list: Array<[number, "own" | "shared"]>, appends: string[]) =>
      new Map(list.filter(([i]) => i < n && !(appends.length > 0 && i === n - 1)));
    return { n, local: changes(local, localAppends), accepted: changes(accepted, acceptedAppends), localAppends, acceptedAppends };
  });

function modelTexts(c: ModelCase): { base: string; local: string; accepted: string } {
  const line = (i: number, side: "L" | "A", change: "own" | "shared" | undefined) =>
    change === undefined ? `- [ ] task ${i}\n` : change === "shared" ? `- [x] task ${i}\n` : `- [${side}] task ${i}\n`;
  const text = (side: "L" | "A" | null, changes: Map<number, "own" | "shared">, appends: string[]) =>
    Array.from({ length: c.n }, (_, i) => line(i, side ?? "L", side ? changes.get(i) : undefined)).join("") +
    appends.map((a) => `- [ ] new ${side} ${a}\n`).join("");
  return { base: text(null, new Map(), []), local: text("L", c.local, c.localAppends), accepted: text("A", c.accepted, c.acceptedAppends) };
}

function model(c: ModelCase): { text: string; conflicts: Array<{ start: number; end: number }> } {
  const t = modelTexts(c);
  const lines = (s: string) => s.split(/(?<=\n)/).filter((l) => l !== "");
  const [base, local, accepted] = [lines(t.base), lines(t.local), lines(t.accepted)];
  const out: string[] = [];
  const conflicts: Array<{ start: number; end: number }> = [];
  for (let i = 0; i < c.n; i++) {
    const [b, l, a] = [base[i]!, local[i]!, accepted[i]!];
    if (l === a || a === b) out.push(l);
    else if (l === b) out.push(a);
    else {
      conflicts.push({ start: out.length + 1, end: out.length + 5 });
      out.push("<<<<<<< local\n", l, "=======\n", a, ">>>>>>> accepted\n");
    }
  }
  const [la, aa] = [local.slice(c.n), accepted.slice(c.n)];
  out.push(...la);
  if (la.join("") !== aa.join("")) out.push(...aa);
  return { text: out.join(""), conflicts };
}

test(`merge=lines agrees with the per-line reference model (${RUNS} runs, seed ${SEED})`, () => {
  let conflicted = 0;
  let neighbours = 0;
  fc.assert(
    fc.property(modelCase, (c) => {
      const t = modelTexts(c);
      const want = model(c);
      if (want.conflicts.length > 0) conflicted++;
      if ([...c.local.keys()].some((i) => c.accepted.has(i + 1) || c.accepted.has(i - 1))) neighbours++;
      expect(linesMergeText(t.base, t.local, t.accepted)).toEqual(want);
    }),
    { seed: SEED, numRuns: RUNS },
  );
  expect(conflicted).toBeGreaterThan(RUNS / 10);
  expect(neighbours).toBeGreaterThan(RUNS / 4);
});

/* Arbitrary three-way inputs: repeated lines, deletions, insertions anywhere, CRLF, missing final newlines. */
const WORDS = ["a", "b", "c", "", "- [ ] t", "- [x] t", "}", "日本"];
const edit = fc.record({ at: fc.double({ min: 0, max: 1, noNaN: true }), cut: fc.nat(3), put: fc.array(fc.constantFrom(...WORDS), { maxLength: 3 }) });
const anyCase = fc.record({
  base: fc.array(fc.constantFrom(...WORDS), { maxLength: 14 }),
  local: fc.array(edit, { maxLength: 4 }),
  accepted: fc.array(edit, { maxLength: 4 }),
  eol: fc.constantFrom("\n", "\r\n"),
  finalNewline: fc.tuple(fc.boolean(), fc.boolean(), fc.boolean()),
});

function texts(c: typeof anyCase extends fc.Arbitrary<infer T> ? T : never): [string, string, string] {
  const apply = (edits: typeof c.local) => {
    const lines = c.base.slice();
    for (const e of edits) lines.splice(Math.floor(e.at * (lines.length + 1)), e.cut, ...e.put);
    return lines;
  };
  const render = (lines: string[], nl: boolean) => {
    const s = lines.map((l) => l + c.eol).join("");
    return nl ? s : s.slice(0, s.length - c.eol.length);
  };
  return [render(c.base, c.finalNewline[0]), render(apply(c.local), c.finalNewline[1]), render(apply(c.accepted), c.finalNewline[2])];
}

/* How often each line (without its ending) occurs. */
function counts(text: string): Map<string, number> {
  const m = new Map<string, number>();
  for (const l of text.split(/(?<=\n)/)) if (l !== "") m.set(l.replace(/\r?\n$/, ""), (m.get(l.replace(/\r?\n$/, "")) ?? 0) + 1);
  return m;
}

test(`merge=lines never drops a line either side added (${RUNS} runs, seed ${SEED})`, () => {
  fc.assert(
    fc.property(anyCase, (c) => {
      const [base, local, accepted] = texts(c);
      const out = linesMergeText(base, local, accepted);
      const got = counts(out.text);
      const before = counts(base);
      const dropped: Array<{ line: string; added: number; kept: number }> = [];
      for (const side of [local, accepted]) {
        // A line a side holds more often than the baseline did was added by it.
        for (const [line, n] of counts(side)) {
          const added = n - (before.get(line) ?? 0);
          const kept = got.get(line) ?? 0;
          if (kept < added) dropped.push({ line, added, kept });
        }
      }
      expect(dropped).toEqual([]);
      // Every range is a whole block, in order.
      const lines = out.text.split("\n");
      let prevEnd = 0;
      for (const r of out.conflicts) {
        expect(lines[r.start - 1]!.startsWith("<<<<<<< local")).toBe(true);
        expect(lines[r.end - 1]!.startsWith(">>>>>>> accepted")).toBe(true);
        expect(r.start).toBeGreaterThan(prevEnd);
        prevEnd = r.end;
      }
    }),
    { seed: SEED, numRuns: RUNS },
  );
});

test("where git's text merge is clean, its result is taken, even where the per-line diffs disagree", () => {
  // Each side deletes one of two blank lines, and their diffs place the
  // deletion on different lines: per line, that is two deletions; git's
  // merge sees the one both made.
  const [base, local, accepted] = ["b\n\n\n", "a\nb\nb\n\n", "b\n\n"];
  const text = mergeText(base, local, accepted);
  expect(text).toEqual({ text: "a\nb\nb\n\n", conflicts: [] });
  expect(linesMergeText(base, local, accepted)).toEqual(text);
});

test(`merge=lines is git's text merge wherever that is clean (${RUNS} runs, seed ${SEED})`, () => {
  let resolved = 0;
  fc.assert(
    fc.property(anyCase, (c) => {
      const [base, local, accepted] = texts(c);
      const text = mergeText(base, local, accepted);
      const lines = linesMergeText(base, local, accepted);
      if (text.conflicts.length === 0) expect(lines).toEqual(text);
      else if (lines.conflicts.length === 0) resolved++;
    }),
    { seed: SEED, numRuns: RUNS },
  );
  // The inputs must include merges that merge=lines resolves where git's does not.
  expect(resolved).toBeGreaterThan(RUNS / 20);
});
