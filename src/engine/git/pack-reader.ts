/**
 * Raw object reads from the object cache without going through
 * isomorphic-git: one map over every pack index (id → pack, byte range),
 * built once, so a lookup costs the same for 1 or 1,000 packs; entries and
 * loose objects are inflated natively (Bun's zlib). isomorphic-git lists the pack
 * directory, probes the loose file and inflates in JavaScript on every read,
 * which made a cold pull of 10,000 files take seconds (docs/performance.md).
 * Deltified entries (slivingdoc writes none) come back as null, and the
 * caller asks isomorphic-git instead.
 * https://git-scm.com/docs/pack-format
 */
import * as fs from "node:fs";
import { join } from "node:path";
import { fileIdentity } from "../memory/file-identity.ts";
import { release } from "../memory/release.ts";
import { unwrapObject } from "./objects.ts";
import { entryHeader, parsePackIndex } from "./pack.ts";

/** A zlib stream's content, by Bun's own inflate: the same bytes as node:zlib's, which costs about 7 ms to load. */
function inflateSync(bytes: Uint8Array): Buffer {
  const out = Bun.inflateSync(bytes as Uint8Array<ArrayBuffer>, { windowBits: 15 });
  return Buffer.from(out.buffer, out.byteOffset, out.byteLength);
}

/** Where an object sits in a pack of the cache: the file and its entry's byte range. */
interface PackedAt {
  fd: number;
  offset: number;
  end: number;
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
   * started over, or found an index it cannot read (placed whole by a
   * rename, an index that does not parse is damage): what was read or
   * remembered before may be stale. `verify: false` skips the check of the
   * known packs, for a caller that only added a pack.
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
    for (const name of names) if (!this.packs.has(name) && !this.add(dir, name)) restarted = true;
    this.listed = true;
    return restarted;
  }

  /** Index one pack; false when its index or pack cannot be read. */
  private add(dir: string, name: string): boolean {
    const identity = fileIdentity(join(dir, name));
    let idx;
    try {
      idx = parsePackIndex(fs.readFileSync(join(dir, name)));
    } catch {
      return false;
    }
    if (idx === null) return false;
    const packFile = join(dir, name.replace(/\.idx$/, ".pack"));
    let fd: number;
    let packSize: number;
    try {
      fd = fs.openSync(packFile, "r");
      packSize = fs.fstatSync(fd).size;
    } catch {
      return false;
    }
    const entries: Array<{ oid: string; offset: number }> = [];
    for (let i = 0; i < idx.count; i++) entries.push({ oid: idx.oid(i), offset: idx.offset(i) });
    // An entry ends where the next one starts; the last, at the 20-byte checksum.
    entries.sort((x, y) => x.offset - y.offset);
    this.packs.set(name, { fd, identity });
    entries.forEach((e, i) => {
      if (!this.packed.has(e.oid)) this.packed.set(e.oid, { fd, offset: e.offset, end: entries[i + 1]?.offset ?? packSize - 20 });
    });
    return true;
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
    return entryHeader(buf, 0).type !== "" ? buf : null;
  }

  /**
   * The size of a packed, undeltified object from its entry's header,
   * without inflating it; null otherwise. `atLeast`: below that, an entry
   * too short to inflate to it (zlib expands at most 1032 to 1) answers 0
   * unread, so asking about many small files costs no reads.
   */
  size(oid: string, atLeast = 0): number | null {
    const at = this.index().get(oid);
    if (!at) return null;
    if ((at.end - at.offset) * 1032 < atLeast) return 0;
    const head = Buffer.alloc(Math.min(16, at.end - at.offset));
    fs.readSync(at.fd, head, 0, head.length, at.offset);
    const { type, size } = entryHeader(head, 0);
    return type !== "" ? size : null;
  }

  /** The object, from a pack or a loose file; null when absent or deltified. Throws on a corrupt entry. */
  read(oid: string): { type: string; object: Buffer } | null {
    const buf = this.entry(oid);
    if (buf) {
      const { type, data } = entryHeader(buf, 0);
      const object = inflateSync(buf.subarray(data));
      // The compressed entry, a third of a big object's size, is dead now: freed, not left for the collector.
      release(buf);
      return { type, object };
    }
    const loose = join(this.gitdir, "objects", oid.slice(0, 2), oid.slice(2));
    let raw: Buffer;
    try {
      const file = fs.readFileSync(loose);
      raw = inflateSync(file);
      release(file);
    } catch {
      return null;
    }
    return unwrapObject(raw);
  }
}
