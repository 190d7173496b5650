/**
 * `slivingdoc gc`: remove orphaned packs — uploads of commits that lost the
 * race or crashed before publishing, and packs compaction replaced — without
 * ever removing a pack that a manifest which can still be accepted names.
 *
 * ## The hazard
 *
 * A writer uploads its pack P, then stalls (a suspended laptop, a long GC
 * pause, a partitioned network) before its conditional write of `current`.
 * gc sees P listed by no manifest and old enough, and deletes it. The writer
 * wakes and sends its conditional write, which names P. If `current` has not
 * changed meanwhile — a quiet notebook — the write succeeds, and from then
 * on every pull fails with PACK_INVALID. A grace period alone cannot close
 * this: however long it is, the stall can be longer, and checking "does my
 * pack still exist?" before the write leaves the same gap between the check
 * and the write.
 *
 * ## The protocol that closes it: fence, then delete
 *
 * Every writer publishes only with a compare-and-swap on the ETag of the
 * `current` it read, and uploads the packs it adds *after* that read. So gc:
 *
 * 1. lists `packs/`, and reads `current` (manifest M, ETag E);
 * 2. picks the candidates: packs M does not name, older than the grace period;
 * 3. **fences**: rewrites `current` with M's exact content and a fresh
 *    publication id, conditional on E (a new body, so a new ETag);
 * 4. only if the fence landed, deletes the candidates.
 *
 * After the fence, no manifest that can still be accepted names a candidate:
 * - a writer that read `current` before the fence (E or older) loses its
 *   conditional write — the stalled writer above wakes, loses, re-reads, and
 *   its next attempt uploads again and publishes a pack that exists;
 * - a writer that reads `current` after the fence carries over only packs
 *   the fenced manifest names (not candidates), and adds packs it uploads
 *   after that read — created after gc's listing, so not candidates either;
 * - a publication that landed between gc's read and its fence makes the
 *   fence lose, and gc deletes nothing (and tries again from the listing).
 *
 * The one way around the fence is an upload answered "already exists":
 * content addressing makes a new upload of identical bytes a no-op, so a
 * writer could name an old orphan that gc is deleting. Compaction packs
 * carry a random nonce object for this reason (compact.ts), and so do the
 * packs of blobs that lead a publication split by size (publish/write.ts),
 * which hold no commit. Commit packs are
 * unique in practice because the commit object carries its time in seconds:
 * bytes equal to a candidate's would need a commit made at the same second
 * as one uploaded more than the grace period ago. (A nonce in commit packs
 * would remove the dependence on the clock; see docs/performance.md.)
 *
 * ## Why there is still a grace period
 *
 * The fence makes deletion safe; the grace period makes it polite. A writer
 * between its upload and its conditional write would lose its attempt to
 * the fence (and retry with backoff); sparing young packs spares it that,
 * and, with the commit time above, rules out identical bytes. It is an hour
 * by default, far beyond any commit's upload-to-publish time.
 *
 * ## Readers
 *
 * A pull holding a manifest from before a compaction may find a replaced
 * pack gone. That is not corruption: `current` has moved on. Readers must
 * re-read `current` when a listed pack is missing and start over when its
 * ETag changed, reporting PACK_INVALID only when it did not (the integration
 * note in docs/performance.md).
 *
 * With no `current` at all gc deletes nothing: the first writer publishes
 * create-only, which no fence can stop, so its pack must stay.
 *
 * ## A store that went backwards
 *
 * A store put back to an older `current` (or begun again after `current`
 * was deleted) still holds the packs of what it lost, and no manifest names
 * them. gc looks for them among its candidates before the fence: it refuses
 * when they show the store went backwards, and keeps those it cannot tell
 * from a commit in flight and those holding what a checkout under its
 * private root was brought to (lost-generations.ts).
 */
import type { RandomSource } from "../contract/clock.ts";
import { DomainError } from "../contract/errors.ts";
import type { ObjectStore } from "../store/object-store.ts";
import type { EngineDeps } from "./engine.ts";
import { readManifest, rewriteCurrent } from "./publish/accepted-state.ts";
import { PROPOSALS_PREFIX } from "./publish/combine.ts";
import { checkoutBaselines, type GcLocal, lostGenerations } from "./lost-generations.ts";
import type { Manifest, PackDescriptor } from "./publish/manifest.ts";

