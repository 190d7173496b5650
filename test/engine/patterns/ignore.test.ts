/**
 * .gitignore rules as C git applies them: table tests for the rules git's
 * documentation states, wildmatch's own cases, and generated ignore files
 * and work trees compared with `git check-ignore --no-index`.
 */
import { afterAll, describe, expect, test } from "bun:test";
import fc from "fast-check";
import { IgnoreRules, ignoreRules } from "../../../src/engine/patterns/ignore.ts";
import { toBytes, WM_PATHNAME, wildmatch } from "../../../src/engine/patterns/wildmatch.ts";
import { ScratchRepo } from "./cgit-patterns.ts";
import { DIRS, path, pattern } from "./generators.ts";

const repo = new ScratchRepo();
afterAll(() => repo.remove());

/** The work tree: each directory's .gitignore and the files; every directory on the way is one. */
function worktree(ignores: ReadonlyMap<string, string>, files: readonly string[]): Map<string, string> {
  const tree = new Map([...ignores].map(([dir, text]) => [dir === "" ? ".gitignore" : `${dir}/.gitignore`, text]));
  for (const f of files) if (!tree.has(f)) tree.set(f, "x\n");
  return tree;
}

/** Every path of the tree with whether it is a directory. */
function entries(tree: ReadonlyMap<string, string>): Array<[string, boolean]> {
  const dirs = new Set<string>();
  for (const f of tree.keys()) for (let i = f.indexOf("/"); i >= 0; i = f.indexOf("/", i + 1)) dirs.add(f.slice(0, i));
  return [...[...dirs].map((d): [string, boolean] => [d, true]), ...[...tree.keys()].map((f): [string, boolean] => [f, false])];
}

/** Ours for each path of the tree, once C git is seen to say the same. */
function ignoredIn(ignores: Record<string, string>, files: string[], lowest = ""): Set<string> {
  const byDir = new Map(Object.entries(ignores));
  const tree = worktree(byDir, files);
  const rules = ignoreRules(byDir, lowest);
  const all = entries(tree);
  const ours = new Set(all.filter(([p, isDir]) => rules.ignored(p, isDir)).map(([p]) => p));
  if (lowest === "") {
    const git = repo.reset(tree).ignored(all.map(([p]) => p));
    expect([...ours].sort()).toEqual(all.filter(([p]) => git.get(p)).map(([p]) => p).sort());
  }
  return ours;
}

describe("wildmatch (cases from git's t3070)", () => {
  const cases: Array<[string, string, boolean, boolean]> = [
    // pattern, text, match without and with WM_PATHNAME
    ["foo", "foo", true, true],
    ["bar", "foo", false, false],
    ["???", "foo", true, true],
    ["*f", "foo", false, false],
    ["*", "foo/bar", true, false],
    ["**", "foo/bar", true, true],
    ["foo/**/bar", "foo/bar", false, true],
    ["foo/**/bar", "foo/a/b/bar", true, true],
    ["foo**bar", "foo/baz/bar", true, false],
    ["foo?bar", "foo/bar", true, false],
    ["foo[/]bar", "foo/bar", true, false],
    ["**/foo", "foo", false, true],
    ["**/foo", "a/b/foo", true, true],
    ["*/foo", "a/b/foo", true, false],
    ["[!a-z]", "A", true, true],
    ["[^a-z]", "a", false, false],
    ["[]]", "]", true, true],
    ["[]-]", "-", true, true],
    ["[a-]", "-", true, true],
    ["[[:alpha:]][[:digit:]][[:upper:]]", "a1B", true, true],
    ["[[:digit:][:upper:][:space:]]", " ", true, true],
    ["[[:digit:]x]", "x", true, true],
    ["[[:digi:]]", "1", false, false],
    ["[[:]", "[", true, true],
    ["[", "[", false, false],
    ["\\*", "*", true, true],
    ["\\*", "a", false, false],
    ["foo\\", "foo\\", false, false],
    ["*.c", "mozilla-sha1/sha1.c", true, false],
    ["**/*a*b*g*n*t", "abcd/abcdefg/abcdefghijk/abcdefghijklmnop.txt", true, true],
    ["a[c-c]st", "acrt", false, false],
    ["-*-*-*-*-*-*-12-*-*-*-m-*-*-*", "-adobe-courier-bold-o-normal--12-120-75-75-m-70-iso8859-1", true, true],
  ];
  for (const [p, t, plain, pathname] of cases) {
    test(`${p} ~ ${t}`, () => {
      expect([wildmatch(toBytes(p), toBytes(t)), wildmatch(toBytes(p), toBytes(t), WM_PATHNAME)]).toEqual([plain, pathname]);
    });
  }
});

