/*
 * Line diff, ported from git's xdiff (xprepare.c, xdiffi.c; git 2.39).
 *
 * Why a port and not any Myers diff: the three-way merge must agree byte for
 * byte with `git merge-file`, and where git puts a hunk depends on every
 * quirk of its implementation: the trimming of common ends, the discarding
 * of lines that have no (or too many) matches on the other side, the cost
 * heuristics inside xdl_split, and the sliding of groups in
 * xdl_change_compact. So this follows the C code closely, including its
 * variable names, and only drops what merge-file with flags == 0 never uses
 * (whitespace flags, patience/histogram, the indent heuristic).
 *
 * Records are the file's lines including their "\n" (a last line may lack
 * it), kept as git keeps them: offsets into the file's one buffer, each
 * hashed once, never copied into strings of their own — a 100 MB file is
 * over a million lines. Two records are equal exactly when their bytes are,
 * which is what xdl_recmatch does with no whitespace flags.
 */

/** A file's records: record i is buf[start[i], start[i + 1]); hash[i] a hash of its bytes. */
export interface Records {
  buf: Uint8Array;
  /** n + 1 offsets into buf. */
  start: Uint32Array;
  hash: Int32Array;
  n: number;
}

export interface XdFile {
  recs: Records;
  nrec: number;
  /* Equivalence class of each record between the trimmed ends, like `rec->ha` after classification: record i at ha[i - dstart]. */
  ha: Int32Array;
  /* Change marks with one guard slot on each side: record i is rchg[i + 1]. */
  rchg: Uint8Array;
  /* Records that survived xdl_cleanup_records, and their classes. */
  rindex: Int32Array;
  hae: Int32Array;
  nreff: number;
  dstart: number;
  dend: number;
}

export interface XdEnv {
  xdf1: XdFile;
  xdf2: XdFile;
}

export interface XdChange {
  i1: number;
  i2: number;
  chg1: number;
  chg2: number;
}

const XDL_KPDIS_RUN = 4;
const XDL_MAX_EQLIMIT = 1024;
const XDL_SIMSCAN_WINDOW = 100;

const XDL_MAX_COST_MIN = 256;
const XDL_HEUR_MIN_COST = 256;
/* C uses LONG_MAX as the "unreached" backward value; any value above every index works. */
const XDL_LINE_MAX = 0x7fffffff;
const XDL_SNAKE_CNT = 20;
const XDL_K_HEUR = 4;

/*
 * Splits like xdl_hash_record: each record runs up to and including "\n".
 * Finding each end is the runtime's search; the hash reads the record four
 * bytes at a time. Any hash will do: equal hashes are confirmed byte by byte.
 */
export function splitRecords(buf: Uint8Array): Records {
  const len = buf.length;
  let lines = 0;
  for (let nl = buf.indexOf(10); nl >= 0; nl = buf.indexOf(10, nl + 1)) lines++;
  if (len > 0 && buf[len - 1] !== 10) lines++;
  const start = new Uint32Array(lines + 1);
  const hash = new Int32Array(lines);
  const view = new DataView(buf.buffer, buf.byteOffset, buf.byteLength);
  let n = 0;
  for (let pos = 0; pos < len; n++) {
    const nl = buf.indexOf(10, pos);
    const end = nl < 0 ? len : nl + 1;
    // MurmurHash3's 32-bit body and finish.
    let h = end - pos;
    let i = pos;
    for (; i + 4 <= end; i += 4) {
      let k = Math.imul(view.getInt32(i, true), 0xcc9e2d51);
      k = Math.imul((k << 15) | (k >>> 17), 0x1b873593);
      h ^= k;
      h = (Math.imul((h << 13) | (h >>> 19), 5) + 0xe6546b64) | 0;
    }
    let k = 0;
    for (let shift = 0; i < end; i++, shift += 8) k |= (buf[i] as number) << shift;
    k = Math.imul(k, 0xcc9e2d51);
    h ^= Math.imul((k << 15) | (k >>> 17), 0x1b873593);
    h = Math.imul(h ^ (h >>> 16), 0x85ebca6b);
    h = Math.imul(h ^ (h >>> 13), 0xc2b2ae35);
    start[n] = pos;
    hash[n] = h ^ (h >>> 16);
    pos = end;
  }
  start[n] = len;
  return { buf, start, hash, n };
}

