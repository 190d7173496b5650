/**
 * Raw object reads from the object cache without going through
 * isomorphic-git: one map over every pack index (id → pack, byte range),
 * built once, so a lookup costs the same for 1 or 1,000 packs; entries and
 * loose objects are inflated with node:zlib. isomorphic-git lists the pack
 * directory, probes the loose file and inflates in JavaScript on every read,
 * which made a cold pull of 10,000 files take seconds (docs/performance.md).
 * Deltified entries (slivingdoc writes none) come back as null, and the
 * caller asks isomorphic-git instead.
 * https://git-scm.com/docs/pack-format
 */
import * as fs from "node:fs";
import { join } from "node:path";
import { createHash } from "node:crypto";
import { deflateSync, inflateSync } from "node:zlib";
import { fileIdentity } from "../kept.ts";

export const PACK_TYPES = ["", "commit", "tree", "blob", "tag"];

/** Where an object sits in a pack of the cache: the file and its entry's byte range. */
interface PackedAt {
  fd: number;
  offset: number;
  end: number;
}

const TYPE_CODES: Record<string, number> = { commit: 1, tree: 2, blob: 3, tag: 4 };

/** One undeltified pack entry: type and size in git's varint header, then the zlib stream. */
export function packEntry(type: string, content: Buffer): Buffer {
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
  return Buffer.concat([Buffer.from(header), deflateSync(content)]);
}

/**
 * A version 2 pack of undeltified entries, written here rather than by
 * isomorphic-git's packObjects, whose per-object lookups scan every pack of
 * the cache (20 s for 5,000 objects among 1,001 packs in the bench).
 */
export function writePack(entries: Buffer[]): Uint8Array {
  const head = Buffer.alloc(12);
  head.write("PACK", 0, "latin1");
  head.writeUInt32BE(2, 4);
  head.writeUInt32BE(entries.length, 8);
  const body = Buffer.concat([head, ...entries]);
  const checksum = createHash("sha1").update(body).digest();
  return new Uint8Array(Buffer.concat([body, checksum]));
}


/**
 * The version 2 index of a pack whose entries are all undeltified (every
 * pack slivingdoc writes), built in one pass: each entry is inflated once,
 * its id hashed, its CRC-32 taken. Returns null for a pack with deltified
 * entries, which isomorphic-git indexes instead; throws on a malformed pack.
 * https://git-scm.com/docs/pack-format#_version_2_pack_idx_files_support_packs_larger_than_4_gib_and
 */
