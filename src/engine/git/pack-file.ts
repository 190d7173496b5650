/**
 * Writing a pack to a file as its entries are made (object-cache.ts
 * packObjects), so that no more than a few of them are in memory at once.
 */
import * as fs from "node:fs";
import { dirname } from "node:path";
import { createHash } from "./hash.ts";
import { packHeader } from "./pack.ts";

/** How object-cache.ts packObjects splits what it packs by size (publish/write.ts: a big publication in several packs). */
export interface PackSplit {
  /** How many of the first objects may go into the parts: blobs, never the commit or its trees. */
  leading: number;
  /** A part is closed once it holds this many bytes. */
  bytes: number;
  part: (pack: Uint8Array) => Promise<void>;
}

/**
 * A pack written to a file entry by entry (pack.ts writePack's bytes,
 * without holding its entries): the header, the entries through a small
 * buffer, the SHA-1 trailer; read back whole once finished. A pack split by
 * size does not know its entry count up front: its header is patched and
 * the file hashed when it is finished.
 */
export class PackFile {
  private readonly fd: number;
  /** Null while the entry count is unknown: the header is patched and the pack hashed at the end. */
  private readonly sha1: ReturnType<typeof createHash> | null;
  private pending: Buffer[] = [];
  private pendingBytes = 0;
  /** Bytes added so far, the header's included. */
  size = 0;

  /** `count`: the entries the pack will hold; null when they are counted as it is written (a pack split by size, object-cache.ts). */
  constructor(
    private readonly file: string,
    count: number | null,
  ) {
    this.sha1 = count === null ? null : createHash("sha1");
    fs.mkdirSync(dirname(file), { recursive: true });
    // Read and write: a pack split by size is hashed from the file once finished.
    this.fd = fs.openSync(file, "w+");
    this.add(packHeader(count ?? 0));
  }

  /** A part of the pack, in order (an arrow: entries are handed to it part by part, pack.ts packEntryParts). */
  readonly add = (bytes: Buffer): void => {
    this.sha1?.update(bytes);
    this.pending.push(bytes);
    this.pendingBytes += bytes.length;
    this.size += bytes.length;
    // Writes of about a megabyte rather than a system call per entry.
    if (this.pendingBytes >= 1 << 20) this.flush();
  };

  private flush(): void {
    const chunk = Buffer.concat(this.pending, this.pendingBytes);
    for (let at = 0; at < chunk.length; ) at += fs.writeSync(this.fd, chunk, at);
    this.pending = [];
    this.pendingBytes = 0;
  }

  /** The pack's bytes, trailer included. `entries`: how many it holds, when the constructor was not told. */
  finish(entries?: number): Uint8Array {
    this.flush();
    let sha1 = this.sha1;
    if (sha1 === null) {
      if (entries === undefined) throw new Error("pack entry count not given");
      fs.writeSync(this.fd, packHeader(entries), 0, 12, 0);
      sha1 = createHash("sha1");
      // Hashed a megabyte at a time: the pack is in memory once, below, not twice.
      const chunk = Buffer.alloc(1 << 20);
      for (let at = 0, n; (n = fs.readSync(this.fd, chunk, 0, chunk.length, at)) > 0; at += n) sha1.update(chunk.subarray(0, n));
    }
    const trailer = sha1.digest();
    for (let at = 0; at < trailer.length; ) at += fs.writeSync(this.fd, trailer, at, trailer.length - at, this.size + at);
    const bytes = fs.readFileSync(this.file);
    return new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength);
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
