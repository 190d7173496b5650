/*
 * Finds conflict-marker blocks already present in a file, e.g. one committed
 * by someone who did not resolve a conflict. The marker shapes are git's
 * default ones (size 7), the same as our merge writes.
 */

import type { LineRange } from "./merge.ts";

const enum Kind {
  None,
  Open,
  Base,
  Sep,
  Close,
}

/* A marker of 7 `ch` followed by end of line or by a space and a label. */
function isLabelled(line: string, ch: string): boolean {
  if (line.length < 7) return false;
  for (let k = 0; k < 7; k++) if (line[k] !== ch) return false;
  return line.length === 7 || line[7] === " ";
}

function kindOf(line: string): Kind {
  switch (line[0]) {
    case "<":
      return isLabelled(line, "<") ? Kind.Open : Kind.None;
    case "|":
      return isLabelled(line, "|") ? Kind.Base : Kind.None;
    case "=":
      return line === "=======" ? Kind.Sep : Kind.None;
    case ">":
      return isLabelled(line, ">") ? Kind.Close : Kind.None;
    default:
      return Kind.None;
  }
}

/*
 * A new opening marker abandons an unfinished block (so the innermost
 * complete block wins), and a closing marker before any separator abandons
 * the block, since without a separator it is not a conflict git would write.
 */
export function findMarkerBlocks(text: string): LineRange[] {
  const blocks: LineRange[] = [];
  let state: Kind = Kind.None; // the last marker of the open block
  let start = 0;
  let lineNo = 0;
  let pos = 0;
  const n = text.length;
  while (pos < n) {
    lineNo++;
    const nl = text.indexOf("\n", pos);
    let line: string;
    if (nl < 0) {
      line = text.slice(pos);
      pos = n;
    } else {
      line = text.slice(pos, nl > pos && text.charCodeAt(nl - 1) === 13 ? nl - 1 : nl);
      pos = nl + 1;
    }
    const kind = kindOf(line);
    if (kind === Kind.None) continue;
    if (kind === Kind.Open) {
      state = Kind.Open;
      start = lineNo;
    } else if (state === Kind.None) {
      // a stray marker outside any block
    } else if (kind === Kind.Base) {
      if (state === Kind.Open) state = Kind.Base;
    } else if (kind === Kind.Sep) {
      if (state === Kind.Open || state === Kind.Base) state = Kind.Sep;
    } else if (kind === Kind.Close) {
      if (state === Kind.Sep) blocks.push({ start, end: lineNo });
      state = Kind.None;
    }
  }
  return blocks;
}
