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
 *   the object cache forgets it when an object goes missing (git-store.ts).
 *
 * An untrusted entry still names a blob the object cache holds, so a file
 * whose content hashes to it need not be stored again.
 */
import { lstatSync, readFileSync } from "node:fs";
import { join } from "node:path";
import type { FileStamp, KnownFile, NotebookFiles } from "./scan.ts";

const RACY_FINE_NS = 100_000_000n;
const RACY_COARSE_NS = 2_000_000_000n;
const SECOND_NS = 1_000_000_000n;

/** How long after a file's change its stamp stays untrustworthy, from the ctime's resolution. */
function racyWindow(stamp: FileStamp): bigint {
  return stamp.ctimeNs % SECOND_NS === 0n ? RACY_COARSE_NS : RACY_FINE_NS;
}

interface Entry {
  stamp: FileStamp;
  oid: string;
  /** When the stamp was taken, ns since the epoch. */
  takenNs: bigint;
}

interface CacheFile {
  version: 2;
  /** path → [size, mtimeNs, ctimeNs, ino, oid, takenNs] */
  entries: Record<string, [number, string, string, string, string, string]>;
}

export class StatCache {
  private constructor(private readonly entries: Map<string, Entry>) {}

  static empty(): StatCache {
    return new StatCache(new Map());
  }

  static parse(text: string | null): StatCache {
    if (text === null) return StatCache.empty();
    try {
      const raw = JSON.parse(text) as CacheFile;
      if (raw.version !== 2) return StatCache.empty();
      const entries = new Map<string, Entry>();
      for (const [path, [size, mtime, ctime, ino, oid, taken]] of Object.entries(raw.entries)) {
        if (!/^[0-9a-f]{40}$/.test(oid)) continue;
        entries.set(path, { stamp: { size, mtimeNs: BigInt(mtime), ctimeNs: BigInt(ctime), ino: BigInt(ino) }, oid, takenNs: BigInt(taken) });
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

  get size(): number {
    return this.entries.size;
  }

  /** The lookup a scan uses: the blob id of a file whose stamp is trusted, else null. */
  get known(): KnownFile {
    return (path, stamp) => {
      const e = this.entries.get(path);
      if (!e) return null;
      const s = e.stamp;
      if (s.size !== stamp.size || s.mtimeNs !== stamp.mtimeNs || s.ctimeNs !== stamp.ctimeNs || s.ino !== stamp.ino) return null;
      const racy = e.takenNs - racyWindow(stamp);
      if (stamp.mtimeNs >= racy || stamp.ctimeNs >= racy) return null;
      return e.oid;
    };
  }

  /** The blob id last recorded for `path`, trusted or not: that blob is in the object cache. */
  recorded(path: string): string | null {
    return this.entries.get(path)?.oid ?? null;
  }

  /** Record every file of a scan, stamped at `takenNs`. */
  recordScan(files: NotebookFiles, oids: Map<string, string>, takenNs: bigint): void {
    const before = new Map(this.entries);
    this.entries.clear();
    for (const [path, f] of files) {
      const oid = oids.get(path);
      // A trusted entry keeps its original time: its stamp was not taken again.
      const previous = f.oid !== null ? before.get(path) : undefined;
      if (oid) this.entries.set(path, { stamp: f.stamp, oid, takenNs: previous?.takenNs ?? takenNs });
    }
  }

  /** Record files this process just wrote (or removed) in `root`, so the next scan need not store them again. */
  recordWrites(root: string, writes: Array<{ path: string; after: string | null }>, takenNs: bigint): void {
    for (const w of writes) {
      if (w.after === null) {
        this.entries.delete(w.path);
        continue;
      }
      try {
        const st = lstatSync(join(root, w.path), { bigint: true });
        this.entries.set(w.path, {
          stamp: { size: Number(st.size), mtimeNs: st.mtimeNs, ctimeNs: st.ctimeNs, ino: st.ino },
          oid: w.after,
          takenNs,
        });
      } catch {
        this.entries.delete(w.path);
      }
    }
  }

  serialize(): string {
    const entries: CacheFile["entries"] = {};
    for (const [path, e] of this.entries) {
      entries[path] = [e.stamp.size, String(e.stamp.mtimeNs), String(e.stamp.ctimeNs), String(e.stamp.ino), e.oid, String(e.takenNs)];
    }
    return JSON.stringify({ version: 2, entries } satisfies CacheFile);
  }
}
