/**
 * The `merge` attribute as C git resolves it: table tests for the rules
 * git's documentation states, and generated .gitattributes files and paths
 * compared with `git check-attr merge`.
 */
import { afterAll, describe, expect, test } from "bun:test";
import fc from "fast-check";
import { attributeRules, type MergeAttribute } from "../../../src/engine/patterns/attributes.ts";
import { ScratchRepo } from "./cgit-patterns.ts";
import { DIRS, path, pattern } from "./generators.ts";

const repo = new ScratchRepo();
afterAll(() => repo.remove());

const printed = (a: MergeAttribute) => (a.state === "value" ? a.value : a.state);
const worktree = (byDir: ReadonlyMap<string, string>) => new Map([...byDir].map(([dir, text]) => [dir === "" ? ".gitattributes" : `${dir}/.gitattributes`, text]));

/** Ours, once C git is seen to say the same. */
function mergeOf(files: Record<string, string>, p: string): string {
  const byDir = new Map(Object.entries(files));
  const ours = printed(attributeRules(byDir).merge(p));
  expect(ours).toBe(repo.reset(worktree(byDir)).mergeAttr([p]).get(p)!);
  return ours;
}

describe("table", () => {
  test("no file, no line, no match: unspecified", () => {
    expect(mergeOf({}, "a.md")).toBe("unspecified");
    expect(mergeOf({ "": "*.txt merge=union\n" }, "a.md")).toBe("unspecified");
  });

  test("set, unset, back to unspecified, a value", () => {
    expect(mergeOf({ "": "*.md merge\n" }, "a.md")).toBe("set");
    expect(mergeOf({ "": "*.md -merge\n" }, "a.md")).toBe("unset");
    expect(mergeOf({ "": "*.md merge=union\n*.md !merge\n" }, "a.md")).toBe("unspecified");
    expect(mergeOf({ "": "*.md merge=union\n" }, "d/a.md")).toBe("union");
  });

  test("a later line wins over an earlier one, a later state over an earlier one on the same line", () => {
    expect(mergeOf({ "": "*.md merge=union\na.md merge=lines\n" }, "a.md")).toBe("lines");
    expect(mergeOf({ "": "a.md merge=lines\n*.md merge=union\n" }, "a.md")).toBe("union");
    expect(mergeOf({ "": "*.md merge=union merge=lines\n" }, "a.md")).toBe("lines");
  });

  test("a deeper directory's file wins over a shallower one's, whatever its line order", () => {
    const files = { "": "*.md merge=union\n", d: "*.md merge=lines\n" };
    expect(mergeOf(files, "d/a.md")).toBe("lines");
    expect(mergeOf(files, "d/e/a.md")).toBe("lines");
    expect(mergeOf(files, "a.md")).toBe("union");
    expect(mergeOf(files, "e/a.md")).toBe("union");
  });

  test("a pattern with a slash is anchored to its file's directory; a trailing slash never matches a file", () => {
    const files = { "": "/top.md merge=union\nd/*.md merge=lines\nx/ merge=union\n", d: "e/a.md -merge\n" };
    expect(mergeOf(files, "top.md")).toBe("union");
    expect(mergeOf(files, "d/top.md")).toBe("lines");
    expect(mergeOf(files, "d/e/a.md")).toBe("unset");
    expect(mergeOf(files, "e/a.md")).toBe("unspecified");
    expect(mergeOf(files, "x/a.md")).toBe("unspecified");
    expect(mergeOf({ "": "x/** merge=union\n" }, "x/y/a.md")).toBe("union");
  });

  test("binary and [attr] macros, defined in the root file only", () => {
    expect(mergeOf({ "": "*.png binary\n" }, "a.png")).toBe("unset");
    expect(mergeOf({ "": "*.png merge=union binary\n" }, "a.png")).toBe("unset");
    expect(mergeOf({ "": "*.png binary merge=union\n" }, "a.png")).toBe("union");
    expect(mergeOf({ "": "[attr]log merge=union\n*.log log\n" }, "d/a.log")).toBe("union");
    expect(mergeOf({ "": "[attr]log merge=union\n*.log -log\n" }, "a.log")).toBe("unspecified");
    expect(mergeOf({ "": "*.log log\n", d: "[attr]log merge=union\n" }, "d/a.log")).toBe("unspecified");
    expect(mergeOf({ "": "[attr]binary merge=lines\n*.png binary\n" }, "a.png")).toBe("lines");
  });

  test("lines git passes over: negative patterns, invalid names, comments, lines of 2,048 bytes or more", () => {
    expect(mergeOf({ "": "*.md merge=union\n!a.md -merge\n" }, "a.md")).toBe("union");
    expect(mergeOf({ "": "\\!a.md merge=union\n" }, "!a.md")).toBe("union");
    expect(mergeOf({ "": "*.md merge=union\n*.md -merge +bad\n" }, "a.md")).toBe("union");
    expect(mergeOf({ "": "# *.md merge=union\n  \t\n" }, "a.md")).toBe("unspecified");
    expect(mergeOf({ "": `*.md merge=union\n*.md -merge${" ".repeat(2048)}\n` }, "a.md")).toBe("union");
    expect(mergeOf({ "": `*.md merge=union\r\n` }, "a.md")).toBe("union");
  });

  test("a quoted pattern names a path with spaces", () => {
    expect(mergeOf({ "": '"a b.md" merge=union\n' }, "a b.md")).toBe("union");
    expect(mergeOf({ "": '"\\303\\251.md" merge=union\n' }, "é.md")).toBe("union");
  });
});

/** A .gitattributes line: rules, macros, comments and lines git refuses. */
const state = fc.constantFrom("merge", "-merge", "!merge", "merge=union", "merge=lines", "merge=text", "binary", "-binary", "m", "text", "merge=a=b", "+bad");
const line = fc.oneof(
  { weight: 6, arbitrary: fc.tuple(pattern, fc.array(state, { minLength: 1, maxLength: 3 })).map(([p, s]) => `${p} ${s.join(" ")}`) },
  { weight: 1, arbitrary: fc.tuple(pattern, state).map(([p, s]) => `!${p} ${s}`) },
  { weight: 1, arbitrary: fc.tuple(pattern, state).map(([p, s]) => `"${p.replace(/\\/g, "\\\\")}" ${s}`) },
  { weight: 1, arbitrary: fc.array(state, { minLength: 1, maxLength: 2 }).map((s) => `[attr]m ${s.join(" ")}`) },
  { weight: 1, arbitrary: fc.constantFrom("# comment", "", "  *.md\tmerge=union  ", "[attr]binary merge=lines") },
);
const attributeFiles = fc.dictionary(fc.constantFrom(...DIRS), fc.array(line, { maxLength: 6 }).map((l) => `${l.join("\n")}\n`), { maxKeys: 4 });

test("generated .gitattributes files and paths: the same merge attribute as `git check-attr merge`", () => {
  fc.assert(
    fc.property(attributeFiles, fc.uniqueArray(path, { minLength: 1, maxLength: 12 }), (files, paths) => {
      const byDir = new Map(Object.entries(files));
      const expected = repo.reset(worktree(byDir)).mergeAttr(paths);
      const rules = attributeRules(byDir);
      for (const p of paths) expect({ files, path: p, merge: printed(rules.merge(p)) }).toEqual({ files, path: p, merge: expected.get(p)! });
    }),
    { seed: 2323, numRuns: 300 },
  );
});
