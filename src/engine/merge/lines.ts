/**
 * The `merge=lines` merge, for files whose lines stand alone: task boards,
 * lists, tables (docs/decisions/0019-merge-policies.md). The rule, exactly:
 *
 * 0. Where git's text merge of the file is clean, its result is the result.
 *    So `merge=lines` differs from `merge=text` only where that would
 *    conflict, and C git, which merges such a file as text, agrees with every
 *    clean merge. (With repeated lines, the two sides' diffs can place one
 *    change differently, say each deleting "the" blank line at another
 *    place; git's merge sees one deletion there, and rules 1-5 would see two.)
 *
 * Otherwise, for the whole file:
 *
 * 1. Each side is diffed against the baseline with git's line diff (the one
 *    its text merge uses). A hunk that replaces k baseline lines with k lines
 *    becomes k one-line changes, line by line. Any other hunk stays whole: a
 *    deletion or an uneven replacement claims all its baseline lines
 *    together; an insertion claims the point between two baseline lines.
 * 2. A change both sides made alike (same baseline lines, same new lines) is
 *    taken once.
 * 3. Insertions by both sides at the same point are all kept, local's lines
 *    first: neither changed a line the other changed (two agents adding to a
 *    list), and keeping both loses nothing.
 * 4. Two changes conflict when they claim a common baseline line, or when one
 *    inserts strictly inside the lines the other replaces or deletes. They,
 *    and any change that conflicts with them in turn, make one conflict block
 *    with git's markers over the baseline lines they span. Every other change
 *    is taken from the side that made it. So changes to neighbouring lines
 *    merge, and changes to the same line conflict.
 * 5. A last line without a newline that something now follows gets one, in
 *    the file's line ending (that of its first line), so no two lines run
 *    together.
 *
 * Either side's line is thus always in the result, applied or inside a
 * conflict block; nothing is dropped.
 */
import { lineHunks, type LineHunk, type LineRange, MARKER_LABELS, mergeBytes, mergeText } from "./xdiff/index.ts";

interface Change extends LineHunk {
  side: "local" | "accepted" | "both";
}

/* Where a change sits: even slots are the points between baseline lines, odd ones the lines. */
function slots(c: LineHunk): [number, number] {
  return c.start === c.end ? [2 * c.start, 2 * c.start] : [2 * c.start + 1, 2 * c.end - 1];
}

function perLine(hunks: LineHunk[], side: "local" | "accepted"): Change[] {
  const out: Change[] = [];
  for (const h of hunks) {
    if (h.end - h.start === h.lines.length) {
      h.lines.forEach((line, k) => out.push({ start: h.start + k, end: h.start + k + 1, lines: [line], side }));
    } else {
      out.push({ ...h, side });
    }
  }
  return out;
}

function sameLines(a: string[], b: string[]): boolean {
  return a.length === b.length && a.every((line, i) => line === b[i]);
}

/* Rules 2 and 3: the same change on both sides, or both sides' insertions at one point, become one change. */
function combine(local: Change[], accepted: Change[]): Change[] {
  const byPlace = new Map<string, Change>(accepted.map((c) => [`${c.start}:${c.end}`, c]));
  const out: Change[] = [];
  for (const c of local) {
    const place = `${c.start}:${c.end}`;
    const twin = byPlace.get(place);
    if (twin !== undefined && (sameLines(c.lines, twin.lines) || c.start === c.end)) {
      byPlace.delete(place);
      const lines = sameLines(c.lines, twin.lines) ? c.lines : [...c.lines, ...twin.lines];
      out.push({ start: c.start, end: c.end, lines, side: "both" });
    } else {
      out.push(c);
    }
  }
  out.push(...byPlace.values());
  // Stable, so of two changes at one slot (a conflict) local's comes first.
  return out.sort((a, b) => slots(a)[0] - slots(b)[0]);
}

