/**
 * The old files a call replaced, held open until it answers, so that what a
 * writer appended to one after its rename is carried into the new file
 * (visible-writes.ts).
 */
import { closeSync, fstatSync, mkdirSync, readSync } from "node:fs";
import { dirname } from "node:path";
import { blobId } from "../git/objects.ts";
import { appendTo, writeNew } from "./file-writes.ts";

/** An old file replaced by this call, held open: the path it had, its size and blob id as last read (what was carried of it), and whether the call removed it rather than replacing it. */
export interface HeldFile {
  file: string;
  fd: number;
  size: number;
  prefix: string;
  removed: boolean;
}

/** At most this many old files held open at once (descriptors are few): beyond, the oldest is read and let go. */
const HELD = 64;

/**
 * The files a call replaced, each held open after its rename. A writer that
 * opened one just before the rename (`echo line >> FILE` opens, then
 * writes) may write into it after afterRename's look, into a file that no
 * longer has a name. Read again before the call answers (`release`), what
 * was appended to it since is appended to the file at its path: a local
 * edit, which the next commit publishes. A write after that last look, or
 * one that is not an append, is lost (docs/failures.md).
 */
export class ReplacedFiles {
  private readonly held: HeldFile[] = [];

  keep(h: HeldFile): void {
    this.held.push(h);
    // The oldest has had the longest for a late write to arrive.
    while (this.held.length > HELD) settle(this.held.shift()!);
  }

  /** Read each once more, carry what was appended, and let them go. */
  release(): void {
    for (const h of this.held.splice(0)) settle(h);
  }
}

function settle(h: HeldFile): void {
  try {
    carryAppended(h);
  } catch {
    /* the new file cannot be written now (gone with its directory, disk full): the old one's late bytes have nowhere to go */
  } finally {
    closeSync(h.fd);
  }
}

/**
 * Bytes appended to the old file `h` since it was last read, appended to
 * the file at its path now. The old file of a removal comes back whole, as
 * in keepLateAppend (a file made at the path meanwhile gets it appended).
 * A change other than an append is not carried.
 */
function carryAppended(h: HeldFile): void {
  const size = fstatSync(h.fd).size;
  if (size <= h.size) return;
  const content = Buffer.alloc(size);
  for (let done = 0; done < size; ) {
    const n = readSync(h.fd, content, done, size - done, done);
    if (n === 0) break;
    done += n;
  }
  if (blobId(content.subarray(0, h.size)) !== h.prefix) return;
  if (h.removed) mkdirSync(dirname(h.file), { recursive: true });
  if (h.removed && writeNew(h.file, content)) return;
  appendTo(h.file, h.removed ? content : content.subarray(h.size));
}
