/**
 * Compaction: keep the number of packs a manifest lists — and so the number
 * of downloads a cold pull makes — bounded, whatever the history's length.
 *
 * When a manifest would list more than `maxPacks` packs, the newest
 * `keepRecent` packs stay as they are and every other pack is replaced by one
 * new "base" pack holding every object reachable from the head (commits,
 * trees, blobs of the newest `history` commits: 32 by default, or the whole
 * history), minus the objects the kept packs already hold. The base is
 * uploaded create-only under its content address, like every pack; the
 * caller then publishes `[base, ...kept]` with its usual conditional write.
 *
 * Designed to be called by a commit between its upload and its conditional
 * write (packs = the accepted packs plus its own new pack, head = its new
 * commit), or on an accepted state: by a server between calls
 * (compact-ahead.ts), or by `slivingdoc gc`. Either way:
 *
 * - Nothing reachable is lost: by induction every accepted tree is covered
 *   by the previous tree plus the pack published with it, so the head's
 *   objects are in the base or in a kept pack. Objects no longer listed stay
 *   in the store until gc removes the replaced packs (gc.ts), so a reader
 *   still holding the previous manifest can finish.
 * - Why keep the newest packs: a committer whose conditional write had an
 *   unknown outcome proves it landed by finding its pack in `current`
 *   (write.ts); keeping the newest packs keeps that proof working for the
 *   last `keepRecent` publications. Warm checkouts also hold those already.
 * - Why the base carries a nonce object: packs are content-addressed, and a
 *   base built again from the same state would have the same bytes — and so
 *   the same key — as an orphan an earlier attempt left behind. An upload
 *   answered "already exists" could then be an old orphan that gc is about
 *   to delete, and a manifest naming it would break every reader (see the
 *   protocol in gc.ts). A random, unreferenced blob makes every base unique,
 *   so its upload must create the key, or the attempt fails.
 * - A losing compaction costs nothing but its upload: the base is an orphan
 *   that gc removes after the grace period.
 */
import type { RandomSource } from "../../contract/clock.ts";
import type { ObjectStore } from "../../store/object-store.ts";
import type { ObjectCache } from "../git/object-cache.ts";
import { decodeCommit, MissingObjectError, objectId } from "../git/objects.ts";
import { packEntry, writeIndexedPack } from "../git/pack.ts";
import { walkTree } from "../git/walk.ts";
import { type HistoryPackDescriptor, type PackDescriptor, packDescriptor } from "./manifest.ts";

export interface CompactionPolicy {
  /** Compact when the pack list is longer than this. */
  maxPacks: number;
  /** The newest packs kept as they are. */
  keepRecent: number;
  /**
   * Commits of history the base keeps, counted from the head ("all": every
   * commit). A shorter history makes a cold pull's bytes independent of the
   * history's length; the oldest kept commit then names a parent that is no
   * longer stored (a shallow boundary, as in `git clone --depth`), which
   * nothing in the engine reads.
   */
  history: number | "all";
  /**
   * How long history is kept beyond the base's commits, in milliseconds (0:
   * not at all, as before history packs). Commits that leave the base and
   * are younger than this go into a *history pack*, listed in the
   * manifest's `history`, which pulls never download (only log, show and
   * export do); a history pack whose newest commit is older than this is
   * dropped from the list (gc then removes it).
   */
  periodMs: number;
}

/** History is kept for 30 days by default (docs/storage-protocol.md, "How much history is kept"). */
export const DEFAULT_HISTORY_PERIOD_MS = 30 * 86_400_000;

/**
 * History is "recent" (docs/decisions/0011-history-kept-by-time.md): the
 * newest 32 commits survive a compaction, so a cold pull's bytes do not grow
 * with the history's length (`long-history` in docs/performance.md: the whole history of
 * 1,000 small commits made a cold pull 1.35× slower than after one commit; 32
 * commits, 1.14×).
 */
export const DEFAULT_COMPACTION: CompactionPolicy = { maxPacks: 32, keepRecent: 8, history: 32, periodMs: DEFAULT_HISTORY_PERIOD_MS };

export interface CompactionResult {
  /** The pack list for the next manifest: the base (if any objects remain for it), then the kept packs. */
  packs: PackDescriptor[];
  /** The new pack, or null when the kept packs already hold every object. */
  base: PackDescriptor | null;
  /** The history pack list for the next manifest, oldest first (empty: none, a format 1 manifest). */
  history: HistoryPackDescriptor[];
  /** The packs no longer listed (gc removes them after the grace period), history packs included. */
  replaced: PackDescriptor[];
  /** Objects in the base, nonce included. */
  objects: number;
}

export function needsCompaction(packs: readonly PackDescriptor[], policy: Partial<CompactionPolicy> & Pick<CompactionPolicy, "maxPacks"> = DEFAULT_COMPACTION): boolean {
  return packs.length > policy.maxPacks;
}

