/**
 * The pack format: entries, packs and their version 2 indexes, written and
 * parsed here only. slivingdoc writes undeltified packs; a deltified entry
 * (a pack from elsewhere) is recognised here and left to isomorphic-git
 * (object-cache.ts).
 * https://git-scm.com/docs/pack-format
 */
import { createHash } from "./hash.ts";
import { droppedBytes } from "../memory/garbage.ts";
import { release } from "../memory/release.ts";
import { deflateInParts, zlib } from "./zlib.ts";

const PACK_TYPES = ["", "commit", "tree", "blob", "tag"];

const TYPE_CODES: Record<string, number> = { commit: 1, tree: 2, blob: 3, tag: 4 };

/**
 * The header of the pack entry at `at`: type in bits 4–6 of the first byte
 * ("" for a deltified or reserved one), size in a varint; `data` is where
 * the zlib stream (or a delta's base reference) starts.
 */
export function entryHeader(buf: Uint8Array, at: number): { type: string; size: number; data: number } {
  let byte = buf[at++]!;
  const type = PACK_TYPES[(byte >> 4) & 7] ?? "";
  let size = byte & 0x0f;
  let shift = 4;
  while (byte & 0x80) {
    byte = buf[at++]!;
    size += (byte & 0x7f) * 2 ** shift;
    shift += 7;
  }
  return { type, size, data: at };
}

/** A version 2 pack index: its object count, and each object's id and pack offset in id order. */
export interface PackIndex {
  count: number;
  oid(i: number): string;
  offset(i: number): number;
}

/**
 * Parse a version 2 pack index (magic, version, 256 fan-out entries, the
 * sorted ids, their CRC-32s, 31-bit offsets, then 64-bit ones); null when
 * it is not one or is truncated.
 * https://git-scm.com/docs/pack-format#_version_2_pack_idx_files_support_packs_larger_than_4_gib_and
 */
export function parsePackIndex(idx: Buffer): PackIndex | null {
  if (idx.length < 8 + 256 * 4 || idx.readUInt32BE(0) !== 0xff744f63 || idx.readUInt32BE(4) !== 2) return null;
  const count = idx.readUInt32BE(8 + 255 * 4);
  const names = 8 + 256 * 4;
  const small = names + count * 20 + count * 4; // after the ids and their CRC-32s
  const large = small + count * 4;
  if (idx.length < large) return null;
  return {
    count,
    oid: (i) => idx.toString("hex", names + i * 20, names + (i + 1) * 20),
    offset: (i) => {
      const offset = idx.readUInt32BE(small + i * 4);
      return offset & 0x80000000 ? Number(idx.readBigUInt64BE(large + (offset & 0x7fffffff) * 8)) : offset;
    },
  };
}

/**
 * Above this, an entry is deflated at best speed: zlib's default level takes
 * ten times as long (15 s for a 100 MB text) for a stream about half as big.
 */
const BIG_ENTRY = 1 << 20;

/** One undeltified pack entry: type and size in git's varint header, then the zlib stream. */
export function packEntry(type: string, content: Buffer): Buffer {
  const parts: Buffer[] = [];
  packEntryParts(type, content, (part) => parts.push(part));
  return parts.length === 1 ? parts[0]! : Buffer.concat(parts);
}

/** packEntry, handed to `emit` part by part: a big content is never copied, nor its stream held whole (zlib.ts deflateInParts). */
export function packEntryParts(type: string, content: Uint8Array, emit: (part: Buffer) => void): void {
  const code = TYPE_CODES[type];
  if (code === undefined) throw new Error(`unexpected object type ${type}`);
  let size = content.length;
  const header = [(code << 4) | (size & 0x0f)];
  size = Math.floor(size / 16);
  while (size > 0) {
    header[header.length - 1]! |= 0x80;
    header.push(size & 0x7f);
    size = Math.floor(size / 128);
  }
  emit(Buffer.from(header));
  deflateInParts(null, content, content.length > BIG_ENTRY ? 1 : undefined, emit);
}

/** A version 2 pack's 12-byte header: magic, version, entry count. */
export function packHeader(count: number): Buffer {
  const head = Buffer.alloc(12);
  head.write("PACK", 0, "latin1");
  head.writeUInt32BE(2, 4);
  head.writeUInt32BE(count, 8);
  return head;
}

/**
 * A version 2 pack of undeltified entries, written here rather than by
 * isomorphic-git's packObjects, whose per-object lookups scan every pack of
 * the cache (20 s for 5,000 objects among 1,001 packs in the bench).
 */
export function writePack(entries: Buffer[]): Uint8Array {
  const body = Buffer.concat([packHeader(entries.length), ...entries]);
  const checksum = createHash("sha1").update(body).digest();
  return new Uint8Array(Buffer.concat([body, checksum]));
}


/**
 * writePack, with its version 2 index made from the object ids given with
 * the entries (each an undeltified entry, as packEntry makes), so that the
 * pack is imported without inflating every entry again to index it
 * (object-cache.ts importPack's `ownIndex`).
 */
