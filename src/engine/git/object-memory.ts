/**
 * The process memory of the object caches (docs/performance.md, "The process
 * memory"): one pack reader per cache, and the flat
 * trees and commit trees read or built lately. Git objects never change,
 * so a remembered tree stays right for as long as the cache holds its
 * objects; the object cache forgets a cache's trees whenever its reader
 * starts over or its packs are dropped.
 */
import { RecentMap } from "../memory/recent-map.ts";
import type { ReadTree } from "./trees.ts";
import { PackReader } from "./pack-reader.ts";
import type { RecordRead } from "./pack-import.ts";
import { HeldPacks } from "./held-packs.ts";

/** The most bytes of packs downloaded ahead that the process holds (HeldPacks). */
export const HELD_PACK_BYTES = 8 * 2 ** 20;

export interface SharedReader {
  gitdir: string;
  reader: PackReader;
  /** Object caches using it now: an evicted reader is closed when the last one ends. */
  users: number;
}

export class ObjectMemory {
  private readonly readers: RecentMap<string, SharedReader>;
  /** By `${gitdir}\0${tree id}`. */
  readonly trees: RecentMap<string, ReadTree>;
  /** Commit → its tree, by `${gitdir}\0${commit id}`. */
  readonly commits: RecentMap<string, string>;
  /** The record of packs imported together (pack-import.ts ImportedPacks) as read, by gitdir. */
  readonly united: RecentMap<string, RecordRead>;
  /** Packs downloaded ahead of the calls that need them (engine/fetch-ahead.ts), for any cache. */
  readonly held = new HeldPacks(HELD_PACK_BYTES);

  constructor(bounds: { readers: number; trees: number; commits: number }) {
    // A reader in use stays; an evicted one is closed now, or by its last user (releaseReader).
    this.readers = new RecentMap(bounds.readers, (_, old) => {
      if (old.users > 0) return false;
      old.reader.close();
      return true;
    });
    this.trees = new RecentMap(bounds.trees);
    this.commits = new RecentMap(bounds.commits);
    this.united = new RecentMap(bounds.readers);
  }

  acquireReader(gitdir: string): SharedReader {
    const shared = this.readers.get(gitdir) ?? { gitdir, reader: new PackReader(gitdir), users: 0 };
    shared.users++;
    this.readers.set(gitdir, shared);
    return shared;
  }

  releaseReader(shared: SharedReader): void {
    shared.users--;
    if (shared.users === 0 && this.readers.get(shared.gitdir) !== shared) shared.reader.close();
  }

  /** Forget the trees and commits remembered of the cache at `gitdir`. */
  forgetTrees(gitdir: string): void {
    const mine = (key: string) => key.startsWith(`${gitdir}\0`);
    this.trees.deleteWhere(mine);
    this.commits.deleteWhere(mine);
  }
}