export interface CompactArgs {
  store: ObjectStore;
  /** The object cache; every listed pack must have been imported into it (a commit's fetch does that). */
  git: ObjectCache;
  /** The commit the next manifest will name as its head. */
  head: string;
  /** The pack list the next manifest would carry without compaction, oldest first. */
  packs: readonly PackDescriptor[];
  policy?: Partial<CompactionPolicy>;
  /** Import the base into the local cache (so this checkout never downloads it). Default true. */
  importLocally?: boolean;
  /** The history packs the accepted manifest lists, oldest first. */
  history?: readonly HistoryPackDescriptor[];
  /** Now, for the history period. */
  now: Date;
  /** Random hex: the nonce that makes each compaction's pack unique (see the header). */
  randomId: RandomSource["randomId"];
}

/**
 * Build, upload and import the base pack; null when the list is within the
 * bound. Throws `MissingObjectError` when the cache lacks an object the
 * head needs, and the store's error when the upload fails; in both cases
 * nothing was published and the caller can publish without compacting.
 */
export async function compactPacks(args: CompactArgs): Promise<CompactionResult | null> {
  const policy = { ...DEFAULT_COMPACTION, ...args.policy };
  if (!Number.isInteger(policy.maxPacks) || policy.maxPacks < 1) throw new RangeError("maxPacks must be a positive integer");
  if (!Number.isInteger(policy.keepRecent) || policy.keepRecent < 0 || policy.keepRecent >= policy.maxPacks) {
    throw new RangeError("keepRecent must be a whole number below maxPacks");
  }
  if (policy.history !== "all" && (!Number.isInteger(policy.history) || policy.history < 1)) {
    throw new RangeError("history must be a positive integer or \"all\"");
  }
  if (!Number.isSafeInteger(policy.periodMs) || policy.periodMs < 0) throw new RangeError("periodMs must be a whole number of milliseconds");
  if (!needsCompaction(args.packs, policy)) return null;

  const kept = policy.keepRecent === 0 ? [] : args.packs.slice(-policy.keepRecent);
  const replaced = args.packs.slice(0, args.packs.length - kept.length);
  const inKept = new Set<string>();
  for (const p of kept) for (const oid of args.git.packObjectIds(p.sha256)) inKept.add(oid);

  const { objects: reachable, frontier } = await reachableObjects(args.git, args.head, policy.history);
  const baseObjects = [...reachable].filter((oid) => !inKept.has(oid));
  const { history, dropped } = await historyPacks(args, policy, replaced, (oid) => reachable.has(oid) || inKept.has(oid), frontier);
  const replacedAll = [...replaced, ...dropped];
  if (baseObjects.length === 0) return { packs: [...kept], base: null, history, replaced: replacedAll, objects: 0 };
  const { descriptor: base, objects, bytes, idx } = await uploadUnique(args, baseObjects);
  if (args.importLocally !== false && !args.git.hasPack(base.sha256)) await args.git.importPack(base.sha256, bytes, idx);
  return { packs: [base, ...kept], base, history, replaced: replacedAll, objects };
}

/**
 * A pack of `oids` plus a nonce (see the header), uploaded create-only; its
 * descriptor and object count. Throws when an object is missing or the key
 * existed.
 */
async function uploadUnique(args: CompactArgs, oids: Iterable<string>): Promise<{ descriptor: PackDescriptor; objects: number; bytes: Uint8Array; idx: Buffer }> {
  // The nonce (see the header): unreferenced, so the next compaction drops it.
  const nonce = Buffer.from(`slivingdoc compaction nonce ${args.randomId(16)}\n`);
  const entries = [{ oid: objectId("blob", nonce), entry: packEntry("blob", nonce) }];
  for (const oid of oids) {
    const entry = await args.git.packEntry(oid);
    if (entry === null) throw new MissingObjectError(`object ${oid} of the history is missing`);
    entries.push({ oid, entry });
  }
  // With the index its writer knows: the base is imported here without inflating it again.
  const { pack: bytes, idx } = writeIndexedPack(entries);
  const descriptor = packDescriptor(bytes);
  const put = await args.store.putIfAbsent(descriptor.key, bytes);
  if (!put.ok) {
    // A unique pack's key cannot exist unless this very request landed
    // twice; either way its age is unknown, so it must not be referenced.
    throw new Error("the compacted pack's key already existed; not publishing it");
  }
  return { descriptor, objects: entries.length, bytes, idx };
}

/** The author time of a commit, in seconds since the epoch; null when it has none. */
function commitSeconds(object: Uint8Array): number | null {
  const text = Buffer.from(object.buffer, object.byteOffset, object.byteLength).toString("latin1");
  const end = text.indexOf("\n\n");
  const m = /^author .* (\d+) [+-]\d{4}$/m.exec(end < 0 ? text : text.slice(0, end));
  return m ? Number(m[1]) : null;
}