export function indexUndeltifiedPack(pack: Uint8Array): Buffer | null {
  const buf = Buffer.from(pack.buffer, pack.byteOffset, pack.byteLength);
  if (buf.length < 32 || buf.toString("latin1", 0, 4) !== "PACK" || buf.readUInt32BE(4) !== 2) throw new Error("not a version 2 pack");
  const count = buf.readUInt32BE(8);
  const end = buf.length - 20;
  const checksum = buf.subarray(end);
  if (!createHash("sha1").update(buf.subarray(0, end)).digest().equals(checksum)) throw new Error("pack checksum mismatch");
  const entries: Array<{ oid: Buffer; crc: number; offset: number }> = [];
  let at = 12;
  for (let n = 0; n < count; n++) {
    if (at >= end) throw new Error("pack truncated");
    const start = at;
    let byte = buf[at++]!;
    const type = PACK_TYPES[(byte >> 4) & 7] ?? "";
    let size = byte & 0x0f;
    let shift = 4;
    while (byte & 0x80) {
      byte = buf[at++]!;
      size += (byte & 0x7f) * 2 ** shift;
      shift += 7;
    }
    if (type === "") return null; // deltified (or reserved): not ours to index
    const out = inflateSync(buf.subarray(at, end), { info: true } as never) as unknown as { buffer: Buffer; engine: { bytesWritten: number } };
    if (out.buffer.length !== size) throw new Error("pack entry size mismatch");
    at += out.engine.bytesWritten;
    const oid = createHash("sha1").update(`${type} ${size}\0`).update(out.buffer).digest();
    entries.push({ oid, crc: Bun.hash.crc32(buf.subarray(start, at)) >>> 0, offset: start });
  }
  if (at !== end) throw new Error("pack has trailing bytes");
  entries.sort((x, y) => Buffer.compare(x.oid, y.oid));
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

export class PackReader {
  private readonly packed = new Map<string, PackedAt>();
  /** The indexed packs: index file name → the open pack file and what both files looked like then. */
  private readonly packs = new Map<string, { fd: number; identity: string | null }>();
  private listed = false;

  constructor(private readonly gitdir: string) {}

  close(): void {
    for (const { fd } of this.packs.values()) fs.closeSync(fd);
    this.packs.clear();
    this.packed.clear();
    this.listed = false;
  }

  /**
   * Bring the map up to date with the pack directory: index the packs added
   * since (by this process or another), and start over when one was removed.
   * Pack names are content addresses, so a known pack needs reading again
   * only if its index file was replaced or written to (damage, or a repair;
   * a rewritten pack file reads as damage through the index's offsets, as it
   * would for a reader opened afresh) —
   * a server keeps one reader per cache across calls. Returns true when it
   * started over, so what was read through it before may be stale.
   * `verify: false` skips that check, for a caller that only added a pack.
   */
  refresh(verify = true): boolean {
    const dir = join(this.gitdir, "objects", "pack");
    const names = new Set(fs.readdirSync(dir).filter((name) => /^pack-.+\.idx$/.test(name)));
    let restarted = false;
    for (const [name, pack] of this.packs) {
      if (!names.has(name) || (verify && fileIdentity(join(dir, name)) !== pack.identity)) {
        this.close();
        restarted = true;
        break;
      }
    }
    for (const name of names) if (!this.packs.has(name)) this.add(dir, name);
    this.listed = true;
    return restarted;
  }

  private add(dir: string, name: string): void {
    const identity = fileIdentity(join(dir, name));
    const idx = fs.readFileSync(join(dir, name));
    if (idx.length < 8 + 256 * 4 || idx.readUInt32BE(0) !== 0xff744f63 || idx.readUInt32BE(4) !== 2) return;
    const count = idx.readUInt32BE(8 + 255 * 4);
    const names = 8 + 256 * 4;
    const small = names + count * 20 + count * 4; // after the ids and their CRC-32s
    const large = small + count * 4;
    if (idx.length < large) return;
    const packFile = join(dir, name.replace(/\.idx$/, ".pack"));
    let fd: number;
    let packSize: number;
    try {
      fd = fs.openSync(packFile, "r");
      packSize = fs.fstatSync(fd).size;
    } catch {
      return;
    }
    const entries: Array<{ oid: string; offset: number }> = [];
    for (let i = 0; i < count; i++) {
      let offset = idx.readUInt32BE(small + i * 4);
      if (offset & 0x80000000) offset = Number(idx.readBigUInt64BE(large + (offset & 0x7fffffff) * 8));
      entries.push({ oid: idx.toString("hex", names + i * 20, names + (i + 1) * 20), offset });
    }
    // An entry ends where the next one starts; the last, at the 20-byte checksum.
    entries.sort((x, y) => x.offset - y.offset);
    this.packs.set(name, { fd, identity });
    entries.forEach((e, i) => {
      if (!this.packed.has(e.oid)) this.packed.set(e.oid, { fd, offset: e.offset, end: entries[i + 1]?.offset ?? packSize - 20 });
    });
  }

  private index(): Map<string, PackedAt> {
    if (!this.listed) this.refresh();
    return this.packed;
  }

  /** The raw pack entry of `oid` when it is packed and undeltified, else null. */
  entry(oid: string): Buffer | null {
    const at = this.index().get(oid);
    if (!at) return null;
    const buf = Buffer.alloc(at.end - at.offset);
    fs.readSync(at.fd, buf, 0, buf.length, at.offset);
    return (PACK_TYPES[(buf[0]! >> 4) & 7] ?? "") !== "" ? buf : null;
  }

  /** The object, from a pack or a loose file; null when absent or deltified. Throws on a corrupt entry. */
  read(oid: string): { type: string; object: Buffer } | null {
    const buf = this.entry(oid);
    if (buf) {
      // Entry header: type in bits 4–6 of the first byte, size in a varint.
      let i = 0;
      let byte = buf[i++]!;
      const type = PACK_TYPES[(byte >> 4) & 7]!;
      while (byte & 0x80) byte = buf[i++]!;
      return { type, object: inflateSync(buf.subarray(i)) };
    }
    const loose = join(this.gitdir, "objects", oid.slice(0, 2), oid.slice(2));
    let raw: Buffer;
    try {
      raw = inflateSync(fs.readFileSync(loose));
    } catch {
      return null;
    }
    const space = raw.indexOf(0x20);
    const nul = raw.indexOf(0, space);
    return space > 0 && nul > space ? { type: raw.toString("latin1", 0, space), object: raw.subarray(nul + 1) } : null;
  }
}
