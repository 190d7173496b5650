/**
 * The stat cache: like git's index, it remembers each visible file's size,
 * times and inode with its blob id, so a scan reads and hashes only files
 * that changed. A wrong entry would hide an edit, so it is conservative:
 *
 * - an entry is trusted only if size, mtime, ctime and inode all match;
 * - "racily clean" entries — files modified shortly before their stamp was
 *   taken — are never trusted, since a later write in the same clock tick
 *   would leave the stamp unchanged (git's racy-git problem); each entry
 *   keeps the time its own stamp was taken. "Shortly" is the file system's
 *   tick: a file system with sub-second timestamps (ext4, xfs, btrfs, APFS,
 *   NTFS) stamps files from a clock that lags the wall clock by at most a
 *   scheduler tick (~4–10 ms), so 100 ms is ample; one with whole-second
 *   timestamps (ext3, HFS+) or two-second ones (FAT) gets two seconds. The
 *   ctime tells which: unlike the mtime, no program can set it;
 * - a cache that cannot be read is ignored (everything is read again), and
 *   the object cache forgets it when an object goes missing (git/object-cache.ts).
 *
 * An untrusted entry still names a blob the object cache holds, so a file
 * whose content hashes to it need not be stored again.
 */
import { readFileSync } from "node:fs";
import type { FileStamp, KnownFile, NotebookFiles } from "./scan.ts";

const RACY_FINE_MS = 100;
const RACY_COARSE_MS = 2_000;

/** How long after a file's change its stamp stays untrustworthy, from the ctime's resolution. */
export function racyWindow(stamp: FileStamp): number {
  return stamp.ctimeMs % 1_000 === 0 ? RACY_COARSE_MS : RACY_FINE_MS;
}

interface Entry {
  stamp: FileStamp;
  oid: string;
  /** When the stamp was taken, ms since the epoch. */
  takenMs: number;
}

interface CacheFile {
  version: 3;
  /** path → [size, mtimeMs, ctimeMs, ino, oid, takenMs] */
  entries: Record<string, [number, number, number, number, string, number]>;
}

const OID = /^[0-9a-f]{40}$/;

export class StatCache {
  private constructor(private readonly entries: Map<string, Entry>) {}

  static empty(): StatCache {
    return new StatCache(new Map());
  }

  static parse(text: string | null): StatCache {
    if (text === null) return StatCache.empty();
    try {
      const raw = JSON.parse(text) as CacheFile;
      // Another version (an older release's) is simply rebuilt by the next scan.
      if (raw.version !== 3) return StatCache.empty();
      const entries = new Map<string, Entry>();
      for (const path in raw.entries) {
        const [size, mtimeMs, ctimeMs, ino, oid, takenMs] = raw.entries[path]!;
        if (!OID.test(oid)) continue;
        entries.set(path, { stamp: { size, mtimeMs, ctimeMs, ino }, oid, takenMs });
      }
      return new StatCache(entries);
    } catch {
      return StatCache.empty();
    }
  }

  static load(file: string): StatCache {
    try {
      return StatCache.parse(readFileSync(file, "utf8"));
    } catch {
      return StatCache.empty();
    }
  }

  /** An independent copy: the copy in the process memory must not see a caller's changes. */
  clone(): StatCache {
    return new StatCache(new Map(this.entries));
  }

  get size(): number {
    return this.entries.size;
  }

  /** The lookup a scan uses: the blob id of a file whose stamp is trusted, else null. */
  get known(): KnownFile {
    return (path, stamp) => {
      const e = this.entries.get(path);
      if (!e) return null;
      const s = e.stamp;
      if (s.size !== stamp.size || s.mtimeMs !== stamp.mtimeMs || s.ctimeMs !== stamp.ctimeMs || s.ino !== stamp.ino) return null;
      const racy = e.takenMs - racyWindow(stamp);
      if (stamp.mtimeMs >= racy || stamp.ctimeMs >= racy) return null;
      return e.oid;
    };
  }

  /** Whether the entry for `path` has this very stamp and blob (trusted or not). */
  records(path: string, stamp: FileStamp, oid: string): boolean {
    const e = this.entries.get(path);
    if (!e || e.oid !== oid) return false;
    const s = e.stamp;
    return s.size === stamp.size && s.mtimeMs === stamp.mtimeMs && s.ctimeMs === stamp.ctimeMs && s.ino === stamp.ino;
  }

  /** The blob id last recorded for `path`, trusted or not: that blob is in the object cache. */
  recorded(path: string): string | null {
    return this.entries.get(path)?.oid ?? null;
  }

  /** Record every file of a scan, stamped at `takenMs`. */
  recordScan(files: NotebookFiles, oids: Map<string, string>, takenMs: number): void {
    const before = new Map(this.entries);
    this.entries.clear();
    for (const [path, f] of files) {
      const oid = oids.get(path);
      // A trusted entry keeps its original time: its stamp was not taken again.
      const previous = f.oid !== null && f.read !== true ? before.get(path) : undefined;
      if (oid) this.entries.set(path, { stamp: f.stamp, oid, takenMs: previous?.takenMs ?? takenMs });
    }
  }

  /**
   * Record files this process just wrote (or removed), each with the stamp
   * taken right after its write and the time it was taken, so the next scan
   * need not store them again. A write by someone else after that stamp
   * changes it; one before it, in the same clock tick, makes it racy.
   */
  recordWrites(writes: Array<{ path: string; after: string | null; stamp: FileStamp | null; takenMs: number }>): void {
    for (const w of writes) {
      if (w.after === null || w.stamp === null) this.entries.delete(w.path);
      else this.entries.set(w.path, { stamp: w.stamp, oid: w.after, takenMs: w.takenMs });
    }
  }

  serialize(): string {
    const entries: CacheFile["entries"] = {};
    for (const [path, e] of this.entries) {
      entries[path] = [e.stamp.size, e.stamp.mtimeMs, e.stamp.ctimeMs, e.stamp.ino, e.oid, e.takenMs];
    }
    return JSON.stringify({ version: 3, entries } satisfies CacheFile);
  }
}
