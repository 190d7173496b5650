/**
 * No function in the engine or the store layer is longer than sixty lines:
 * a longer one holds more than one concept, and is where the last bugs of
 * the publish path lived (a 135-line loop with four mutable flags). Split
 * by meaning, not by line count. The port of git's own xdiff functions
 * (engine/merge/xdiff/) follows git's shape and is left out. Functions are found by TypeScript's
 * own parser: declarations, methods, arrow functions and function
 * expressions, counted from their first line to their last.
 */
import { expect, test } from "bun:test";
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join, relative } from "node:path";
import ts from "typescript";

const MAX_LINES = 60;
const engine = join(import.meta.dir, "../../src/engine");
const store = join(import.meta.dir, "../../src/store");

function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((n) => {
    const p = join(dir, n);
    if (statSync(p).isDirectory()) return relative(engine, p) === "merge/xdiff" ? [] : sources(p);
    return p.endsWith(".ts") ? [p] : [];
  });
}

/** Each function of `file` longer than MAX_LINES, as "path:line name (n lines)". */
function longFunctions(file: string, text: string): string[] {
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true);
  const found: string[] = [];
  const visit = (node: ts.Node) => {
    if ((ts.isFunctionDeclaration(node) || ts.isMethodDeclaration(node) || ts.isArrowFunction(node) || ts.isFunctionExpression(node)) && node.body) {
      const first = source.getLineAndCharacterOfPosition(node.getStart()).line;
      const lines = source.getLineAndCharacterOfPosition(node.getEnd()).line - first + 1;
      const name = node.name?.getText() ?? (ts.isVariableDeclaration(node.parent) ? node.parent.name.getText() : "(anonymous)");
      if (lines > MAX_LINES) found.push(`${relative(engine, file)}:${first + 1} ${name} (${lines} lines)`);
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

test(`no function in the engine is over ${MAX_LINES} lines (git's xdiff port aside)`, () => {
  expect(sources(engine).flatMap((f) => longFunctions(f, readFileSync(f, "utf8")))).toEqual([]);
});

test(`no function in the store layer is over ${MAX_LINES} lines`, () => {
  expect(sources(store).flatMap((f) => longFunctions(f, readFileSync(f, "utf8")))).toEqual([]);
});

test("the measure sees a long function, of every kind", () => {
  const body = Array.from({ length: MAX_LINES }, (_, i) => `  const x${i} = ${i};`).join("\n");
  const text = `function a() {\n${body}\n}\nconst b = () => {\n${body}\n};\nclass C {\n  m() {\n${body}\n  }\n}\n`;
  expect(longFunctions(join(engine, "x.ts"), text)).toEqual([
    `x.ts:1 a (${MAX_LINES + 2} lines)`,
    `x.ts:${MAX_LINES + 3} b (${MAX_LINES + 2} lines)`,
    `x.ts:${2 * MAX_LINES + 6} m (${MAX_LINES + 2} lines)`,
  ]);
});
