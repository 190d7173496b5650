/**
 * Compacting ahead (docs/storage-protocol.md, "Compacting ahead"): a server
 * compacts the pack list between its agent's calls, before any commit's
 * list grows past the bound, so that no commit has to compact inside its
 * turn (where it cost 11-19 ms of a 10-30 ms commit: docs/performance.md,
 * "The open loop's tail, commit by commit").
 *
 * This file holds the two ends that belong to the protocol: which commit
 * makes a compaction due, and the rewrite of `current` that publishes a
 * compaction built on an earlier state. The operation that builds it
 * between calls is `src/engine/compact-ahead.ts`.
 */
import type { RandomSource } from "../../contract/clock.ts";
import type { ObjectStore } from "../../store/object-store.ts";
import { type ManifestRead, readManifest, rewriteCurrent } from "./accepted-state.ts";
import { type CompactionPolicy, type CompactionResult, DEFAULT_COMPACTION } from "./compact.ts";
import type { Manifest } from "./manifest.ts";

/**
 * The stores on which a commit of this process brought the pack list to
 * the threshold (`aheadAt`), for the server to compact between calls; null
 * in a process that answers one call and exits (a CLI call), whose commits
 * compact in their turn as before.
 */
export interface CompactAheadMemory {
  readonly compactionsDue: Set<string> | null;
}

/**
 * Packs left between the threshold and the bound: publications that can
 * land while a compaction ahead is built and written, before a commit
 * would have to compact in its own turn.
 */
const HEADROOM = 4;

/**
 * The list length from which a compaction is built ahead: HEADROOM below
 * the bound, and always two above the packs kept (so that it replaces at
 * least two).
 */
export function aheadAt(policy: Partial<CompactionPolicy> = {}): number {
  const { maxPacks, keepRecent } = { ...DEFAULT_COMPACTION, ...policy };
  return Math.max(keepRecent + 2, maxPacks - HEADROOM);
}

/**
 * After a commit of ours landed with `manifest`, having added `added`
 * packs to the list: the compaction is due when this very publication
 * brought the list to the threshold. Only the writer that crossed it
 * compacts ahead, so sixteen servers do not build sixteen bases of the
 * same state; should it never publish one (it stopped, it lost), the list
 * goes on growing and a commit past the bound compacts in its turn.
 */
export function markIfDue(memory: CompactAheadMemory, storeId: string, manifest: Manifest, added: number, policy: Partial<CompactionPolicy> | false): void {
  if (memory.compactionsDue === null || policy === false) return;
  const at = aheadAt(policy);
  const length = manifest.packs.length;
  if (length >= at && length - added < at) memory.compactionsDue.add(storeId);
}

/** How a compaction built ahead ended: published, or not (`current` moved past what it replaces, or its proof could not be made). */
export type Rewritten = { published: true; manifest: Manifest; etag: string | null } | { published: false };

/**
 * The longest a compaction's packs may wait between their upload and the
 * write that names them. gc deletes an unlisted pack only once older than
 * its grace period (an hour by default) and only after a fence that a
 * write built on an earlier read loses (gc.ts); a write sent on a read made
 * later, as a retry here is, relies on the packs being young instead, so
 * the wait is kept far below any grace period.
 */
export const AHEAD_MAX_AGE_MS = 60_000;

/**
 * Publish `compacted`, built from `from` (its pack list and history), by
 * rewriting `current` as `read` holds it: the same generation, head and
 * combined list, a new publication id, the compacted lists. It fits any
 * later `current` that still lists, first, the packs it replaces and the
 * same history packs — every pack published since is kept after the base
 * — so a write that lost is read back and sent again, up to `tries`
 * times; once `current` no longer fits (another writer compacted), or
 * `deadline` (monotonic ms, `AHEAD_MAX_AGE_MS` after the packs were
 * uploaded) has passed, it publishes nothing. Nothing is ever deleted here:
 * the replaced packs stay in the store until gc.
 */
export async function rewriteCompacted(
  store: ObjectStore,
  read: ManifestRead,
  from: Manifest,
  compacted: CompactionResult,
  deps: Pick<RandomSource, "randomId"> & { monotonic(): number; deadline: number; tries?: number; committed?: () => void },
): Promise<Rewritten> {
  const replaced = from.packs.length - (compacted.packs.length - (compacted.base === null ? 0 : 1));
  let { manifest, etag } = read;
  for (let tryNo = 0; tryNo < (deps.tries ?? 3); tryNo++) {
    if (manifest === null || etag === null || !fits(manifest, from, replaced) || deps.monotonic() > deps.deadline) return { published: false };
    // The replaced packs swapped for the base; every pack after them kept, in order.
    const packs = [...(compacted.base === null ? [] : [compacted.base]), ...manifest.packs.slice(replaced)];
    const written = await rewriteCurrent(store, manifest, etag, deps.randomId, { packs, history: compacted.history }, deps.committed);
    if (written.written) return { published: true, manifest: written.manifest, etag: written.etag };
    // Lost or unknown: only our publication id in `current` proves it landed; else `current` as read is what to build on.
    ({ manifest, etag } = await readManifest(store));
    if (manifest?.publication === written.publication) return { published: true, manifest: written.manifest, etag };
  }
  return { published: false };
}

/** Whether `current` still lists first the packs the compaction replaces, and the history packs it was built with. */
function fits(current: Manifest, from: Manifest, replaced: number): boolean {
  if (current.packs.length < replaced) return false;
  for (let i = 0; i < replaced; i++) if (current.packs[i]!.key !== from.packs[i]!.key) return false;
  const history = (m: Manifest) => (m.history ?? []).map((h) => h.key).join(" ");
  return history(current) === history(from);
}