/* Records [i, i + count) of `r`, as records of their own (views, no copy). */
export function subRecords(r: Records, i: number, count: number): Records {
  return { buf: r.buf, start: r.start.subarray(i, i + count + 1), hash: r.hash.subarray(i, i + count), n: count };
}

/* Whether record i of `a` and record j of `b` hold the same bytes. */
export function recEqual(a: Records, i: number, b: Records, j: number): boolean {
  if (a.hash[i] !== b.hash[j]) return false;
  const as = a.start[i] as number;
  const bs = b.start[j] as number;
  const size = (a.start[i + 1] as number) - as;
  if ((b.start[j + 1] as number) - bs !== size) return false;
  const x = a.buf;
  const y = b.buf;
  if (x === y && as === bs) return true;
  for (let k = 0; k < size; k++) if (x[as + k] !== y[bs + k]) return false;
  return true;
}

/* The bytes of records [i, i + count), a view. */
export function recBytes(r: Records, i: number, count = 1): Uint8Array {
  return r.buf.subarray(r.start[i], r.start[i + count]);
}

/* Whether record i ends in "\n" (only a file's last record may not). */
export function recEndsInNewline(r: Records, i: number): boolean {
  const end = r.start[i + 1] as number;
  return end > (r.start[i] as number) && r.buf[end - 1] === 10;
}

const textDecoder = new TextDecoder();

/* Record i as text, for the few callers that print records one by one. */
export function recText(r: Records, i: number): string {
  return textDecoder.decode(recBytes(r, i));
}

export function bogosqrt(n: number): number {
  let i = 1;
  for (; n > 0; n = Math.floor(n / 4)) i *= 2;
  return i;
}

function newFile(recs: Records): XdFile {
  const nrec = recs.n;
  return {
    recs,
    nrec,
    // Sized to the records between the trimmed ends, once they are known (prepareEnv).
    ha: new Int32Array(0),
    rchg: new Uint8Array(nrec + 2),
    rindex: new Int32Array(0),
    hae: new Int32Array(0),
    nreff: 0,
    dstart: 0,
    dend: nrec - 1,
  };
}

function at(a: Int32Array | Uint8Array, i: number): number {
  return a[i] as number;
}

/*
 * xdl_clean_mmatch: a line with many matches is discarded only when it sits
 * inside a run dominated by lines that have no match at all.
 */
function cleanMmatch(dis: Uint8Array, i: number, s: number, e: number): boolean {
  if (i - s > XDL_SIMSCAN_WINDOW) s = i - XDL_SIMSCAN_WINDOW;
  if (e - i > XDL_SIMSCAN_WINDOW) e = i + XDL_SIMSCAN_WINDOW;

  let r: number;
  let rdis0 = 0;
  let rpdis0 = 1;
  for (r = 1; i - r >= s; r++) {
    const v = at(dis, i - r);
    if (!v) rdis0++;
    else if (v === 2) rpdis0++;
    else break;
  }
  if (rdis0 === 0) return false;
  let rdis1 = 0;
  let rpdis1 = 1;
  for (r = 1; i + r <= e; r++) {
    const v = at(dis, i + r);
    if (!v) rdis1++;
    else if (v === 2) rpdis1++;
    else break;
  }
  if (rdis1 === 0) return false;
  rdis1 += rdis0;
  rpdis1 += rpdis0;
  return rpdis1 * XDL_KPDIS_RUN < rpdis1 + rdis1;
}

/*
 * xdl_trim_ends: how many records the files share at their start, and then
 * at their end. Found on bytes by the runtime's comparison, then mapped to
 * records: below the first differing byte the files split into the same
 * records, and so do they above the last one, counted from the end.
 */
function commonEnds(recs1: Records, recs2: Records): { head: number; tail: number } {
  // The records' span of their buffers (a part of a file, when refining a conflict).
  const a = recBytes(recs1, 0, recs1.n);
  const b = recBytes(recs2, 0, recs2.n);
  const min = Math.min(a.length, b.length);
  const d = firstDifference(a, b, min);
  let head: number;
  if (d === min && a.length === b.length) {
    head = recs1.n;
  } else {
    // The records that end by d, less a last one without its "\n" (the other file's goes on).
    head = recordsEndingBy(recs1, (recs1.start[0] as number) + d);
    if (head > 0 && !recEndsInNewline(recs1, head - 1)) head--;
  }
  const same = commonSuffix(a, b, min);
  const lim = Math.min(recs1.n, recs2.n) - head;
  const end1 = recs1.start[recs1.n] as number;
  const end2 = recs2.start[recs2.n] as number;
  let tail = 0;
  for (; tail < lim; tail++) {
    const from1 = end1 - (recs1.start[recs1.n - 1 - tail] as number);
    if (from1 > same || from1 !== end2 - (recs2.start[recs2.n - 1 - tail] as number)) break;
  }
  return { head, tail };
}

