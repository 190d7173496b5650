/*
 * Line diff and three-way merge that agree byte for byte with C git
 * (`git merge-file`, `git diff --numstat`), by porting git's xdiff.
 * See diff.ts and merge.ts for the details of the port.
 */

import { diffScript, doDiff, splitLines } from "./diff.ts";
import { xdlMerge, type LineRange } from "./merge.ts";

export type { LineRange } from "./merge.ts";
export { findMarkerBlocks } from "./markers.ts";

export const MARKER_LABELS: { ours: "local"; theirs: "accepted" } = { ours: "local", theirs: "accepted" };

/*
 * What `git merge-file -p -L local -L baseline -L accepted LOCAL BASELINE ACCEPTED`
 * prints, plus one range (one-based, inclusive, from the "<<<<<<<" line to
 * the ">>>>>>>" line) per conflict block. xdiff's own names (merge.ts, a
 * port of C git's) call local "ours" and accepted "theirs".
 */
export function mergeText(baseline: string, local: string, accepted: string): { text: string; conflicts: LineRange[] } {
  return xdlMerge(baseline, local, accepted, MARKER_LABELS);
}

/*
 * What `git merge-file --union -p LOCAL BASELINE ACCEPTED` prints: where the
 * text merge would write a conflict block, both sides' lines, local's first.
 * It never reports a conflict.
 */
export function unionMergeText(baseline: string, local: string, accepted: string): string {
  return xdlMerge(baseline, local, accepted, MARKER_LABELS, "union").text;
}

/*
 * The counts of `git diff --no-index --numstat`. Sliding hunks never changes
 * how many lines are marked, so no compaction (and no indent heuristic) is
 * needed to get them.
 */
export function diffStat(a: string, b: string): { insertions: number; deletions: number } {
  // Against nothing, every line counts: a file added or removed, which is
  // every file of a cold pull, needs no diff.
  if (a === "") return { insertions: countLines(b), deletions: 0 };
  if (b === "") return { insertions: 0, deletions: countLines(a) };
  const env = doDiff(splitLines(a), splitLines(b));
  let deletions = 0;
  let insertions = 0;
  for (let i = 0; i < env.xdf1.nrec; i++) if (env.xdf1.rchg[i + 1]) deletions++;
  for (let i = 0; i < env.xdf2.nrec; i++) if (env.xdf2.rchg[i + 1]) insertions++;
  return { insertions, deletions };
}

/* How many records splitLines would make of `text`, without making them. */
function countLines(text: string): number {
  let n = 0;
  for (let nl = text.indexOf("\n"); nl >= 0; nl = text.indexOf("\n", nl + 1)) n++;
  return text.length > 0 && !text.endsWith("\n") ? n + 1 : n;
}

/** One hunk of a line diff: lines [start, end) of the old text became `lines` (terminators kept). */
export interface LineHunk {
  start: number;
  end: number;
  lines: string[];
}

/*
 * git's line diff of `a` to `b` (the one its merges use, compacted as git
 * compacts it), with `a` split into lines as the hunks count them.
 */
export function lineHunks(a: string, b: string): { lines: string[]; hunks: LineHunk[] } {
  const lines = splitLines(a);
  const after = splitLines(b);
  const hunks = diffScript(lines, after).script.map((x) => ({ start: x.i1, end: x.i1 + x.chg1, lines: after.slice(x.i2, x.i2 + x.chg2) }));
  return { lines, hunks };
}
