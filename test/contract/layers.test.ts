/**
 * The layers stay as the folder tree shows them (docs: README "For
 * contributors"): imports point down only — surfaces → engine → store →
 * contract — isomorphic-git is imported in one engine file, the AWS SDK in
 * one store file, and `process` is touched only by the surfaces and main.ts.
 */
import { expect, test } from "bun:test";
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join, relative } from "node:path";

const src = join(import.meta.dir, "../../src");
const files = (function walk(dir: string): string[] {
  return readdirSync(dir).flatMap((n) => (statSync(join(dir, n)).isDirectory() ? walk(join(dir, n)) : n.endsWith(".ts") ? [join(dir, n)] : []));
})(src).map((f) => relative(src, f));

const LAYERS = ["contract", "store", "engine", "surfaces"] as const;
const layerOf = (file: string) => LAYERS.indexOf(file.split("/")[0] as (typeof LAYERS)[number]);

function imports(file: string): string[] {
  const text = readFileSync(join(src, file), "utf8");
  return [...text.matchAll(/^\s*(?:import|export)\s[^;]*?from\s+"([^"]+)"/gm), ...text.matchAll(/import\("([^"]+)"\)/g)].map((m) => m[1]!);
}

test("imports point down the layers only", () => {
  const upward: string[] = [];
  for (const file of files) {
    const own = layerOf(file);
    if (own < 0) continue; // main.ts sits above every layer
    for (const spec of imports(file).filter((s) => s.startsWith("."))) {
      const target = relative(src, join(src, file, "..", spec));
      const layer = layerOf(target);
      if (layer > own) upward.push(`${file} → ${target}`);
    }
  }
  expect(upward).toEqual([]);
});

test("isomorphic-git in one engine file, the AWS SDK in one store file", () => {
  const users = (pkg: RegExp) => files.filter((f) => imports(f).some((s) => pkg.test(s))).sort();
  expect(users(/^isomorphic-git/)).toEqual(["engine/git/object-cache.ts"]);
  expect(users(/^@aws-sdk\//)).toEqual(["store/s3.ts"]);
  expect(users(/^@modelcontextprotocol\//).every((f) => f.startsWith("surfaces/mcp/"))).toBe(true);
  expect(users(/^citty$/).every((f) => f.startsWith("surfaces/cli/"))).toBe(true);
});

test("only the surfaces and main.ts touch `process`", () => {
  const touching = files.filter((f) => {
    if (f === "main.ts" || f.startsWith("surfaces/")) return false;
    const code = readFileSync(join(src, f), "utf8").replace(/\/\*[\s\S]*?\*\/|\/\/.*$/gm, "");
    return /\bprocess\.(?!exitCode)/.test(code);
  });
  expect(touching).toEqual([]);
});
