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
import { inflateSync } from "node:zlib";

export const PACK_TYPES = ["", "commit", "tree", "blob", "tag"];

/** Where an object sits in a pack of the cache: the file and its entry's byte range. */
interface PackedAt {
  fd: number;
  offset: number;
  end: number;
}

export class PackReader {
  private packed: Map<string, PackedAt> | null = null;
  private readonly fds: number[] = [];

  constructor(private readonly gitdir: string) {}

  close(): void {
    for (const fd of this.fds.splice(0)) fs.closeSync(fd);
    this.packed = null;
  }

  private index(): Map<string, PackedAt> {
    if (this.packed) return this.packed;
    const packed = new Map<string, PackedAt>();
    const dir = join(this.gitdir, "objects", "pack");
    for (const name of fs.readdirSync(dir)) {
      const m = /^pack-(.+)\.idx$/.exec(name);
      if (!m) continue;
      const idx = fs.readFileSync(join(dir, name));
      if (idx.length < 8 + 256 * 4 || idx.readUInt32BE(0) !== 0xff744f63 || idx.readUInt32BE(4) !== 2) continue;
      const count = idx.readUInt32BE(8 + 255 * 4);
      const names = 8 + 256 * 4;
      const small = names + count * 20 + count * 4; // after the ids and their CRC-32s
      const large = small + count * 4;
      if (idx.length < large) continue;
      const packFile = join(dir, `pack-${m[1]}.pack`);
      let packSize: number;
      try {
        packSize = fs.statSync(packFile).size;
      } catch {
        continue;
      }
      const entries: Array<{ oid: string; offset: number }> = [];
      for (let i = 0; i < count; i++) {
        let offset = idx.readUInt32BE(small + i * 4);
        if (offset & 0x80000000) offset = Number(idx.readBigUInt64BE(large + (offset & 0x7fffffff) * 8));
        entries.push({ oid: idx.toString("hex", names + i * 20, names + (i + 1) * 20), offset });
      }
      // An entry ends where the next one starts; the last, at the 20-byte checksum.
      entries.sort((x, y) => x.offset - y.offset);
      const fd = fs.openSync(packFile, "r");
      this.fds.push(fd);
      entries.forEach((e, i) => {
        if (!packed.has(e.oid)) packed.set(e.oid, { fd, offset: e.offset, end: entries[i + 1]?.offset ?? packSize - 20 });
      });
    }
    this.packed = packed;
    return packed;
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
