/**
 * Compacting ahead: a server whose commit brought the store's pack list to
 * the threshold (publish/compact-ahead.ts `markIfDue`) builds the
 * compaction once the call has answered, while its agent thinks, and
 * publishes it with a rewrite of `current` that changes nothing a reader
 * sees — the same generation and head, as gc's fence does
 * (docs/storage-protocol.md, "Compacting ahead"). The commits that follow
 * find a short list and never compact in their turn.
 *
 * It runs under the checkout's lock, taken only if free (tryLock), like a
 * look's import (fetch-ahead.ts): it reads the checkout's object cache,
 * which holds every pack of the state the commit published, and imports
 * the base into it. On a store that orders its writers (the embedded
 * store) the rewrite takes a turn like a commit's, so it races no commit;
 * on S3 it is sent on the ETag the commit left, and re-read if it lost.
 */
import { join } from "node:path";
import type { Clock, RandomSource } from "../contract/clock.ts";
import type { ObjectStore } from "../store/object-store.ts";
import { type CheckoutMemory } from "./checkout/deps.ts";
import { tryLock } from "./checkout/lock.ts";
import type { ProcessIdentity } from "./checkout/lock.ts";
import { pulledObjectCache } from "./checkout/registry.ts";
import { ObjectCache } from "./git/object-cache.ts";
import { type AcceptedMemory, type ManifestRead, readManifest, rememberAccepted } from "./publish/accepted-state.ts";
import { type CompactionPolicy, compactPacks } from "./publish/compact.ts";
import { AHEAD_MAX_AGE_MS, aheadAt, type CompactAheadMemory, rewriteCompacted } from "./publish/compact-ahead.ts";

/** What one compaction ahead did: published it, found none due, gave way to a call, or found `current` moved past what it had built. */
export type CompactedAhead = "compacted" | "not due" | "busy" | "not a checkout" | "moved on";

export interface CompactAheadDeps extends Clock, RandomSource {
  storeId: string;
  privateRoot: string;
  self: ProcessIdentity;
  memory: Pick<CheckoutMemory, "objects"> & AcceptedMemory & CompactAheadMemory;
  compaction?: Partial<CompactionPolicy> | false;
}

/** Whether a commit of this process made a compaction of `storeId` due (then `compactAhead` has work). */
export function compactionDue(memory: CompactAheadMemory, storeId: string): boolean {
  return memory.compactionsDue?.has(storeId) === true;
}

/**
 * Build and publish the compaction due on the checkout at `dir`'s store.
 * `store`: as the server may use it between calls, bounded by a deadline
 * (store/deadline.ts). A store failure is thrown, and the compaction is
 * not tried again: the list grows, and a commit past the bound compacts
 * in its turn, as without compacting ahead.
 */
export async function compactAhead(deps: CompactAheadDeps, store: ObjectStore, dir: string): Promise<CompactedAhead> {
  const { memory, storeId } = deps;
  if (deps.compaction === false || !memory.compactionsDue?.delete(storeId)) return "not due";
  // The state our commit left (publish/landing.ts): read nothing to learn it.
  const accepted = memory.acceptedStates.get(storeId);
  if (accepted?.manifest == null || accepted.etag === null) return "not due";
  const gitdir = pulledObjectCache(deps.privateRoot, storeId, dir);
  if (gitdir === null) return "not a checkout";
  const lock = tryLock(join(gitdir, "..", "lock"), deps.self, deps);
  if (lock === null) {
    // A call holds the checkout: it is tried again when a call next ends.
    memory.compactionsDue.add(storeId);
    return "busy";
  }
  const from = accepted.manifest;
  const git = await ObjectCache.open(gitdir, memory.objects, deps.randomId);
  try {
    // Behind the state it remembers (a cache rebuilt since): the commits compact in their turn.
    if (!from.packs.every((p) => git.hasPack(p.sha256))) return "not due";
    const started = deps.monotonic();
    const policy = { ...deps.compaction, maxPacks: aheadAt(deps.compaction) - 1 };
    const compacted = await compactPacks({ store, git, head: from.head, packs: from.packs, policy, history: from.history ?? [], now: deps.now(), randomId: deps.randomId });
    if (compacted === null) return "not due";
    const turn = store.queue ? await store.queue.enter().catch(() => null) : null;
    try {
      // In a turn, `current` as it is now (a local read); else the ETag our commit left, tried as it is.
      const read: ManifestRead = turn !== null ? await readManifest({ ...store, get: (key) => turn.get(key) }) : { manifest: from, etag: accepted.etag };
      const rewritten = await rewriteCompacted(store, read, from, compacted, {
        randomId: deps.randomId,
        monotonic: deps.monotonic,
        deadline: started + AHEAD_MAX_AGE_MS,
        committed: () => turn?.end(),
      });
      if (!rewritten.published) return "moved on";
      // The next commit builds on the compacted list without reading it (a guess), where the head is still ours.
      if (rewritten.etag !== null && rewritten.manifest.head === accepted.head) rememberAccepted(memory, storeId, { ...accepted, manifest: rewritten.manifest, etag: rewritten.etag });
      return "compacted";
    } finally {
      turn?.end();
    }
  } finally {
    git.close();
    lock.release();
  }
}
