/*
 * Three-way merge, ported from git's xdiff/xmerge.c (git 2.39) for the one
 * configuration `git merge-file` uses by default: level
 * XDL_MERGE_ZEALOUS_ALNUM, style "merge", marker size 7, with no favor or
 * the union favor of `git merge-file --union` (XDL_MERGE_FAVOR_UNION).
 *
 * The favor is read in one place in xmerge.c, as the buffer is filled: every
 * hunk still a conflict there becomes "take both". So the union merge keeps
 * what refinement and simplification did to the conflicts before: lines both
 * sides changed alike appear once, and the unchanged lines that
 * simplification folded into a conflict appear once per side, as in git.
 *
 * It is a port rather than an independent design because users see the
 * merged text and its conflict blocks, and they must be the ones git would
 * have produced from the same three files.
 */

import { diffScript, recBytes, recEndsInNewline, recEqual, type Records, splitRecords, subRecords, type XdChange, type XdEnv } from "./diff.ts";

export interface LineRange {
  start: number;
  end: number;
}

export interface MergeLabels {
  ours: string;
  theirs: string;
}

/*
 * mode: 0 = conflict, 1 = take side #1, 2 = take side #2, 3 = take both,
 * 4 = conflict that refinement found to be identical on both sides.
 * i1/chg1 and i2/chg2 point into the postimages, i0/chg0 into the base.
 */
interface XdMerge {
  next: XdMerge | null;
  mode: number;
  i0: number;
  chg0: number;
  i1: number;
  chg1: number;
  i2: number;
  chg2: number;
}

const MARKER_SIZE = 7;

/** XDL_MERGE_FAVOR_UNION: the mode every remaining conflict is given. */
const FAVOR_UNION = 3;

/** What becomes of a conflict: a conflict block, or (union) both sides, side #1 first. */
export type MergeFavor = "none" | "union";

/*
 * xdl_append_merge: a hunk that touches (or is adjacent to) the previous one
 * on either side is folded into it, and becomes a conflict if the modes differ.
 */
function appendMerge(
  tail: XdMerge | null,
  mode: number,
  i0: number,
  chg0: number,
  i1: number,
  chg1: number,
  i2: number,
  chg2: number,
): XdMerge {
  const m = tail;
  if (m && (i1 <= m.i1 + m.chg1 || i2 <= m.i2 + m.chg2)) {
    if (mode !== m.mode) m.mode = 0;
    m.chg0 = i0 + chg0 - m.i0;
    m.chg1 = i1 + chg1 - m.i1;
    m.chg2 = i2 + chg2 - m.i2;
    return m;
  }
  const n: XdMerge = { next: null, mode, i0, chg0, i1, chg1, i2, chg2 };
  if (m) m.next = n;
  return n;
}

function linesEqual(a: Records, ai: number, b: Records, bi: number, count: number): boolean {
  for (let k = 0; k < count; k++) if (!recEqual(a, ai + k, b, bi + k)) return false;
  return true;
}

/*
 * Returns 1 if line i ends in CR/LF (for an unterminated last line, the line
 * before it decides), 0 if LF only, -1 if it cannot be told. As is_eol_crlf.
 */
function isEolCrlf(recs: Records, i: number): number {
  const nrec = recs.n;
  const endsCrlf = (r: number): number => {
    const s = recs.start[r] as number;
    const e = recs.start[r + 1] as number;
    return e - s > 1 && recs.buf[e - 2] === 13 ? 1 : 0;
  };
  if (i < nrec - 1) return endsCrlf(i);
  if (!nrec) return -1;
  if (recEndsInNewline(recs, i)) return endsCrlf(i);
  if (!i) return -1;
  return endsCrlf(i - 1);
}

/* is_cr_needed: conflict markers follow the line endings around the conflict. */
function isCrNeeded(xe1: XdEnv, xe2: XdEnv, m: XdMerge): boolean {
  let needsCr = isEolCrlf(xe1.xdf2.recs, m.i1 ? m.i1 - 1 : 0);
  if (needsCr) needsCr = isEolCrlf(xe2.xdf2.recs, m.i2 ? m.i2 - 1 : 0);
  if (needsCr) needsCr = isEolCrlf(xe1.xdf1.recs, 0);
  return needsCr > 0;
}

function isAsciiAlnum(c: number): boolean {
  return (c >= 48 && c <= 57) || (c >= 65 && c <= 90) || (c >= 97 && c <= 122);
}

/* git's isalnum is its own ASCII-only table, so non-ASCII text never counts. */
function linesContainAlnum(recs: Records, i: number, chg: number): boolean {
  const { buf } = recs;
  for (let k = recs.start[i] as number, end = recs.start[i + chg] as number; k < end; k++) if (isAsciiAlnum(buf[k] as number)) return true;
  return false;
}

/*
 * xdl_refine_conflicts: diff the two sides of each conflict against each
 * other, so that lines both sides changed identically drop out of it.
 */
