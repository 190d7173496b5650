/**
 * Writing a pack to a file as its entries are made (object-cache.ts
 * packObjects), so that no more than a few of them are in memory at once.
 */
import * as fs from "node:fs";
import { dirname } from "node:path";
import { createHash } from "./hash.ts";
import { packHeader } from "./pack.ts";

/**
 * A pack written to a file entry by entry (pack.ts writePack's bytes,
 * without holding its entries): the header, the entries through a small
 * buffer, the SHA-1 trailer; read back whole once finished.
 */
export class PackFile {
  private readonly fd: number;
  private readonly sha1 = createHash("sha1");
  private pending: Buffer[] = [];
  private pendingBytes = 0;

  constructor(
    private readonly file: string,
    count: number,
  ) {
    fs.mkdirSync(dirname(file), { recursive: true });
    this.fd = fs.openSync(file, "w");
    this.add(packHeader(count));
  }

  /** A part of the pack, in order (an arrow: entries are handed to it part by part, pack.ts packEntryParts). */
  readonly add = (bytes: Buffer): void => {
    this.sha1.update(bytes);
    this.pending.push(bytes);
    this.pendingBytes += bytes.length;
    // Writes of about a megabyte rather than a system call per entry.
    if (this.pendingBytes >= 1 << 20) this.flush();
  };

  private flush(): void {
    const chunk = Buffer.concat(this.pending, this.pendingBytes);
    for (let at = 0; at < chunk.length; ) at += fs.writeSync(this.fd, chunk, at);
    this.pending = [];
    this.pendingBytes = 0;
  }

  finish(): Uint8Array {
    const trailer = this.sha1.digest();
    this.pending.push(trailer);
    this.pendingBytes += trailer.length;
    this.flush();
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
