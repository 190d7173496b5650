/*
 * Unified diff hunks as `git diff` prints them (xdiff's xdl_diff with the
 * indent heuristic, then xdl_emit_diff with three lines of context and
 * XDL_EMIT_FUNCNAMES with git's default function-name rule): the same
 * hunks, the same `@@` lines, the same "\ No newline at end of file".
 *
 * What is left out: git trims a common tail of 1 KiB blocks before diffing
 * (xdiff-interface.c trim_common_tail), which can only cut post-context of
 * very long lines; and the function name is cut at 80 characters here, at
 * 80 bytes in git (the same for ASCII).
 */
import { buildScript, changeCompact, doDiff, type Records, recText, splitRecords, type XdChange } from "./diff.ts";

const encoder = new TextEncoder();
const CONTEXT = 3;
/* xdl_get_hunk: changes this close share a hunk. */
const MAX_COMMON = 2 * CONTEXT;
const FUNC_LINE_MAX = 80;

/* def_ff: a line starting with a letter, `_` or `$`, trailing white space dropped. */
function funcName(rec: string): string | null {
  const c = rec.charCodeAt(0);
  if (!((c >= 65 && c <= 90) || (c >= 97 && c <= 122) || c === 95 || c === 36)) return null;
  return rec.slice(0, FUNC_LINE_MAX).replace(/[ \t\n\v\f\r]+$/, "");
}

/* The script of `git diff`: Myers with git's heuristics, compacted with the indent heuristic. */
function diffChanges(recs1: Records, recs2: Records): XdChange[] {
  const env = doDiff(recs1, recs2);
  changeCompact(env.xdf1, env.xdf2, true);
  changeCompact(env.xdf2, env.xdf1, true);
  return buildScript(env);
}

function record(prefix: string, rec: string): string {
  return rec.endsWith("\n") ? `${prefix}${rec}` : `${prefix}${rec}\n\\ No newline at end of file\n`;
}

function range(start: number, count: number): string {
  const s = count === 0 ? start - 1 : start;
  return count === 1 ? `${s}` : `${s},${count}`;
}

/** The hunks of `git diff` between two texts (empty when they are equal). */
export function unifiedHunks(a: string, b: string): string {
  const r1 = splitRecords(encoder.encode(a));
  const r2 = splitRecords(encoder.encode(b));
  const script = diffChanges(r1, r2);
  const out: string[] = [];
  let funcLine = "";
  let funcLinePrev = -1;
  for (let first = 0; first < script.length; ) {
    // xdl_get_hunk: extend over changes closer than MAX_COMMON lines.
    let last = first;
    while (last + 1 < script.length) {
      const prev = script[last]!;
      const next = script[last + 1]!;
      if (next.i1 - (prev.i1 + prev.chg1) > MAX_COMMON) break;
      last++;
    }
    const xch = script[first]!;
    const xche = script[last]!;
    let s1 = Math.max(xch.i1 - CONTEXT, 0);
    let s2 = Math.max(xch.i2 - CONTEXT, 0);
    let lctx = CONTEXT;
    lctx = Math.min(lctx, r1.n - (xche.i1 + xche.chg1));
    lctx = Math.min(lctx, r2.n - (xche.i2 + xche.chg2));
    const e1 = xche.i1 + xche.chg1 + lctx;
    const e2 = xche.i2 + xche.chg2 + lctx;
    // get_func_line: the nearest function line above the hunk, not looking past the last search.
    for (let l = s1 - 1; l !== funcLinePrev && l >= 0 && l < r1.n; l--) {
      const name = funcName(recText(r1, l));
      if (name !== null) {
        funcLine = name;
        break;
      }
    }
    funcLinePrev = s1 - 1;
    out.push(`@@ -${range(s1 + 1, e1 - s1)} +${range(s2 + 1, e2 - s2)} @@${funcLine ? ` ${funcLine}` : ""}\n`);
    for (; s2 < xch.i2; s2++) out.push(record(" ", recText(r2, s2)));
    for (let k = first; k <= last; k++) {
      const c = script[k]!;
      if (k > first) {
        const p = script[k - 1]!;
        for (let a1 = p.i1 + p.chg1, a2 = p.i2 + p.chg2; a1 < c.i1 && a2 < c.i2; a1++, a2++) out.push(record(" ", recText(r2, a2)));
      }
      for (let i = c.i1; i < c.i1 + c.chg1; i++) out.push(record("-", recText(r1, i)));
      for (let i = c.i2; i < c.i2 + c.chg2; i++) out.push(record("+", recText(r2, i)));
    }
    for (s2 = xche.i2 + xche.chg2; s2 < e2; s2++) out.push(record(" ", recText(r2, s2)));
    first = last + 1;
  }
  return out.join("");
}