/*
 * Rule 4: changes in baseline order, in groups of those whose slots overlap.
 * One side's hunks are separated by unchanged lines, so its changes never
 * overlap each other, nor does a side insert where its own change begins or
 * ends; a combined change thus overlaps nothing, and a group of more than
 * one change is a conflict.
 */
function groups(changes: Change[]): Change[][] {
  const out: Change[][] = [];
  let hi = -1;
  for (const c of changes) {
    const [lo, end] = slots(c);
    const last = out[out.length - 1];
    if (last !== undefined && lo <= hi) {
      last.push(c);
      hi = Math.max(hi, end);
    } else {
      out.push([c]);
      hi = end;
    }
  }
  return out;
}

/* One side's text of baseline lines [start, end) with its changes in the group applied. */
function sideText(base: string[], start: number, end: number, changes: Change[]): string[] {
  const out: string[] = [];
  let pos = start;
  for (const c of changes) {
    out.push(...base.slice(pos, c.start), ...c.lines);
    pos = c.end;
  }
  out.push(...base.slice(pos, end));
  return out;
}

/* The merged lines; each line pushed after one without a newline gives that one a newline first (rule 5). */
class Output {
  readonly lines: string[] = [];
  readonly conflicts: LineRange[] = [];
  constructor(private readonly eol: string) {}

  push(lines: string[]): void {
    for (const line of lines) {
      const last = this.lines.length - 1;
      if (last >= 0 && !this.lines[last]!.endsWith("\n")) this.lines[last] += this.eol;
      this.lines.push(line);
    }
  }

  conflict(local: string[], accepted: string[]): void {
    const start = this.lines.length + 1;
    this.push([`<<<<<<< ${MARKER_LABELS.ours}${this.eol}`, ...local, `=======${this.eol}`]);
    this.push([...accepted, `>>>>>>> ${MARKER_LABELS.theirs}${this.eol}`]);
    this.conflicts.push({ start, end: this.lines.length });
  }
}

function lineEnding(...texts: string[]): string {
  const first = texts.find((t) => t.includes("\n"));
  return first !== undefined && first[first.indexOf("\n") - 1] === "\r" ? "\r\n" : "\n";
}

/** The `merge=lines` merge of three texts, with one range per conflict block (as mergeText gives them). */
export function linesMergeText(baseline: string, local: string, accepted: string): { text: string; conflicts: LineRange[] } {
  const text = mergeText(baseline, local, accepted);
  if (text.conflicts.length === 0) return text;
  return perLineMerge(baseline, local, accepted);
}

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** linesMergeText on bytes: git's merge where it is clean, which needs no text at all. */
export function linesMergeBytes(baseline: Uint8Array, local: Uint8Array, accepted: Uint8Array): { bytes: Uint8Array; conflicts: LineRange[] } {
  const merged = mergeBytes(baseline, local, accepted);
  if (merged.conflicts.length === 0) return merged;
  const text = perLineMerge(decoder.decode(baseline), decoder.decode(local), decoder.decode(accepted));
  return { bytes: encoder.encode(text.text), conflicts: text.conflicts };
}

/* Rules 2 to 5, where git's text merge conflicts. */
function perLineMerge(baseline: string, local: string, accepted: string): { text: string; conflicts: LineRange[] } {
  const ours = lineHunks(baseline, local);
  const theirs = lineHunks(baseline, accepted);
  const base = ours.lines;
  const out = new Output(lineEnding(baseline, local, accepted));
  let pos = 0;
  for (const group of groups(combine(perLine(ours.hunks, "local"), perLine(theirs.hunks, "accepted")))) {
    const start = Math.min(...group.map((c) => c.start));
    const end = Math.max(...group.map((c) => c.end));
    out.push(base.slice(pos, start));
    if (group.length === 1) out.push(group[0]!.lines);
    else out.conflict(sideText(base, start, end, group.filter((c) => c.side === "local")), sideText(base, start, end, group.filter((c) => c.side === "accepted")));
    pos = end;
  }
  out.push(base.slice(pos));
  return { text: out.lines.join(""), conflicts: out.conflicts };
}