export const DEFAULT_GRACE_MS = 60 * 60 * 1000;
const PACK_KEY = /^packs\/[0-9a-f]{64}\.pack$/;

/** What gc needs of the engine's dependencies: the store, the clock packs' ages are judged by, and temporary names. */
export interface GcDeps extends Pick<EngineDeps, "store" | "now" | "randomId"> {
  /**
   * Where gc reads the retained history and finds the checkouts it knows of,
   * to tell packs of generations the store lost (lost-generations.ts);
   * without it, a throwaway cache and no checkouts.
   */
  local?: GcLocal;
  /**
   * Compaction to publish with the fence (compact.ts): given the manifest gc
   * read, the pack list to publish instead, or null to keep it. Its new pack
   * is uploaded after gc's listing, so it is never a candidate; the packs it
   * replaces are named by the manifest gc read, so they are not either —
   * a later run removes them once they are past the grace period.
   */
  compact?: (manifest: Manifest) => Promise<PackDescriptor[] | null>;
  /** Test hook: called after the candidates are chosen, before the fence. */
  beforeFence?: () => Promise<void> | void;
}

export interface GcInput {
  /** Unlisted packs younger than this are kept (default one hour). */
  graceMs?: number;
  /** Report what would be deleted; write and delete nothing. */
  dryRun?: boolean;
  /** Rounds of list–read–fence when a publication keeps winning over the fence (default 3). */
  attempts?: number;
  /** Delete packs of generations the store lost too: an operator decided that the store as it is stands. */
  deleteLost?: boolean;
}

export interface GcReport {
  /** Generation of the manifest gc kept; null when there is no notebook. */
  generation: number | null;
  /** Packs the manifest names. */
  referenced: number;
  /** Unlisted packs spared because they are younger than the grace period. */
  young: string[];
  /**
   * Unlisted packs spared because they hold a commit built on the accepted
   * head: a commit in flight or one that died before its publication — or a
   * generation the store lost, which gc cannot tell (lost-generations.ts).
   */
  onHead: string[];
  /**
   * Unlisted packs spared because they hold what a checkout under gc's
   * private root (live or set aside) was brought to, which the retained
   * history does not hold: a generation the store lost, however far it
   * moved on since (lost-generations.ts).
   */
  checkoutBaselines: string[];
  /** Deleted packs (dry run: would be deleted). */
  deleted: string[];
  /** Packs listed before and after a compaction published with the fence. */
  compacted?: { from: number; to: number };
  /** Why nothing was deleted, when nothing was. */
  reason?: "no notebook" | "nothing to delete" | "busy" | "dry run";
  /** Proposals (combine.ts) older than the grace period, deleted (dry run: would be). */
  proposals?: string[];
}

export async function collectGarbage(deps: GcDeps, input: GcInput): Promise<GcReport> {
  const graceMs = input.graceMs ?? DEFAULT_GRACE_MS;
  if (!(graceMs >= 0)) throw new RangeError("graceMs must not be negative");
  const report = await collectPacks(deps, input, graceMs);
  const proposals = await collectProposals(deps, input, graceMs);
  return proposals.length > 0 ? { ...report, proposals } : report;
}

/**
 * Proposals left behind (combine.ts) — by a writer that died, or whose
 * deletion failed — once older than the grace period. No fence is needed:
 * deleting one is what withdrawing it starts with, and whoever published it
 * meanwhile listed it in `combined`, where its checkout's next call looks.
 */
async function collectProposals(deps: GcDeps, input: GcInput, graceMs: number): Promise<string[]> {
  const at = deps.now().getTime();
  let listed;
  try {
    listed = await deps.store.list(PROPOSALS_PREFIX);
  } catch {
    return []; // the packs were collected; proposals wait for the next run
  }
  const old = listed.filter((o) => at - o.modified.getTime() > graceMs).map((o) => o.key);
  if (!input.dryRun) await Promise.all(old.map((key) => deps.store.delete(key).catch(() => {})));
  return old;
}