/**
 * The history pack list of the next manifest (docs/storage-protocol.md,
 * "History packs"): the accepted one without the packs past the period (a
 * prefix: they are oldest first), plus one new pack holding the commits
 * that leave the base now — from `frontier`, the first commit past the
 * base's window, back through the commits the replaced packs hold, as long
 * as they are younger than the period — with every object they reach that
 * the base and the kept packs do not hold.
 *
 * Why a history pack needs only itself and newer packs: when it is built,
 * every object its commits reach is in it, in the new base or in a kept
 * pack; those are replaced later only by packs built the same way. So
 * dropping the oldest history packs first never breaks a newer one.
 *
 * A history pack that cannot be built (an object missing here, an upload
 * failing) is skipped: those commits leave the retained history, as every
 * commit past the base did before history packs.
 */
async function historyPacks(
  args: CompactArgs,
  policy: CompactionPolicy,
  replaced: readonly PackDescriptor[],
  inBaseOrKept: (oid: string) => boolean,
  frontier: string[],
): Promise<{ history: HistoryPackDescriptor[]; dropped: PackDescriptor[] }> {
  const accepted = args.history ?? [];
  const cutoff = Math.floor((args.now.getTime() - policy.periodMs) / 1000);
  const firstKept = policy.periodMs === 0 ? accepted.length : accepted.findIndex((h) => h.newest >= cutoff);
  const keep = firstKept < 0 ? [] : accepted.slice(firstKept);
  const dropped = accepted.slice(0, firstKept < 0 ? accepted.length : firstKept).map(({ key, size, sha256 }) => ({ key, size, sha256 }));
  if (policy.periodMs === 0 || frontier.length === 0) return { history: keep, dropped };
  try {
    const inReplaced = new Set<string>();
    for (const p of replaced) for (const oid of args.git.packObjectIds(p.sha256)) inReplaced.add(oid);
    const objects: string[] = [];
    const seen = new Set<string>();
    let newest = -1;
    const read = (oid: string) => args.git.find(oid);
    let queue = [...frontier];
    while (queue.length > 0) {
      const next: string[] = [];
      for (const oid of queue) {
        if (seen.has(oid) || !inReplaced.has(oid) || inBaseOrKept(oid)) continue;
        const commit = await read(oid);
        if (commit === null || commit.type !== "commit") continue;
        const seconds = commitSeconds(commit.object);
        if (seconds === null || seconds < cutoff) continue;
        seen.add(oid);
        objects.push(oid);
        newest = Math.max(newest, seconds);
        const { tree, parents } = decodeCommit(commit.object);
        await walkTree(read, tree, {
          tree: (t) => {
            if (seen.has(t) || inBaseOrKept(t)) return false;
            seen.add(t);
            objects.push(t);
            return true;
          },
          entry: (_, blob) => {
            if (seen.has(blob) || inBaseOrKept(blob)) return;
            seen.add(blob);
            objects.push(blob);
          },
        });
        next.push(...parents);
      }
      queue = next;
    }
    if (objects.length === 0) return { history: keep, dropped };
    const { descriptor } = await uploadUnique(args, objects);
    return { history: [...keep, { ...descriptor, newest }], dropped };
  } catch {
    return { history: keep, dropped };
  }
}

/**
 * Every object reachable from `head`: commits (following every parent, to
 * `history` commits deep), their trees and blobs. A parent missing from the
 * cache below the head is a shallow boundary left by an earlier compaction
 * with a shorter history, and ends the walk there; a missing head, tree or
 * blob is an error.
 */
async function reachableObjects(cache: ObjectCache, head: string, history: number | "all"): Promise<{ objects: Set<string>; frontier: string[] }> {
  const objects = new Set<string>();
  const read = (oid: string) => cache.find(oid);
  let frontier = [head];
  for (let depth = 0; frontier.length > 0 && (history === "all" || depth < history); depth++) {
    const next: string[] = [];
    for (const oid of frontier) {
      if (objects.has(oid)) continue;
      const commit = await read(oid);
      if (commit === null) {
        if (depth === 0) throw new MissingObjectError(`head ${oid} missing`);
        continue; // shallow boundary
      }
      if (commit.type !== "commit") throw new MissingObjectError(`${oid} is not a commit`);
      objects.add(oid);
      const { tree, parents } = decodeCommit(commit.object);
      // A tree seen before: its whole subtree was walked.
      await walkTree(read, tree, {
        tree: (t) => {
          if (objects.has(t)) return false;
          objects.add(t);
          return true;
        },
        entry: (_, blob) => objects.add(blob),
      });
      next.push(...parents);
    }
    frontier = next;
  }
  // Blobs are checked when packed: packObjects fails on a missing one.
  // The frontier: the commits just past the window, where history packs begin.
  return { objects, frontier: frontier.filter((oid) => !objects.has(oid)) };
}
