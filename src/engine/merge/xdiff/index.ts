/*
 * Line diff and three-way merge that agree byte for byte with C git
 * (`git merge-file`, `git diff --numstat`), by porting git's xdiff.
 * See diff.ts and merge.ts for the details of the port.
 */

import { changeCompact, diffScript, doDiff, recText, splitRecords } from "./diff.ts";
import { xdlMerge, type LineRange } from "./merge.ts";

export type { LineRange } from "./merge.ts";
export { findMarkerBlocks } from "./markers.ts";

export const MARKER_LABELS: { ours: "local"; theirs: "accepted" } = { ours: "local", theirs: "accepted" };

const encoder = new TextEncoder();
const decoder = new TextDecoder();

function bytesOf(text: string | Uint8Array): Uint8Array {
  return typeof text === "string" ? encoder.encode(text) : text;
}

/*
 * What `git merge-file -p -L local -L baseline -L accepted LOCAL BASELINE ACCEPTED`
 * prints, plus one range (one-based, inclusive, from the "<<<<<<<" line to
 * the ">>>>>>>" line) per conflict block. xdiff's own names (merge.ts, a
 * port of C git's) call local "ours" and accepted "theirs". Bytes in, bytes
 * out, as git: a big file is never a string. The result may be one of the
 * inputs, when the other side changed nothing.
 */
export function mergeBytes(baseline: Uint8Array, local: Uint8Array, accepted: Uint8Array): { bytes: Uint8Array; conflicts: LineRange[] } {
  return xdlMerge(baseline, local, accepted, MARKER_LABELS);
}

/*
 * What `git merge-file --union -p LOCAL BASELINE ACCEPTED` prints: where the
 * text merge would write a conflict block, both sides' lines, local's first.
 * It never reports a conflict.
 */
export function unionMergeBytes(baseline: Uint8Array, local: Uint8Array, accepted: Uint8Array): Uint8Array {
  return xdlMerge(baseline, local, accepted, MARKER_LABELS, "union").bytes;
}

/* mergeBytes on text (UTF-8 in, UTF-8 out). */
export function mergeText(baseline: string, local: string, accepted: string): { text: string; conflicts: LineRange[] } {
  const { bytes, conflicts } = mergeBytes(bytesOf(baseline), bytesOf(local), bytesOf(accepted));
  return { text: decoder.decode(bytes), conflicts };
}

/* unionMergeBytes on text. */
export function unionMergeText(baseline: string, local: string, accepted: string): string {
  return decoder.decode(unionMergeBytes(bytesOf(baseline), bytesOf(local), bytesOf(accepted)));
}

/*
 * The counts of `git diff --no-index --numstat`. Sliding hunks never changes
 * how many lines are marked, so no compaction (and no indent heuristic) is
 * needed to get them.
 */
export function diffStat(before: string | Uint8Array, after: string | Uint8Array): { insertions: number; deletions: number } {
  const a = bytesOf(before);
  const b = bytesOf(after);
  // Against nothing, every line counts: a file added or removed, which is
  // every file of a cold pull, needs no diff.
  if (a.length === 0) return { insertions: countLines(b), deletions: 0 };
  if (b.length === 0) return { insertions: 0, deletions: countLines(a) };
  const env = doDiff(splitRecords(a), splitRecords(b));
  let deletions = 0;
  let insertions = 0;
  for (let i = 0; i < env.xdf1.nrec; i++) if (env.xdf1.rchg[i + 1]) deletions++;
  for (let i = 0; i < env.xdf2.nrec; i++) if (env.xdf2.rchg[i + 1]) insertions++;
  return { insertions, deletions };
}

/* How many records splitRecords would make of `bytes`, without making them: the lines, a last one without "\n" included. */
export function countLines(bytes: Uint8Array): number {
  let n = 0;
  for (let nl = bytes.indexOf(10); nl >= 0; nl = bytes.indexOf(10, nl + 1)) n++;
  return bytes.length > 0 && bytes[bytes.length - 1] !== 10 ? n + 1 : n;
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
  const before = splitRecords(bytesOf(a));
  const after = splitRecords(bytesOf(b));
  const lines = Array.from({ length: before.n }, (_, i) => recText(before, i));
  const hunks = diffScript(before, after).script.map((x) => ({
    start: x.i1,
    end: x.i1 + x.chg1,
    lines: Array.from({ length: x.chg2 }, (_, k) => recText(after, x.i2 + k)),
  }));
  return { lines, hunks };
}

/*
 * For each line of `after`, the line of `before` it is kept from, or -1
 * for a line `after` changed or added: the correspondence `git blame` passes
 * blame along, from the diff it makes — git's line diff compacted with the
 * indent heuristic, git's default there as in `git diff` (unified.ts).
 */
export function keptLines(before: Uint8Array, after: Uint8Array): Int32Array {
  const env = doDiff(splitRecords(before), splitRecords(after));
  changeCompact(env.xdf1, env.xdf2, true);
  changeCompact(env.xdf2, env.xdf1, true);
  const kept = new Int32Array(env.xdf2.nrec).fill(-1);
  // Unchanged lines pair up one to one, in order (rchg: record i at i + 1).
  for (let i1 = 0, i2 = 0; i2 < env.xdf2.nrec; ) {
    if (env.xdf2.rchg[i2 + 1]) i2++;
    else if (env.xdf1.rchg[i1 + 1]) i1++;
    else kept[i2++] = i1++;
  }
  return kept;
}
