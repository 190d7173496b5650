/**
 * Writing a pack to a file as its entries are made (object-cache.ts
 * packObjects), so that no more than a few of them are in memory at once,
 * and its index from what the writer knows of each entry: reading a pack
 * back to index it inflates every entry again, which for a first commit of
 * 50,000 files is its whole size in dead buffers, and a second of CPU.
 */
import * as fs from "node:fs";
import { dirname } from "node:path";
import { createHash } from "./hash.ts";
import { packHeader, packIndex, type PackedEntry } from "./pack.ts";

/** How object-cache.ts packObjects splits what it packs by size (publish/write.ts: a big publication in several packs). */
export interface PackSplit {
  /** How many of the first objects may go into the parts: blobs, never the commit or its trees. */
  leading: number;
  /** A part is closed once it holds this many bytes. */
  bytes: number;
  part: (pack: WrittenPack) => Promise<void>;
}

/** A finished pack and its version 2 index. */
export interface WrittenPack {
  pack: Uint8Array;
  idx: Buffer;
}

/**
 * A pack written to a file entry by entry (pack.ts writePack's bytes,
 * without holding its entries), then read back whole once finished: the
 * entry count patched into its header, the SHA-1 trailer appended, and its
 * index made from the entries as they were written.
 */
export class PackFile {
  private readonly fd: number;
  private pending: Buffer[] = [];
  private pendingBytes = 0;
  private readonly entries: PackedEntry[] = [];
  /** Bytes added so far, the header's included. */
  size = 0;

  constructor(private readonly file: string) {
    fs.mkdirSync(dirname(file), { recursive: true });
    this.fd = fs.openSync(file, "w+");
    // Its count is known once finished: patched in then.
    this.add(packHeader(0));
  }

  /**
   * One entry, of object `oid`: `write` hands its bytes to `add` in order
   * (pack.ts packEntryParts), and they are recorded with the offset and the
   * CRC-32 the index needs.
   */
  entry(oid: string, write: (add: (part: Buffer) => void) => void): void {
    const offset = this.size;
    let crc = 0;
    write((part) => {
      crc = Bun.hash.crc32(part, crc);
      this.add(part);
    });
    this.entries.push({ oid: Buffer.from(oid, "hex"), crc: crc >>> 0, offset, end: this.size });
  }

  private add(bytes: Buffer): void {
    this.pending.push(bytes);
    this.pendingBytes += bytes.length;
    this.size += bytes.length;
    // Writes of about a megabyte rather than a system call per entry.
    if (this.pendingBytes >= 1 << 20) this.flush();
  }

  private flush(): void {
    const chunk = Buffer.concat(this.pending, this.pendingBytes);
    for (let at = 0; at < chunk.length; ) at += fs.writeSync(this.fd, chunk, at);
    this.pending = [];
    this.pendingBytes = 0;
  }

  /** The pack, trailer included, read into one buffer of its size, and its index. The file is left as written (discard removes it). */
  finish(): WrittenPack {
    this.flush();
    const pack = Buffer.allocUnsafe(this.size + 20);
    for (let at = 0, n; at < this.size; at += n) {
      n = fs.readSync(this.fd, pack, at, this.size - at, at);
      if (n === 0) throw new Error("pack file shorter than written");
    }
    packHeader(this.entries.length).copy(pack, 0);
    const checksum = createHash("sha1").update(pack.subarray(0, this.size)).digest();
    checksum.copy(pack, this.size);
    return { pack: new Uint8Array(pack.buffer, pack.byteOffset, pack.byteLength), idx: packIndex(this.entries, checksum) };
  }

  /** Close and remove the file, finished or not. */
  discard(): void {
    try {
      fs.closeSync(this.fd);
    } catch {
      /* closed already */
    }
    fs.rmSync(this.file, { force: true });
  }
}