const CHUNK = 1 << 16;

function asBuffer(x: Uint8Array): Buffer {
  return Buffer.from(x.buffer, x.byteOffset, x.byteLength);
}

/* The offset of the first byte where `a` and `b` differ, or `min` (the shorter length). */
function firstDifference(a: Uint8Array, b: Uint8Array, min: number): number {
  const A = asBuffer(a);
  const B = asBuffer(b);
  for (let lo = 0; lo < min; lo += CHUNK) {
    const hi = Math.min(min, lo + CHUNK);
    if (A.compare(B, lo, hi, lo, hi) === 0) continue;
    for (let i = lo; i < hi; i++) if (a[i] !== b[i]) return i;
  }
  return min;
}

/* How many bytes `a` and `b` share at their end, at most `min`. */
function commonSuffix(a: Uint8Array, b: Uint8Array, min: number): number {
  const A = asBuffer(a);
  const B = asBuffer(b);
  const da = a.length - min;
  const db = b.length - min;
  for (let hi = min; hi > 0; hi -= CHUNK) {
    const lo = Math.max(0, hi - CHUNK);
    if (A.compare(B, db + lo, db + hi, da + lo, da + hi) === 0) continue;
    for (let i = hi - 1; i >= lo; i--) if (a[da + i] !== b[db + i]) return min - 1 - i;
  }
  return min;
}

