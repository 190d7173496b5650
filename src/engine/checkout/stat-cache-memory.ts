/**
 * The process memory of the stat caches (docs/performance.md, "The process
 * memory"), by file, with the identity of the file at that time: any other
 * writer (a CLI call while a server runs) replaces the file, which changes
 * its inode and times, so a remembered copy is used only while the file on
 * disk is the very one it came from. Changes held in memory only are
 * written back when the least recent cache is evicted, or when the process
 * ends (flush).
 */
import type { RandomSource } from "../../contract/clock.ts";
import { writeAtomic } from "./atomic-file.ts";
import { fileIdentity } from "../memory/file-identity.ts";
import { RecentMap } from "../memory/recent-map.ts";
import { StatCache } from "./stat-cache.ts";

interface Remembered {
  identity: string;
  cache: StatCache;
  /** Holds changes the file on disk does not (rememberUnsaved). */
  unsaved: boolean;
}

export class StatCacheMemory {
  /** The least recent beyond the bound are written out and dropped. */
  private readonly remembered: RecentMap<string, Remembered>;

  /** `randomId` names the temporary files the caches are written through (atomic-file.ts). */
  constructor(
    bound: number,
    private readonly randomId: RandomSource["randomId"],
  ) {
    this.remembered = new RecentMap(bound, (file, old) => {
      writeOut(file, old, randomId);
      return true;
    });
  }

  /** The stat cache in `file`; empty when absent or unreadable. */
  load(file: string): StatCache {
    const identity = fileIdentity(file);
    if (identity === null) return StatCache.empty();
    // A server answers many calls on one checkout: parsing the cache of
    // 10,000 files again each time would cost more than the scan it saves.
    const remembered = this.remembered.get(file);
    if (remembered && remembered.identity === identity) {
      this.remembered.set(file, remembered);
      return remembered.cache.clone();
    }
    const cache = StatCache.load(file);
    this.remembered.set(file, { identity, cache: cache.clone(), unsaved: false });
    return cache;
  }

  /**
   * Remember `cache` for this process's next calls without writing it: for
   * changes that only make more entries trusted, where the file on disk
   * stays right for any other process. Written when there is no file yet.
   */
  rememberUnsaved(file: string, cache: StatCache): void {
    const identity = fileIdentity(file);
    if (identity === null) this.save(file, cache);
    else this.remembered.set(file, { identity, cache: cache.clone(), unsaved: true });
  }

  save(file: string, cache: StatCache): void {
    // Not fsync'ed: it is only a speed-up, and a torn file does not parse.
    writeAtomic(file, cache.serialize(), this.randomId, false);
    const identity = fileIdentity(file);
    if (identity === null) this.remembered.delete(file);
    else this.remembered.set(file, { identity, cache: cache.clone(), unsaved: false });
  }

  /** The file was removed: what was remembered of it is no longer true. */
  forget(file: string): void {
    this.remembered.delete(file);
  }

  /**
   * Write out what `rememberUnsaved` held in memory only, for the processes
   * that come next: the CLI does this before it exits, a server when it
   * stops.
   */
  flush(): void {
    for (const [file, remembered] of this.remembered.entries()) writeOut(file, remembered, this.randomId);
  }
}

/** Write a remembered cache's unsaved changes, unless another process replaced the file since (it knows at least as much). */
function writeOut(file: string, remembered: Remembered, randomId: RandomSource["randomId"]): void {
  if (!remembered.unsaved || fileIdentity(file) !== remembered.identity) return;
  try {
    writeAtomic(file, remembered.cache.serialize(), randomId, false);
    remembered.unsaved = false;
    remembered.identity = fileIdentity(file) ?? "";
  } catch {
    /* only a speed-up: the next process reads those files again */
  }
}
