/**
 * node:zlib, loaded on first use: only writing objects and indexing a
 * downloaded pack need it (reading inflates by Bun's own, pack-reader.ts),
 * and loading it costs about 7 ms of every call, a no-change pull's too.
 */
let loaded: typeof import("node:zlib") | undefined;

export function zlib(): typeof import("node:zlib") {
  return (loaded ??= require("node:zlib") as typeof import("node:zlib"));
}

/**
 * Contents up to this size are deflated in one call, as always. Bigger ones
 * are deflated a slice at a time, each handed on as it is made, so that
 * neither a wrapped copy of the content nor its whole compressed stream is
 * ever in memory: a 100 MB file would otherwise cost 100 MB for the copy
 * and a third of that again for the stream, at each of the scan, the merge
 * and the pack.
 */
const SLICE = 4 << 20;

/**
 * One zlib stream of `prefix` then `content` (a loose object's header and
 * its content; no prefix for a pack entry), handed to `emit` in parts whose
 * concatenation is the stream. A big content is deflated in raw slices,
 * each ended by a sync flush but the last, so that they join into one valid
 * deflate stream (RFC 1951: blocks follow blocks, and a sync flush ends a
 * block on a byte boundary without ending the stream), between the zlib
 * header and the Adler-32 of everything (RFC 1950). A slice starts with an
 * empty window: a few bytes per 4 MiB lost to compression.
 */
export function deflateInParts(prefix: Uint8Array | null, content: Uint8Array, level: number | undefined, emit: (part: Buffer) => void): void {
  const z = zlib();
  if (content.byteLength <= SLICE) {
    emit(z.deflateSync(prefix === null ? content : Buffer.concat([prefix, content]), { level }));
    return;
  }
  emit(zlibHeader(level ?? 6));
  let adler = 1;
  const flush = z.constants.Z_SYNC_FLUSH;
  if (prefix !== null) {
    emit(z.deflateRawSync(prefix, { level, finishFlush: flush }));
    adler = adler32Combine(adler, Bun.hash.adler32(prefix), prefix.byteLength);
  }
  for (let at = 0; at < content.byteLength; at += SLICE) {
    const slice = content.subarray(at, Math.min(at + SLICE, content.byteLength));
    const last = at + SLICE >= content.byteLength;
    emit(z.deflateRawSync(slice, { level, finishFlush: last ? z.constants.Z_FINISH : flush }));
    adler = adler32Combine(adler, Bun.hash.adler32(slice), slice.byteLength);
  }
  const trailer = Buffer.alloc(4);
  trailer.writeUInt32BE(adler);
  emit(trailer);
}

/** RFC 1950's two header bytes: deflate with a 32 KiB window, the level's hint, and the check bits that make them a multiple of 31. */
function zlibHeader(level: number): Buffer {
  const hint = level < 2 ? 0 : level < 6 ? 1 : level === 6 ? 2 : 3;
  const cmf = 0x78;
  let flg = hint << 6;
  flg += 31 - ((cmf * 256 + flg) % 31);
  return Buffer.from([cmf, flg]);
}

const ADLER_BASE = 65521;

/** The Adler-32 of A followed by B from the Adler-32s of each and B's length (zlib's adler32_combine). */
export function adler32Combine(adler1: number, adler2: number, length2: number): number {
  const rem = length2 % ADLER_BASE;
  let sum1 = adler1 & 0xffff;
  let sum2 = (rem * sum1) % ADLER_BASE;
  sum1 += (adler2 & 0xffff) + ADLER_BASE - 1;
  sum2 += ((adler1 >>> 16) & 0xffff) + ((adler2 >>> 16) & 0xffff) + ADLER_BASE - rem;
  if (sum1 >= ADLER_BASE) sum1 -= ADLER_BASE;
  if (sum1 >= ADLER_BASE) sum1 -= ADLER_BASE;
  if (sum2 >= ADLER_BASE * 2) sum2 -= ADLER_BASE * 2;
  if (sum2 >= ADLER_BASE) sum2 -= ADLER_BASE;
  return (sum1 | (sum2 << 16)) >>> 0;
}
