/**
 * No function in src/ is longer than sixty lines, and no file longer than
 * five hundred: a longer function holds more than one concept, and is where
 * the last bugs of the publish path lived (a 135-line loop with four
 * mutable flags); a longer file is a room every walk through the code
 * passes. Split by meaning, not by line count. The port of git's own xdiff
 * functions (engine/merge/xdiff/) follows git's shape and is left out.
 * Functions are found by TypeScript's own parser: declarations, methods,
 * arrow functions and function expressions, counted from their first line
 * to their last, blank lines and comments included.
 */
import { expect, test } from "bun:test";
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join, relative } from "node:path";
import ts from "typescript";

const MAX_LINES = 60;
const MAX_FILE_LINES = 500;
const src = join(import.meta.dir, "../../src");

function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((n) => {
    const p = join(dir, n);
    if (statSync(p).isDirectory()) return relative(src, p) === "engine/merge/xdiff" ? [] : sources(p);
    return /\.tsx?$/.test(p) ? [p] : [];
  });
}

/** Each function of `file` longer than MAX_LINES, as "path:line name (n lines)". */
function longFunctions(file: string, text: string): string[] {
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true, file.endsWith(".tsx") ? ts.ScriptKind.TSX : ts.ScriptKind.TS);
  const found: string[] = [];
  const visit = (node: ts.Node) => {
    if ((ts.isFunctionDeclaration(node) || ts.isMethodDeclaration(node) || ts.isArrowFunction(node) || ts.isFunctionExpression(node)) && node.body) {
      const first = source.getLineAndCharacterOfPosition(node.getStart()).line;
      const lines = source.getLineAndCharacterOfPosition(node.getEnd()).line - first + 1;
      const name = node.name?.getText() ?? (ts.isVariableDeclaration(node.parent) ? node.parent.name.getText() : "(anonymous)");
      if (lines > MAX_LINES) found.push(`${relative(src, file)}:${first + 1} ${name} (${lines} lines)`);
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

/** `file` as "path (n lines)" when it is longer than MAX_FILE_LINES. */
function longFile(file: string, text: string): string[] {
  const lines = text.split("\n").length - (text.endsWith("\n") ? 1 : 0);
  return lines > MAX_FILE_LINES ? [`${relative(src, file)} (${lines} lines)`] : [];
}

test(`no function in src/ is over ${MAX_LINES} lines (git's xdiff port aside)`, () => {
  expect(sources(src).flatMap((f) => longFunctions(f, readFileSync(f, "utf8")))).toEqual([]);
});

test(`no file in src/ is over ${MAX_FILE_LINES} lines (git's xdiff port aside)`, () => {
  expect(sources(src).flatMap((f) => longFile(f, readFileSync(f, "utf8")))).toEqual([]);
});

test("the measure sees a long function, of every kind, and a long file", () => {
  const body = Array.from({ length: MAX_LINES }, (_, i) => `  const x${i} = ${i};`).join("\n");
  const text = `function a() {\n${body}\n}\nconst b = () => {\n${body}\n};\nclass C {\n  m() {\n${body}\n  }\n}\n`;
  expect(longFunctions(join(src, "x.ts"), text)).toEqual([
    `x.ts:1 a (${MAX_LINES + 2} lines)`,
    `x.ts:${MAX_LINES + 3} b (${MAX_LINES + 2} lines)`,
    `x.ts:${2 * MAX_LINES + 6} m (${MAX_LINES + 2} lines)`,
  ]);
  expect(longFunctions(join(src, "x.tsx"), `const V = () => {\n${body}\n  return <div>{x0}</div>;\n};\n`)).toEqual([`x.tsx:1 V (${MAX_LINES + 3} lines)`]);
  expect(longFile(join(src, "y.ts"), "x\n".repeat(MAX_FILE_LINES))).toEqual([]);
  expect(longFile(join(src, "y.ts"), "x\n".repeat(MAX_FILE_LINES + 1))).toEqual([`y.ts (${MAX_FILE_LINES + 1} lines)`]);
});
