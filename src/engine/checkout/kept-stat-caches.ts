/**
 * The stat caches a process keeps between calls (docs/performance.md, "What
 * a process keeps between calls"), by file, with the identity of the file
 * at that time: any other writer (a CLI call while a server runs) replaces
 * the file, which changes its inode and times, so a kept copy is used only
 * while the file on disk is the very one it came from. Changes kept in
 * memory only are written back when the least recent cache is evicted, or
 * when the process ends (flush).
 */
import type { RandomSource } from "../../contract/clock.ts";
import { writeAtomic } from "./atomic-file.ts";
import { fileIdentity, RecentMap } from "../memory/kept.ts";
import { StatCache } from "./stat-cache.ts";

interface KeptStatCache {
  identity: string;
  cache: StatCache;
  /** Holds changes the file on disk does not (keepUnsaved). */
  unsaved: boolean;
}

export class KeptStatCaches {
  /** The least recent beyond the bound are written out and dropped. */
  private readonly kept: RecentMap<string, KeptStatCache>;

  /** `randomId` names the temporary files the caches are written through (atomic-file.ts). */
  constructor(
    bound: number,
    private readonly randomId: RandomSource["randomId"],
  ) {
    this.kept = new RecentMap(bound, (file, old) => {
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
    const kept = this.kept.get(file);
    if (kept && kept.identity === identity) {
      this.kept.set(file, kept);
      return kept.cache.clone();
    }
    const cache = StatCache.load(file);
    this.kept.set(file, { identity, cache: cache.clone(), unsaved: false });
    return cache;
  }

  /**
   * Keep `cache` for this process's next calls without writing it: for
   * changes that only make more entries trusted, where the file on disk
   * stays right for any other process. Written when there is no file yet.
   */
  keepUnsaved(file: string, cache: StatCache): void {
    const identity = fileIdentity(file);
    if (identity === null) this.save(file, cache);
    else this.kept.set(file, { identity, cache: cache.clone(), unsaved: true });
  }

  save(file: string, cache: StatCache): void {
    // Not fsync'ed: it is only a speed-up, and a torn file does not parse.
    writeAtomic(file, cache.serialize(), this.randomId, false);
    const identity = fileIdentity(file);
    if (identity === null) this.kept.delete(file);
    else this.kept.set(file, { identity, cache: cache.clone(), unsaved: false });
  }

  /** The file was removed: what was kept of it is no longer true. */
  forget(file: string): void {
    this.kept.delete(file);
  }

  /**
   * Write out what `keepUnsaved` kept in memory only, for the processes that
   * come next: the CLI does this before it exits, a server when it stops.
   */
  flush(): void {
    for (const [file, kept] of this.kept.entries()) writeOut(file, kept, this.randomId);
  }
}

/** Write a kept cache's unsaved changes, unless another process replaced the file since (it knows at least as much). */
function writeOut(file: string, kept: KeptStatCache, randomId: RandomSource["randomId"]): void {
  if (!kept.unsaved || fileIdentity(file) !== kept.identity) return;
  try {
    writeAtomic(file, kept.cache.serialize(), randomId, false);
    kept.unsaved = false;
    kept.identity = fileIdentity(file) ?? "";
  } catch {
    /* only a speed-up: the next process reads those files again */
  }
}
