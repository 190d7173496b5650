/*
 * Differential test: unifiedHunks (what `slivingdoc diff` prints below each
 * file's headers) against C git's `git diff --no-index` on seeded
 * pseudo-random pairs — indented lines, blank lines and repeats, so that
 * the indent heuristic, the function-name lines and the sliding of groups
 * all matter. Set UNIFIED_SEED to replay a seed, UNIFIED_CASES for more.
 */
import { afterAll, expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { unifiedHunks } from "../../../src/engine/merge/xdiff/unified.ts";
import { isolatedGitEnv, mulberry32 } from "../../support/seeded.ts";

const SEED = Number(process.env.UNIFIED_SEED ?? 0x0d1ff);
const CASES = Number(process.env.UNIFIED_CASES ?? 200);
const LINES = ["foo", "bar", "  baz", "\tqux", "", "  ", "}", "{", "if (x) {", "    return;", "int main()", "_under", "$x", "# head", "héllo", "    }", "a".repeat(100)];

const dir = mkdtempSync(join(tmpdir(), "slivingdoc-unified-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function cgitHunks(a: string, b: string): string {
  writeFileSync(join(dir, "a"), a);
  writeFileSync(join(dir, "b"), b);
  const p = Bun.spawnSync(["git", "diff", "--no-index", "a", "b"], { cwd: dir, env: isolatedGitEnv(dir), stdout: "pipe" });
  const out = p.stdout.toString();
  const at = out.indexOf("\n@@");
  return at < 0 ? "" : out.slice(at + 1);
}

test(`unifiedHunks agrees with git diff on ${CASES} seeded cases (seed ${SEED})`, () => {
  const next = mulberry32(SEED);
  const int = (n: number) => Math.floor(next() * n);
  const make = (n: number) => Array.from({ length: n }, () => LINES[int(LINES.length)]! + (next() < 0.3 ? String(int(4)) : ""));
  for (let c = 0; c < CASES; c++) {
    const a = make(int(40));
    const b = [...a];
    for (let k = 1 + int(6); k > 0; k--) {
      const i = int(b.length + 1);
      const op = next();
      if (op < 0.4) b.splice(i, 0, ...make(1 + int(5)));
      else if (op < 0.8) b.splice(i, 1 + int(4));
      else if (b.length > 0) b[Math.min(i, b.length - 1)] = LINES[int(LINES.length)]!;
    }
    const text = (lines: string[]) => (lines.length === 0 ? "" : lines.join("\n") + (next() < 0.2 ? "" : "\n"));
    const ta = text(a);
    const tb = text(b);
    expect({ case: c, hunks: unifiedHunks(ta, tb) }).toEqual({ case: c, hunks: cgitHunks(ta, tb) });
  }
});