describe("table", () => {
  test("a pattern without a slash matches the name at any depth below its file's directory", () => {
    expect(ignoredIn({ "": "*.swp\n" }, ["a.swp", "d/e/b.swp", "c.md"])).toEqual(new Set(["a.swp", "d/e/b.swp"]));
    expect(ignoredIn({ d: "*.swp\n" }, ["a.swp", "d/e/b.swp"])).toEqual(new Set(["d/e/b.swp"]));
  });

  test("a leading or middle slash anchors the pattern to its file's directory", () => {
    expect(ignoredIn({ "": "/a.md\nd/b.md\n" }, ["a.md", "x/a.md", "d/b.md", "x/d/b.md"])).toEqual(new Set(["a.md", "d/b.md"]));
    expect(ignoredIn({ x: "/a.md\n" }, ["a.md", "x/a.md", "x/y/a.md"])).toEqual(new Set(["x/a.md"]));
  });

  test("a trailing slash matches directories only, and what is below an excluded directory is ignored", () => {
    expect(ignoredIn({ "": "tmp/\n" }, ["tmp/a.md", "d/tmp/b.md", "e/tmp"])).toEqual(new Set(["tmp", "tmp/a.md", "d/tmp", "d/tmp/b.md"]));
  });

  test("**/, /** and /**/", () => {
    expect(ignoredIn({ "": "**/log\n" }, ["log", "a/b/log", "a/logs"])).toEqual(new Set(["log", "a/b/log"]));
    expect(ignoredIn({ "": "a/**\n" }, ["a/x", "a/b/y", "b/a/z"])).toEqual(new Set(["a/x", "a/b", "a/b/y"]));
    expect(ignoredIn({ "": "a/**/z\n" }, ["a/z", "a/b/z", "a/b/c/z", "b/a/z"])).toEqual(new Set(["a/z", "a/b/z", "a/b/c/z"]));
  });

  test("! includes again, unless a parent directory is excluded; deeper files win", () => {
    expect(ignoredIn({ "": "*.log\n!keep.log\n" }, ["a.log", "keep.log"])).toEqual(new Set(["a.log"]));
    expect(ignoredIn({ "": "d/\n!d/keep.md\n" }, ["d/keep.md", "d/x.md"])).toEqual(new Set(["d", "d/keep.md", "d/x.md"]));
    expect(ignoredIn({ "": "*.log\n", d: "!*.log\n" }, ["a.log", "d/a.log"])).toEqual(new Set(["a.log"]));
    expect(ignoredIn({ "": "d/\n", d: "!*\n" }, ["d/a.md"])).toEqual(new Set(["d", "d/.gitignore", "d/a.md"]));
  });

  test("comments, escapes, trailing spaces and CRLF", () => {
    expect(ignoredIn({ "": "# a.md\n\\#b.md\n\\!c.md\n" }, ["a.md", "#b.md", "!c.md"])).toEqual(new Set(["#b.md", "!c.md"]));
    expect(ignoredIn({ "": "a.md   \nb.md\\ \n" }, ["a.md", "b.md", "b.md "])).toEqual(new Set(["a.md", "b.md "]));
    expect(ignoredIn({ "": "a.md\r\n" }, ["a.md"])).toEqual(new Set(["a.md"]));
  });

  test("the lowest list yields to every .gitignore", () => {
    expect(ignoredIn({ "": "!keep.swp\n" }, ["a.swp", "keep.swp"], "*.swp\n")).toEqual(new Set(["a.swp"]));
  });

  test("IgnoreRules.enter: a walk's rules, deeper over shallower", () => {
    const root = IgnoreRules.base("*.swp\n").enter("", "*.log\n");
    const d = root.enter("d", "!a.log\n/x/\n");
    expect([root.excludes("a.swp", false), root.excludes("a.log", false), d.excludes("d/a.log", false), d.excludes("d/b.log", false)]).toEqual([true, true, false, true]);
    expect([d.excludes("d/x", true), d.excludes("d/x", false), root.enter("e", null).excludes("e/a.log", false)]).toEqual([true, false, true]);
  });
});

/** A .gitignore line: patterns, negations, comments, escapes, trailing spaces. */
const line = fc.oneof(
  { weight: 6, arbitrary: pattern },
  { weight: 2, arbitrary: pattern.map((p) => `!${p}`) },
  { weight: 1, arbitrary: fc.tuple(pattern, fc.constantFrom("  ", " \\ ", "\t", "\r")).map(([p, s]) => p + s) },
  { weight: 1, arbitrary: fc.constantFrom("# comment", "", "\\#a", "\\!a", "!", "/", "**", "!**/") },
);
const ignoreFiles = fc.dictionary(fc.constantFrom(...DIRS), fc.array(line, { maxLength: 5 }).map((l) => `${l.join("\n")}\n`), { maxKeys: 4 });

/** Files whose paths leave room for every directory: no file where another needs a directory. */
function workTreeFiles(paths: string[], dirs: readonly string[]): string[] {
  const needDirs = new Set<string>(dirs.filter((d) => d !== "").flatMap((d) => d.split("/").map((_, i, s) => s.slice(0, i + 1).join("/"))));
  const kept: string[] = [];
  for (const p of paths) {
    const parents = p.split("/").slice(0, -1).map((_, i, s) => s.slice(0, i + 1).join("/"));
    if (needDirs.has(p) || parents.some((d) => kept.includes(d))) continue;
    if (kept.some((k) => k.startsWith(`${p}/`))) continue;
    kept.push(p);
    for (const d of parents) needDirs.add(d);
  }
  return kept;
}

test("generated .gitignore files and work trees: the same files and directories ignored as `git check-ignore`", () => {
  fc.assert(
    fc.property(ignoreFiles, fc.uniqueArray(path, { minLength: 1, maxLength: 12 }), (ignores, paths) => {
      ignoredIn(ignores, workTreeFiles(paths, Object.keys(ignores)));
    }),
    { seed: 2323, numRuns: 300 },
  );
});