async function collectPacks(deps: GcDeps, input: GcInput, graceMs: number): Promise<GcReport> {
  const { store, now } = deps;
  const attempts = input.attempts ?? 3;

  let last: GcReport | null = null;
  for (let attempt = 0; attempt < attempts; attempt++) {
    // Listing first, then `current`: a pack uploaded after the listing is
    // never a candidate, whatever the manifest read next says.
    let listed;
    try {
      listed = (await store.list("packs/")).filter((o) => PACK_KEY.test(o.key));
    } catch (cause) {
      // No reason of errors.md names a failed listing; INTERNAL is the table's
      // fallback (MANIFEST_READ means that `current` could not be read).
      throw new DomainError("INTERNAL", "The store's packs could not be listed; nothing was deleted.", { cause });
    }
    // Before `current`: a checkout cannot have seen more than the manifest read after it.
    const baselines = input.deleteLost === true ? [] : checkoutBaselines(deps.local);
    // Strict, fails closed: an invalid manifest throws MANIFEST_INVALID and nothing is deleted.
    const { manifest, etag } = await readManifest(store);
    if (manifest === null || etag === null) return { generation: null, referenced: 0, young: [], onHead: [], checkoutBaselines: [], deleted: [], reason: "no notebook" };
    // History packs are referenced too: only a compaction drops them from the list.
    const referenced = new Set([...manifest.packs, ...(manifest.history ?? [])].map((p) => p.key));
    const at = now().getTime();
    const unlisted = listed.filter((o) => !referenced.has(o.key));
    // A modification time in the future (clock skew) counts as young.
    const aged = unlisted.filter((o) => at - o.modified.getTime() > graceMs).map((o) => o.key);
    const young = unlisted.filter((o) => !aged.includes(o.key)).map((o) => o.key);
    // Never the packs of generations the store lost, should it have gone backwards.
    const kept = input.deleteLost === true ? null : await lostGenerations(deps, manifest, aged, baselines);
    const old = aged.filter((key) => !(kept?.onHead.has(key) || kept?.checkoutBaselines.has(key)));
    const report: GcReport = {
      generation: manifest.generation,
      referenced: referenced.size,
      young,
      onHead: [...(kept?.onHead ?? [])],
      checkoutBaselines: [...(kept?.checkoutBaselines ?? [])],
      deleted: [],
    };
    if (input.dryRun) return { ...report, deleted: old, reason: "dry run" };
    const packs = (await deps.compact?.(manifest)) ?? null;
    if (packs !== null) report.compacted = { from: manifest.packs.length, to: packs.length };
    if (old.length === 0 && packs === null) return { ...report, reason: "nothing to delete" };
    await deps.beforeFence?.();
    if (!(await fence(store, manifest, etag, deps.randomId, packs))) {
      last = { ...report, reason: "busy" };
      continue;
    }
    for (let i = 0; i < old.length; i += 16) {
      await Promise.all(old.slice(i, i + 16).map((key) => store.delete(key)));
    }
    return { ...report, deleted: old };
  }
  return last!;
}

/**
 * Rewrite `current` with the same content and a fresh publication id (and
 * the compacted pack list, if any), conditional on the ETag read; true once
 * it is proven to have landed. Generation and head are unchanged: for
 * readers nothing happened.
 */
async function fence(store: ObjectStore, manifest: Manifest, etag: string, randomId: RandomSource["randomId"], packs: PackDescriptor[] | null): Promise<boolean> {
  let fenced;
  try {
    fenced = await rewriteCurrent(store, manifest, etag, randomId, packs === null ? null : { packs });
  } catch (cause) {
    throw new DomainError("MANIFEST_WRITE", "gc could not fence the manifest; nothing was deleted.", { cause });
  }
  // Lost: a publication landed after our read. It is read afresh next round.
  if (fenced.written) return true;
  // Lost or unknown: only our publication id in `current` proves the fence.
  try {
    const now = await readManifest(store);
    return now.manifest?.publication === fenced.publication;
  } catch {
    return false;
  }
}