/* How many records end at or before offset `d` of their buffer. */
function recordsEndingBy(recs: Records, d: number): number {
  let lo = 0;
  let hi = recs.n;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if ((recs.start[mid + 1] as number) <= d) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/*
 * xdl_prepare_env: classify records, trim common ends, discard unmatched
 * lines. The ends are trimmed first (git trims after classifying every
 * record), so only the records between them get classes: a big file with a
 * small change classifies a few records, not a million. What git's
 * classification gives the rest is kept exactly: the counts of each class
 * over the whole of each file (xdl_classify_record's len1/len2), which
 * decide what xdl_cleanup_records discards, add the occurrences in the
 * shared ends, and records outside the middle are compared by their bytes
 * where git compares their classes (the sliding of groups).
 */
export function prepareEnv(recs1: Records, recs2: Records): XdEnv {
  const xdf1 = newFile(recs1);
  const xdf2 = newFile(recs2);
  const { head, tail } = commonEnds(recs1, recs2);
  xdf1.dstart = xdf2.dstart = head;
  xdf1.dend = xdf1.nrec - tail - 1;
  xdf2.dend = xdf2.nrec - tail - 1;
  for (const xdf of [xdf1, xdf2]) {
    const middle = xdf.dend - xdf.dstart + 1;
    xdf.ha = new Int32Array(middle);
    xdf.rindex = new Int32Array(middle + 1);
    xdf.hae = new Int32Array(middle + 1);
  }

  // Open addressing on the records' hashes: each slot holds a hash and its
  // class + 1, side by side, so a probe reads one place; a class keeps the
  // record that opened it, to confirm a matching hash byte for byte.
  const most = xdf1.dend - head + 1 + (xdf2.dend - head + 1);
  let size = 16;
  while (size < 2 * most) size *= 2;
  const mask = size - 1;
  const slots = new Int32Array(2 * size);
  const firstFile = new Uint8Array(most);
  const firstRec = new Int32Array(most);
  const len1 = new Int32Array(most);
  const len2 = new Int32Array(most);
  let classes = 0;
  /* The class of record i of `recs`, or -1; `open` adds a new one. */
  const classOf = (recs: Records, i: number, pass: 1 | 2, open: boolean): number => {
    const h = recs.hash[i] as number;
    let slot = h & mask;
    for (;;) {
      const c = slots[2 * slot + 1] as number;
      if (c === 0) break;
      if (slots[2 * slot] === h && recEqual(firstFile[c - 1] === 1 ? recs1 : recs2, firstRec[c - 1] as number, recs, i)) return c - 1;
      slot = (slot + 1) & mask;
    }
    if (!open) return -1;
    slots[2 * slot] = h;
    slots[2 * slot + 1] = classes + 1;
    firstFile[classes] = pass;
    firstRec[classes] = i;
    return classes++;
  };
  for (let i = head; i <= xdf1.dend; i++) {
    const c = classOf(recs1, i, 1, true);
    len1[c] = (len1[c] as number) + 1;
    xdf1.ha[i - head] = c;
  }
  for (let i = head; i <= xdf2.dend; i++) {
    const c = classOf(recs2, i, 2, true);
    len2[c] = (len2[c] as number) + 1;
    xdf2.ha[i - head] = c;
  }
  // Both files hold every record of the shared ends.
  const countShared = (i: number): void => {
    const c = classOf(recs1, i, 1, false);
    if (c < 0) return;
    len1[c] = (len1[c] as number) + 1;
    len2[c] = (len2[c] as number) + 1;
  };
  if (classes > 0) {
    for (let i = 0; i < head; i++) countShared(i);
    for (let i = xdf1.dend + 1; i < xdf1.nrec; i++) countShared(i);
  }
  let i: number;

  // xdl_cleanup_records
  const dis1 = new Uint8Array(xdf1.nrec + 1);
  const dis2 = new Uint8Array(xdf2.nrec + 1);
  let mlim = Math.min(bogosqrt(xdf1.nrec), XDL_MAX_EQLIMIT);
  for (i = xdf1.dstart; i <= xdf1.dend; i++) {
    const nm = len2[at(xdf1.ha, i - head)] as number;
    dis1[i] = nm === 0 ? 0 : nm >= mlim ? 2 : 1;
  }
  mlim = Math.min(bogosqrt(xdf2.nrec), XDL_MAX_EQLIMIT);
  for (i = xdf2.dstart; i <= xdf2.dend; i++) {
    const nm = len1[at(xdf2.ha, i - head)] as number;
    dis2[i] = nm === 0 ? 0 : nm >= mlim ? 2 : 1;
  }
  const keep = (xdf: XdFile, dis: Uint8Array): void => {
    let nreff = 0;
    for (let j = xdf.dstart; j <= xdf.dend; j++) {
      const d = at(dis, j);
      if (d === 1 || (d === 2 && !cleanMmatch(dis, j, xdf.dstart, xdf.dend))) {
        xdf.rindex[nreff] = j;
        xdf.hae[nreff] = at(xdf.ha, j - xdf.dstart);
        nreff++;
      } else {
        xdf.rchg[j + 1] = 1;
      }
    }
    xdf.nreff = nreff;
  };
  keep(xdf1, dis1);
  keep(xdf2, dis2);

  return { xdf1, xdf2 };
}

interface Split {
  i1: number;
  i2: number;
  minLo: boolean;
  minHi: boolean;
}

/*
 * xdl_split. kvd holds both K vectors; diagonal d of the forward one lives at
 * kvd[fo + d] and of the backward one at kvd[bo + d], mirroring the C pointer
 * arithmetic on kvdf/kvdb.
 */
function split(
  ha1: Int32Array,
  off1: number,
  lim1: number,
  ha2: Int32Array,
  off2: number,
  lim2: number,
  kvd: Int32Array,
  fo: number,
  bo: number,
  needMin: boolean,
  spl: Split,
  mxcost: number,
): void {
  const dmin = off1 - lim2;
  const dmax = lim1 - off2;
  const fmid = off1 - off2;
  const bmid = lim1 - lim2;
  const odd = (fmid - bmid) & 1;
  let fmin = fmid;
  let fmax = fmid;
  let bmin = bmid;
  let bmax = bmid;
  let d: number;
  let i1: number;
  let i2: number;
  let prev1: number;

  kvd[fo + fmid] = off1;
  kvd[bo + bmid] = lim1;

  for (let ec = 1; ; ec++) {
    let gotSnake = false;

    if (fmin > dmin) kvd[fo + --fmin - 1] = -1;
    else ++fmin;
    if (fmax < dmax) kvd[fo + ++fmax + 1] = -1;
    else --fmax;

    for (d = fmax; d >= fmin; d -= 2) {
      const lo = at(kvd, fo + d - 1);
      const hi = at(kvd, fo + d + 1);
      i1 = lo >= hi ? lo + 1 : hi;
      prev1 = i1;
      i2 = i1 - d;
      for (; i1 < lim1 && i2 < lim2 && at(ha1, i1) === at(ha2, i2); i1++, i2++);
      if (i1 - prev1 > XDL_SNAKE_CNT) gotSnake = true;
      kvd[fo + d] = i1;
      if (odd && bmin <= d && d <= bmax && at(kvd, bo + d) <= i1) {
        spl.i1 = i1;
        spl.i2 = i2;
        spl.minLo = spl.minHi = true;
        return;
      }
    }

    if (bmin > dmin) kvd[bo + --bmin - 1] = XDL_LINE_MAX;
    else ++bmin;
    if (bmax < dmax) kvd[bo + ++bmax + 1] = XDL_LINE_MAX;
    else --bmax;

    for (d = bmax; d >= bmin; d -= 2) {
      const lo = at(kvd, bo + d - 1);
      const hi = at(kvd, bo + d + 1);
      i1 = lo < hi ? lo : hi - 1;
      prev1 = i1;
      i2 = i1 - d;
      for (; i1 > off1 && i2 > off2 && at(ha1, i1 - 1) === at(ha2, i2 - 1); i1--, i2--);
      if (prev1 - i1 > XDL_SNAKE_CNT) gotSnake = true;
      kvd[bo + d] = i1;
      if (!odd && fmin <= d && d <= fmax && i1 <= at(kvd, fo + d)) {
        spl.i1 = i1;
        spl.i2 = i2;
        spl.minLo = spl.minHi = true;
        return;
      }
    }

    if (needMin) continue;

    // A long snake far from the corner is taken as a good enough split once
    // the edit cost passes the trigger, exactly as xdiff does.
    if (gotSnake && ec > XDL_HEUR_MIN_COST) {
      let best = 0;
      for (d = fmax; d >= fmin; d -= 2) {
        const dd = d > fmid ? d - fmid : fmid - d;
        i1 = at(kvd, fo + d);
        i2 = i1 - d;
        const v = i1 - off1 + (i2 - off2) - dd;
        if (
          v > XDL_K_HEUR * ec &&
          v > best &&
          off1 + XDL_SNAKE_CNT <= i1 &&
          i1 < lim1 &&
          off2 + XDL_SNAKE_CNT <= i2 &&
          i2 < lim2
        ) {
          for (let k = 1; at(ha1, i1 - k) === at(ha2, i2 - k); k++) {
            if (k === XDL_SNAKE_CNT) {
              best = v;
              spl.i1 = i1;
              spl.i2 = i2;
              break;
            }
          }
        }
      }
      if (best > 0) {
        spl.minLo = true;
        spl.minHi = false;
        return;
      }

      best = 0;
      for (d = bmax; d >= bmin; d -= 2) {
        const dd = d > bmid ? d - bmid : bmid - d;
        i1 = at(kvd, bo + d);
        i2 = i1 - d;
        const v = lim1 - i1 + (lim2 - i2) - dd;
        if (
          v > XDL_K_HEUR * ec &&
          v > best &&
          off1 < i1 &&
          i1 <= lim1 - XDL_SNAKE_CNT &&
          off2 < i2 &&
          i2 <= lim2 - XDL_SNAKE_CNT
        ) {
          for (let k = 0; at(ha1, i1 + k) === at(ha2, i2 + k); k++) {
            if (k === XDL_SNAKE_CNT - 1) {
              best = v;
              spl.i1 = i1;
              spl.i2 = i2;
              break;
            }
          }
        }
      }
      if (best > 0) {
        spl.minLo = false;
        spl.minHi = true;
        return;
      }
    }

    // Too expensive: settle for the furthest reaching path.
    if (ec >= mxcost) {
      let fbest = -1;
      let fbest1 = -1;
      for (d = fmax; d >= fmin; d -= 2) {
        i1 = Math.min(at(kvd, fo + d), lim1);
        i2 = i1 - d;
        if (lim2 < i2) {
          i1 = lim2 + d;
          i2 = lim2;
        }
        if (fbest < i1 + i2) {
          fbest = i1 + i2;
          fbest1 = i1;
        }
      }
      let bbest = XDL_LINE_MAX;
      let bbest1 = XDL_LINE_MAX;
      for (d = bmax; d >= bmin; d -= 2) {
        i1 = Math.max(off1, at(kvd, bo + d));
        i2 = i1 - d;
        if (i2 < off2) {
          i1 = off2 + d;
          i2 = off2;
        }
        if (i1 + i2 < bbest) {
          bbest = i1 + i2;
          bbest1 = i1;
        }
      }
      if (lim1 + lim2 - bbest < fbest - (off1 + off2)) {
        spl.i1 = fbest1;
        spl.i2 = fbest - fbest1;
        spl.minLo = true;
        spl.minHi = false;
      } else {
        spl.i1 = bbest1;
        spl.i2 = bbest - bbest1;
        spl.minLo = false;
        spl.minHi = true;
      }
      return;
    }
  }
}

/*
 * xdl_recs_cmp, with an explicit stack instead of recursion so that long
 * inputs cannot overflow the JS stack. Each box is independent (xdl_split
 * initialises every K value it reads), so the visiting order does not matter.
 */
function recsCmp(env: XdEnv, kvd: Int32Array, fo: number, bo: number, mxcost: number): void {
  const { xdf1, xdf2 } = env;
  const ha1 = xdf1.hae;
  const ha2 = xdf2.hae;
  const stack: number[] = [0, xdf1.nreff, 0, xdf2.nreff, 0];
  const spl: Split = { i1: 0, i2: 0, minLo: false, minHi: false };
  while (stack.length > 0) {
    const needMin = stack.pop() === 1;
    let lim2 = stack.pop() as number;
    let off2 = stack.pop() as number;
    let lim1 = stack.pop() as number;
    let off1 = stack.pop() as number;

    for (; off1 < lim1 && off2 < lim2 && at(ha1, off1) === at(ha2, off2); off1++, off2++);
    for (; off1 < lim1 && off2 < lim2 && at(ha1, lim1 - 1) === at(ha2, lim2 - 1); lim1--, lim2--);

    if (off1 === lim1) {
      for (; off2 < lim2; off2++) xdf2.rchg[at(xdf2.rindex, off2) + 1] = 1;
    } else if (off2 === lim2) {
      for (; off1 < lim1; off1++) xdf1.rchg[at(xdf1.rindex, off1) + 1] = 1;
    } else {
      spl.i1 = spl.i2 = 0;
      split(ha1, off1, lim1, ha2, off2, lim2, kvd, fo, bo, needMin, spl, mxcost);
      stack.push(spl.i1, lim1, spl.i2, lim2, spl.minHi ? 1 : 0);
      stack.push(off1, spl.i1, off2, spl.i2, spl.minLo ? 1 : 0);
    }
  }
}

/* xdl_do_diff for the Myers algorithm without XDF_NEED_MINIMAL. */
export function doDiff(recs1: Records, recs2: Records): XdEnv {
  const env = prepareEnv(recs1, recs2);
  const ndiags = env.xdf1.nreff + env.xdf2.nreff + 3;
  const kvd = new Int32Array(2 * ndiags + 2);
  const fo = env.xdf2.nreff + 1;
  const bo = ndiags + env.xdf2.nreff + 1;
  const mxcost = Math.max(bogosqrt(ndiags), XDL_MAX_COST_MIN);
  recsCmp(env, kvd, fo, bo, mxcost);
  return env;
}

/*
 * A group of changed lines [start, end) in one file; an empty group sits just
 * above the unchanged line `start`. Mirrors struct xdlgroup.
 */
interface Group {
  start: number;
  end: number;
}

function groupInit(xdf: XdFile, g: Group): void {
  g.start = g.end = 0;
  while (xdf.rchg[g.end + 1]) g.end++;
}

function groupNext(xdf: XdFile, g: Group): boolean {
  if (g.end === xdf.nrec) return false;
  g.start = g.end + 1;
  for (g.end = g.start; xdf.rchg[g.end + 1]; g.end++);
  return true;
}

function groupPrevious(xdf: XdFile, g: Group): boolean {
  if (g.start === 0) return false;
  g.end = g.start - 1;
  for (g.start = g.end; xdf.rchg[g.start]; g.start--);
  return true;
}

function groupSlideDown(xdf: XdFile, g: Group): boolean {
  if (g.end < xdf.nrec && recEqual(xdf.recs, g.start, xdf.recs, g.end)) {
    xdf.rchg[g.start++ + 1] = 0;
    xdf.rchg[g.end++ + 1] = 1;
    while (xdf.rchg[g.end + 1]) g.end++;
    return true;
  }
  return false;
}

function groupSlideUp(xdf: XdFile, g: Group): boolean {
  if (g.start > 0 && recEqual(xdf.recs, g.start - 1, xdf.recs, g.end - 1)) {
    xdf.rchg[--g.start + 1] = 1;
    xdf.rchg[--g.end + 1] = 0;
    while (xdf.rchg[g.start]) g.start--;
    return true;
  }
  return false;
}

function bug(msg: string): never {
  throw new Error(`xdiff: ${msg}`);
}

/*
 * The indent heuristic of xdl_change_compact (XDF_INDENT_HEURISTIC, on by
 * default in `git diff` since git 2.14): where a group of changed lines
 * can slide, put it where the split before and after it scores best by
 * indentation and blank lines. Constants and scoring as in git's xdiffi.c.
 */
const MAX_INDENT = 200;
const MAX_BLANKS = 20;
const START_OF_FILE_PENALTY = 1;
const END_OF_FILE_PENALTY = 21;
const TOTAL_BLANK_WEIGHT = -30;
const POST_BLANK_WEIGHT = 6;
const RELATIVE_INDENT_PENALTY = -4;
const RELATIVE_INDENT_WITH_BLANK_PENALTY = 10;
const RELATIVE_OUTDENT_PENALTY = 24;
const RELATIVE_OUTDENT_WITH_BLANK_PENALTY = 17;
const RELATIVE_DEDENT_PENALTY = 23;
const RELATIVE_DEDENT_WITH_BLANK_PENALTY = 17;
const INDENT_WEIGHT = 60;
const INDENT_HEURISTIC_MAX_SLIDING = 100;

/* get_indent: the width of record i's leading white space (tabs to 8), or -1 for a blank line. */
function getIndent(recs: Records, r: number): number {
  let ret = 0;
  const { buf } = recs;
  for (let i = recs.start[r] as number, end = recs.start[r + 1] as number; i < end; i++) {
    const c = buf[i] as number;
    // XDL_ISSPACE: space, \t, \n, \v, \f, \r
    if (!(c === 32 || (c >= 9 && c <= 13))) return ret;
    if (c === 32) ret += 1;
    else if (c === 9) ret += 8 - (ret % 8);
    if (ret >= MAX_INDENT) return MAX_INDENT;
  }
  return -1;
}

interface SplitMeasurement {
  endOfFile: boolean;
  indent: number;
  preBlank: number;
  preIndent: number;
  postBlank: number;
  postIndent: number;
}

function measureSplit(xdf: XdFile, split: number): SplitMeasurement {
  const m: SplitMeasurement = { endOfFile: false, indent: -1, preBlank: 0, preIndent: -1, postBlank: 0, postIndent: -1 };
  if (split >= xdf.nrec) m.endOfFile = true;
  else m.indent = getIndent(xdf.recs, split);
  for (let i = split - 1; i >= 0; i--) {
    m.preIndent = getIndent(xdf.recs, i);
    if (m.preIndent !== -1) break;
    m.preBlank += 1;
    if (m.preBlank === MAX_BLANKS) {
      m.preIndent = 0;
      break;
    }
  }
  for (let i = split + 1; i < xdf.nrec; i++) {
    m.postIndent = getIndent(xdf.recs, i);
    if (m.postIndent !== -1) break;
    m.postBlank += 1;
    if (m.postBlank === MAX_BLANKS) {
      m.postIndent = 0;
      break;
    }
  }
  return m;
}

interface SplitScore {
  effectiveIndent: number;
  penalty: number;
}

function scoreAddSplit(m: SplitMeasurement, s: SplitScore): void {
  if (m.preIndent === -1 && m.preBlank === 0) s.penalty += START_OF_FILE_PENALTY;
  if (m.endOfFile) s.penalty += END_OF_FILE_PENALTY;
  const postBlank = m.indent === -1 ? 1 + m.postBlank : 0;
  const totalBlank = m.preBlank + postBlank;
  s.penalty += TOTAL_BLANK_WEIGHT * totalBlank;
  s.penalty += POST_BLANK_WEIGHT * postBlank;
  const indent = m.indent !== -1 ? m.indent : m.postIndent;
  const anyBlanks = totalBlank !== 0;
  s.effectiveIndent += indent;
  if (indent === -1 || m.preIndent === -1 || indent === m.preIndent) {
    // no adjustment
  } else if (indent > m.preIndent) {
    s.penalty += anyBlanks ? RELATIVE_INDENT_WITH_BLANK_PENALTY : RELATIVE_INDENT_PENALTY;
  } else if (m.postIndent !== -1 && m.postIndent > indent) {
    s.penalty += anyBlanks ? RELATIVE_OUTDENT_WITH_BLANK_PENALTY : RELATIVE_OUTDENT_PENALTY;
  } else {
    s.penalty += anyBlanks ? RELATIVE_DEDENT_WITH_BLANK_PENALTY : RELATIVE_DEDENT_PENALTY;
  }
}

function scoreCmp(s1: SplitScore, s2: SplitScore): number {
  const cmpIndents = Number(s1.effectiveIndent > s2.effectiveIndent) - Number(s1.effectiveIndent < s2.effectiveIndent);
  return INDENT_WEIGHT * cmpIndents + (s1.penalty - s2.penalty);
}

/*
 * xdl_change_compact: slide each group as far down as it goes, then back up
 * to line up with a change in the other file if possible; failing that, with
 * `indentHeuristic` (git diff's default; merge-file never sets it, and diff
 * counts do not depend on it), to where the indent heuristic scores best.
 */
export function changeCompact(xdf: XdFile, xdfo: XdFile, indentHeuristic = false): void {
  const g: Group = { start: 0, end: 0 };
  const go: Group = { start: 0, end: 0 };
  groupInit(xdf, g);
  groupInit(xdfo, go);

  for (;;) {
    if (g.end !== g.start) {
      let groupsize: number;
      let earliestEnd: number;
      let endMatchingOther: number;
      do {
        groupsize = g.end - g.start;
        endMatchingOther = -1;

        while (groupSlideUp(xdf, g)) if (!groupPrevious(xdfo, go)) bug("group sync broken sliding up");

        earliestEnd = g.end;
        if (go.end > go.start) endMatchingOther = g.end;

        for (;;) {
          if (!groupSlideDown(xdf, g)) break;
          if (!groupNext(xdfo, go)) bug("group sync broken sliding down");
          if (go.end > go.start) endMatchingOther = g.end;
        }
      } while (groupsize !== g.end - g.start);

      if (g.end === earliestEnd) {
        // no shifting was possible
      } else if (endMatchingOther !== -1) {
        while (go.end === go.start) {
          if (!groupSlideUp(xdf, g)) bug("match disappeared");
          if (!groupPrevious(xdfo, go)) bug("group sync broken sliding to match");
        }
      } else if (indentHeuristic) {
        let shift = earliestEnd;
        if (g.end - groupsize - 1 > shift) shift = g.end - groupsize - 1;
        if (g.end - INDENT_HEURISTIC_MAX_SLIDING > shift) shift = g.end - INDENT_HEURISTIC_MAX_SLIDING;
        let bestShift = -1;
        let best: SplitScore = { effectiveIndent: 0, penalty: 0 };
        for (; shift <= g.end; shift++) {
          const score: SplitScore = { effectiveIndent: 0, penalty: 0 };
          scoreAddSplit(measureSplit(xdf, shift), score);
          scoreAddSplit(measureSplit(xdf, shift - groupsize), score);
          if (bestShift === -1 || scoreCmp(score, best) <= 0) {
            best = score;
            bestShift = shift;
          }
        }
        while (g.end > bestShift) {
          if (!groupSlideUp(xdf, g)) bug("best shift unreached");
          if (!groupPrevious(xdfo, go)) bug("group sync broken sliding to blank line");
        }
      }
    }

    if (!groupNext(xdf, g)) break;
    if (!groupNext(xdfo, go)) bug("group sync broken moving to next group");
  }

  if (groupNext(xdfo, go)) bug("group sync broken at end of file");
}

/* xdl_build_script, returned in file order. */
export function buildScript(env: XdEnv): XdChange[] {
  const c1 = env.xdf1.rchg;
  const c2 = env.xdf2.rchg;
  const out: XdChange[] = [];
  let i1 = env.xdf1.nrec;
  let i2 = env.xdf2.nrec;
  // The guard slots make rchg[-1] read as 0; unchanged lines pair up one to
  // one, so both indices reach 0 together.
  for (; i1 >= 0 || i2 >= 0; i1--, i2--) {
    if (c1[i1] || c2[i2]) {
      const l1 = i1;
      const l2 = i2;
      for (; c1[i1]; i1--);
      for (; c2[i2]; i2--);
      out.push({ i1, i2, chg1: l1 - i1, chg2: l2 - i2 });
    }
  }
  out.reverse();
  return out;
}

/* Diff, compact both ways, and build the script, as xdl_merge does for each side. */
export function diffScript(recs1: Records, recs2: Records): { env: XdEnv; script: XdChange[] } {
  const env = doDiff(recs1, recs2);
  changeCompact(env.xdf1, env.xdf2);
  changeCompact(env.xdf2, env.xdf1);
  return { env, script: buildScript(env) };
}