function refineConflicts(xe1: XdEnv, xe2: XdEnv, head: XdMerge | null): void {
  const r1 = xe1.xdf2.recs;
  const r2 = xe2.xdf2.recs;
  for (let m = head; m; m = m.next) {
    const i1 = m.i1;
    const i2 = m.i2;
    if (m.mode) continue;
    if (m.chg1 === 0 || m.chg2 === 0) continue;

    // The C code diffs the byte span of these records; splitting that span
    // again yields exactly the same records.
    const { script } = diffScript(subRecords(r1, i1, m.chg1), subRecords(r2, i2, m.chg2));
    const first = script[0];
    if (!first) {
      m.mode = 4;
      continue;
    }
    m.i1 = first.i1 + i1;
    m.chg1 = first.chg1;
    m.i2 = first.i2 + i2;
    m.chg2 = first.chg2;
    for (let k = 1; k < script.length; k++) {
      const x = script[k] as XdChange;
      // i0/chg0 of the new hunks are never read in "merge" style.
      const m2: XdMerge = {
        next: m.next,
        mode: 0,
        i0: 0,
        chg0: 0,
        i1: x.i1 + i1,
        chg1: x.chg1,
        i2: x.i2 + i2,
        chg2: x.chg2,
      };
      m.next = m2;
      m = m2;
    }
  }
}

/*
 * xdl_simplify_non_conflicts with simplify_if_no_alnum: conflicts separated
 * by at most 3 lines, or by lines without letters or digits, become one.
 */
function simplifyNonConflicts(xe1: XdEnv, head: XdMerge | null): void {
  let m = head;
  if (!m) return;
  for (;;) {
    const nextM: XdMerge | null = m.next;
    if (!nextM) return;
    const begin = m.i1 + m.chg1;
    const end = nextM.i1;
    if (
      m.mode !== 0 ||
      nextM.mode !== 0 ||
      (end - begin > 3 && linesContainAlnum(xe1.xdf2.recs, begin, end - begin))
    ) {
      m = nextM;
    } else {
      m.chg1 = nextM.i1 + nextM.chg1 - m.i1;
      m.chg2 = nextM.i2 + nextM.chg2 - m.i2;
      m.next = nextM.next;
    }
  }
}

const encoder = new TextEncoder();
const LF = encoder.encode("\n");
const CRLF = encoder.encode("\r\n");

/*
 * Collects output and tracks how many "\n" have been written, for line
 * numbers. Consecutive records are one span of their file's buffer, kept as
 * a view and copied once, into the result.
 */
class Output {
  readonly parts: Uint8Array[] = [];
  size = 0;
  newlines = 0;

  private push(bytes: Uint8Array): void {
    this.parts.push(bytes);
    this.size += bytes.length;
  }

  recs(recs: Records, i: number, count: number, needsCr: boolean, addNl: boolean): void {
    if (count < 1) return;
    this.push(recBytes(recs, i, count));
    // Only a file's last record can lack its "\n".
    const lastEnds = recEndsInNewline(recs, i + count - 1);
    this.newlines += lastEnds ? count : count - 1;
    if (addNl && !lastEnds) {
      this.push(needsCr ? CRLF : LF);
      this.newlines++;
    }
  }

  marker(ch: string, label: string | null, needsCr: boolean): void {
    this.push(encoder.encode(ch.repeat(MARKER_SIZE) + (label !== null ? " " + label : "") + (needsCr ? "\r\n" : "\n")));
    this.newlines++;
  }

  bytes(): Uint8Array {
    const out = new Uint8Array(this.size);
    let at = 0;
    for (const part of this.parts) {
      out.set(part, at);
      at += part.length;
    }
    return out;
  }
}

function fillConflictHunk(
  out: Output,
  xe1: XdEnv,
  xe2: XdEnv,
  labels: MergeLabels,
  i: number,
  m: XdMerge,
  conflicts: LineRange[],
): void {
  const needsCr = isCrNeeded(xe1, xe2, m);
  out.recs(xe1.xdf2.recs, i, m.i1 - i, false, false);
  const start = out.newlines + 1;
  out.marker("<", labels.ours, needsCr);
  out.recs(xe1.xdf2.recs, m.i1, m.chg1, needsCr, true);
  out.marker("=", null, needsCr);
  out.recs(xe2.xdf2.recs, m.i2, m.chg2, needsCr, true);
  out.marker(">", labels.theirs, needsCr);
  conflicts.push({ start, end: out.newlines });
}

