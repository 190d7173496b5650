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

const LT = 0x3c;
const BAR = 0x7c;
const EQ = 0x3d;
const GT = 0x3e;
const SPACE = 0x20;

/* Line [at, end) is a marker of 7 `ch` followed by end of line or by a space and a label. */
function isLabelled(buf: Uint8Array, at: number, end: number, ch: number): boolean {
  if (end - at < 7) return false;
  for (let k = 0; k < 7; k++) if (buf[at + k] !== ch) return false;
  return end - at === 7 || buf[at + 7] === SPACE;
}

function kindOf(buf: Uint8Array, at: number, end: number): Kind {
  switch (at < end ? buf[at] : -1) {
    case LT:
      return isLabelled(buf, at, end, LT) ? Kind.Open : Kind.None;
    case BAR:
      return isLabelled(buf, at, end, BAR) ? Kind.Base : Kind.None;
    case EQ:
      return end - at === 7 && isLabelled(buf, at, end, EQ) ? Kind.Sep : Kind.None;
    case GT:
      return isLabelled(buf, at, end, GT) ? Kind.Close : Kind.None;
    default:
      return Kind.None;
  }
}

const encoder = new TextEncoder();

/*
 * A new opening marker abandons an unfinished block (so the innermost
 * complete block wins), and a closing marker before any separator abandons
 * the block, since without a separator it is not a conflict git would write.
 * On bytes, line by line in place: a big file is never split into strings.
 */
export function findMarkerBlocks(content: string | Uint8Array): LineRange[] {
  const buf = typeof content === "string" ? encoder.encode(content) : content;
  const blocks: LineRange[] = [];
  let state: Kind = Kind.None; // the last marker of the open block
  let start = 0;
  let lineNo = 0;
  let pos = 0;
  const n = buf.length;
  while (pos < n) {
    lineNo++;
    const nl = buf.indexOf(10, pos);
    const at = pos;
    let end: number;
    if (nl < 0) {
      end = n;
      pos = n;
    } else {
      end = nl > pos && buf[nl - 1] === 13 ? nl - 1 : nl;
      pos = nl + 1;
    }
    const kind = kindOf(buf, at, end);
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