export function writeIndexedPack(entries: ReadonlyArray<{ oid: string; entry: Buffer }>): { pack: Uint8Array; idx: Buffer } {
  const packed: PackedEntry[] = [];
  let offset = 12; // after the header
  for (const { oid, entry } of entries) {
    packed.push({ oid: Buffer.from(oid, "hex"), crc: Bun.hash.crc32(entry) >>> 0, offset, end: offset + entry.length });
    offset += entry.length;
  }
  const pack = writePack(entries.map((e) => e.entry));
  const checksum = Buffer.from(pack.buffer, pack.byteOffset + pack.byteLength - 20, 20);
  return { pack, idx: packIndex(packed, checksum) };
}

/** An undeltified entry of a pack: its object id, the CRC-32 of its bytes, and where they lie (end exclusive). */
export interface PackedEntry {
  oid: Buffer;
  crc: number;
  offset: number;
  end: number;
}

/**
 * The version 2 index of a pack whose entries are all undeltified (every
 * pack slivingdoc writes), built in one pass: each entry is inflated once,
 * its id hashed, its CRC-32 taken. Returns null for a pack with deltified
 * entries, which isomorphic-git indexes instead; throws on a malformed pack.
 * https://git-scm.com/docs/pack-format#_version_2_pack_idx_files_support_packs_larger_than_4_gib_and
 */
export function indexUndeltifiedPack(pack: Uint8Array): Buffer | null {
  const read = undeltifiedEntries(pack);
  return read === null ? null : packIndex(read.entries, read.checksum);
}

/**
 * The entries of a pack whose entries are all undeltified, in pack order,
 * each inflated once to hash its id, and the pack's checksum; null for a
 * pack with a deltified entry; throws on a malformed pack.
 */
export function undeltifiedEntries(pack: Uint8Array): { entries: PackedEntry[]; checksum: Buffer } | null {
  const buf = Buffer.from(pack.buffer, pack.byteOffset, pack.byteLength);
  if (buf.length < 32 || buf.toString("latin1", 0, 4) !== "PACK" || buf.readUInt32BE(4) !== 2) throw new Error("not a version 2 pack");
  const count = buf.readUInt32BE(8);
  const end = buf.length - 20;
  const checksum = buf.subarray(end);
  if (!createHash("sha1").update(buf.subarray(0, end)).digest().equals(checksum)) throw new Error("pack checksum mismatch");
  const entries: PackedEntry[] = [];
  let at = 12;
  for (let n = 0; n < count; n++) {
    if (at >= end) throw new Error("pack truncated");
    const start = at;
    const { type, size, data } = entryHeader(buf, at);
    at = data;
    if (type === "") return null; // deltified (or reserved): not ours to index
    const out = zlib().inflateSync(buf.subarray(at, end), { info: true } as never) as unknown as { buffer: Buffer; engine: { bytesWritten: number } };
    if (out.buffer.length !== size) throw new Error("pack entry size mismatch");
    at += out.engine.bytesWritten;
    const oid = createHash("sha1").update(`${type} ${size}\0`).update(out.buffer).digest();
    // Inflated only to be hashed: a big object's content is freed now, not at the next collection.
    release(out.buffer);
    droppedBytes(size);
    entries.push({ oid, crc: Bun.hash.crc32(buf.subarray(start, at)) >>> 0, offset: start, end: at });
  }
  if (at !== end) throw new Error("pack has trailing bytes");
  return { entries, checksum };
}

/** The version 2 index of a pack holding `entries` (at their offsets), whose checksum is `checksum`. */
export function packIndex(packed: readonly PackedEntry[], checksum: Buffer): Buffer {
  const entries = [...packed].sort((x, y) => Buffer.compare(x.oid, y.oid));
  const count = entries.length;
  const large = entries.filter((e) => e.offset >= 0x80000000);
  const idx = Buffer.alloc(8 + 256 * 4 + count * (20 + 4 + 4) + large.length * 8 + 40);
  idx.writeUInt32BE(0xff744f63, 0);
  idx.writeUInt32BE(2, 4);
  let pos = 8;
  for (let b = 0, i = 0; b < 256; b++) {
    while (i < count && entries[i]!.oid[0]! <= b) i++;
    idx.writeUInt32BE(i, pos);
    pos += 4;
  }
  for (const e of entries) pos += e.oid.copy(idx, pos);
  for (const e of entries) pos = idx.writeUInt32BE(e.crc, pos);
  let li = 0;
  for (const e of entries) pos = idx.writeUInt32BE(e.offset >= 0x80000000 ? (0x80000000 | li++) >>> 0 : e.offset, pos);
  for (const e of large) pos = idx.writeBigUInt64BE(BigInt(e.offset), pos);
  pos += checksum.copy(idx, pos);
  createHash("sha1").update(idx.subarray(0, pos)).digest().copy(idx, pos);
  return idx;
}
