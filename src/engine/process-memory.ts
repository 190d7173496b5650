/**
 * The process memory: what a process keeps between calls
 * (docs/performance.md, "The process memory"), in one object with every
 * bound in one place. A surface makes one per process and passes it in
 * EngineDeps, so a server's calls share it; a test makes a fresh one for a
 * fresh world. Each thing remembered is checked before use and only ever a
 * speed-up: a process that starts empty gets the same answers.
 */
import type { RandomSource } from "../contract/clock.ts";
import type { AcceptedState } from "./publish/accepted-state.ts";
import type { Contention } from "./publish/contention.ts";
import { ObjectMemory } from "./git/object-memory.ts";
import { RecentMap } from "./memory/recent-map.ts";
import { StatCacheMemory } from "./checkout/stat-cache-memory.ts";
import { WatcherMemory } from "./checkout/watcher.ts";
import type { RegistryMemory } from "./checkout/registry.ts";
import type { AcceptedMemory } from "./publish/accepted-state.ts";
import type { ContentionMemory } from "./publish/contention.ts";
import type { CompactAheadMemory } from "./publish/compact-ahead.ts";

export const MEMORY_BOUNDS = {
  /** Checkouts whose stat cache is remembered: as many as a server is likely to serve at once. */
  statCaches: 16,
  /** Object caches whose pack reader stays open (their pack files stay open too). */
  packReaders: 8,
  /** Flat trees read or built, by object cache and tree id. */
  trees: 8,
  /** Commits' trees, by object cache and commit id. */
  commits: 8,
  /** Stores whose accepted state last seen is remembered. */
  acceptedStates: 8,
  /** Stores whose races this process remembers (contention.ts). */
  contention: 8,
  /** Checkouts a server watches (checkout/watcher.ts): each holds an inotify watch per directory. */
  watchers: 16,
} as const;

/** Every part's memory in one object: it is each part's own (AcceptedMemory, ContentionMemory, RegistryMemory, ObjectMemory and StatCacheMemory). */
export class ProcessMemory implements AcceptedMemory, ContentionMemory, RegistryMemory, CompactAheadMemory {
  /** The stat cache of each checkout, written back when evicted or flushed. */
  readonly statCaches: StatCacheMemory;
  /** Pack readers, flat trees and commit trees of the object caches. */
  readonly objects = new ObjectMemory({ readers: MEMORY_BOUNDS.packReaders, trees: MEMORY_BOUNDS.trees, commits: MEMORY_BOUNDS.commits });
  /** The accepted state last seen of each store, by store identity (accepted-state.ts). */
  readonly acceptedStates: AcceptedMemory["acceptedStates"] = new RecentMap(MEMORY_BOUNDS.acceptedStates);
  /** What this process saw of the races on each store, by store identity (contention.ts). */
  readonly contention: ContentionMemory["contention"] = new RecentMap(MEMORY_BOUNDS.contention);
  /**
   * The checkout directory, store and directory identity each registered
   * state file named when last parsed, with the file's identity then
   * (checkout/registry.ts). One entry per checkout under the private root:
   * no bound beyond theirs.
   */
  readonly checkouts: RegistryMemory["checkouts"] = new Map();
  /**
   * A server's watchers on its checkouts, so a warm call scans only what
   * changed; null in a process that answers one call (a CLI call), where
   * setting up the watches would cost more than the scan.
   */
  readonly watchers: WatcherMemory | null;
  /**
   * The stores a commit of this server made a compaction due on, which it
   * builds between calls (compact-ahead.ts); null in a process that
   * answers one call, whose commits compact in their turn.
   */
  readonly compactionsDue: Set<string> | null;

  /**
   * `random` names the temporary files the stat caches are written through:
   * the process's random source (EngineDeps). `watch` and `compactAhead`: a server's memory.
   */
  constructor(random: Pick<RandomSource, "randomId">, options: { watch?: boolean; compactAhead?: boolean } = {}) {
    this.statCaches = new StatCacheMemory(MEMORY_BOUNDS.statCaches, random.randomId);
    this.watchers = options.watch === true ? new WatcherMemory(MEMORY_BOUNDS.watchers) : null;
    this.compactionsDue = options.compactAhead === true ? new Set() : null;
  }

  /** Before the process ends: write out what only memory holds (stat caches). */
  flush(): void {
    this.statCaches.flush();
  }
}