function fillMergeBuffer(
  xe1: XdEnv,
  xe2: XdEnv,
  labels: MergeLabels,
  favor: number,
  head: XdMerge | null,
): { bytes: Uint8Array; conflicts: LineRange[] } {
  const out = new Output();
  const conflicts: LineRange[] = [];
  let i = 0;
  for (let m = head; m; m = m.next) {
    if (favor && !m.mode) m.mode = favor;
    if (m.mode === 0) {
      fillConflictHunk(out, xe1, xe2, labels, i, m, conflicts);
    } else if (m.mode & 3) {
      out.recs(xe1.xdf2.recs, i, m.i1 - i, false, false);
      // Only "take both" ends side #1 with a newline, so that its last line
      // cannot run into side #2's first; in the line endings around it.
      if (m.mode & 1) out.recs(xe1.xdf2.recs, m.i1, m.chg1, isCrNeeded(xe1, xe2, m), (m.mode & 2) !== 0);
      if (m.mode & 2) out.recs(xe2.xdf2.recs, m.i2, m.chg2, false, false);
    } else {
      continue;
    }
    i = m.i1 + m.chg1;
  }
  out.recs(xe1.xdf2.recs, i, xe1.xdf2.nrec - i, false, false);
  return { bytes: out.bytes(), conflicts };
}

/* xdl_do_merge for level XDL_MERGE_ZEALOUS_ALNUM and style "merge". */
function doMerge(
  xe1: XdEnv,
  xscr1: XdChange[],
  xe2: XdEnv,
  xscr2: XdChange[],
  labels: MergeLabels,
  favor: number,
): { bytes: Uint8Array; conflicts: LineRange[] } {
  let head: XdMerge | null = null;
  let c: XdMerge | null = null;
  const append = (
    mode: number,
    i0: number,
    chg0: number,
    i1: number,
    chg1: number,
    i2: number,
    chg2: number,
  ): void => {
    c = appendMerge(c, mode, i0, chg0, i1, chg1, i2, chg2);
    head ??= c;
  };

  let p1 = 0;
  let p2 = 0;
  while (p1 < xscr1.length && p2 < xscr2.length) {
    const x1 = xscr1[p1] as XdChange;
    const x2 = xscr2[p2] as XdChange;
    if (x1.i1 + x1.chg1 < x2.i1) {
      append(1, x1.i1, x1.chg1, x1.i2, x1.chg2, x2.i2 - x2.i1 + x1.i1, x1.chg1);
      p1++;
      continue;
    }
    if (x2.i1 + x2.chg1 < x1.i1) {
      append(2, x2.i1, x2.chg1, x1.i2 - x1.i1 + x2.i1, x2.chg1, x2.i2, x2.chg2);
      p2++;
      continue;
    }
    if (
      x1.i1 !== x2.i1 ||
      x1.chg1 !== x2.chg1 ||
      x1.chg2 !== x2.chg2 ||
      !linesEqual(xe1.xdf2.recs, x1.i2, xe2.xdf2.recs, x2.i2, x1.chg2)
    ) {
      const off = x1.i1 - x2.i1;
      const ffo = off + x1.chg1 - x2.chg1;
      let i0 = x1.i1;
      let i1 = x1.i2;
      let i2 = x2.i2;
      if (off > 0) {
        i0 -= off;
        i1 -= off;
      } else {
        i2 += off;
      }
      let chg0 = x1.i1 + x1.chg1 - i0;
      let chg1 = x1.i2 + x1.chg2 - i1;
      let chg2 = x2.i2 + x2.chg2 - i2;
      if (ffo < 0) {
        chg0 -= ffo;
        chg1 -= ffo;
      } else {
        chg2 += ffo;
      }
      append(0, i0, chg0, i1, chg1, i2, chg2);
    }

    const end1 = x1.i1 + x1.chg1;
    const end2 = x2.i1 + x2.chg1;
    if (end1 >= end2) p2++;
    if (end2 >= end1) p1++;
  }
  for (; p1 < xscr1.length; p1++) {
    const x1 = xscr1[p1] as XdChange;
    append(1, x1.i1, x1.chg1, x1.i2, x1.chg2, x1.i1 + xe2.xdf2.nrec - xe2.xdf1.nrec, x1.chg1);
  }
  for (; p2 < xscr2.length; p2++) {
    const x2 = xscr2[p2] as XdChange;
    append(2, x2.i1, x2.chg1, x2.i1 + xe1.xdf2.nrec - xe1.xdf1.nrec, x2.chg1, x2.i2, x2.chg2);
  }

  refineConflicts(xe1, xe2, head);
  simplifyNonConflicts(xe1, head);
  return fillMergeBuffer(xe1, xe2, labels, favor, head);
}

/* xdl_merge: side #1 is "ours", side #2 "theirs", both diffed against base (split and hashed once for both). */
export function xdlMerge(
  base: Uint8Array,
  ours: Uint8Array,
  theirs: Uint8Array,
  labels: MergeLabels,
  favor: MergeFavor = "none",
): { bytes: Uint8Array; conflicts: LineRange[] } {
  const recs0 = splitRecords(base);
  const d1 = diffScript(recs0, splitRecords(ours));
  if (d1.script.length === 0) return { bytes: theirs, conflicts: [] };
  const d2 = diffScript(recs0, splitRecords(theirs));
  if (d2.script.length === 0) return { bytes: ours, conflicts: [] };
  return doMerge(d1.env, d1.script, d2.env, d2.script, labels, favor === "union" ? FAVOR_UNION : 0);
}
