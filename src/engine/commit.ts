/**
 * commit: publish the caller's changes. Merge them with the latest accepted
 * state, upload the new objects as one create-only pack, then replace
 * `current` with one conditional write. A lost race re-reads, re-merges and
 * tries again with jitter, up to the retry bound; the visible files change
 * only once the outcome is known (docs/storage-protocol.md).
 */
import { createHash } from "node:crypto";
import { DomainError, type ErrorFile } from "../contract/errors.ts";
import { validateMessage } from "../contract/message.ts";
import type { OperationOutcome } from "../contract/results.ts";
import { type ObjectStore, StoreError } from "../store/object-store.ts";
import type { Baseline } from "./checkout-state.ts";
import { type AcceptedState, lastAccepted, loadAcceptedState, readManifest, rememberAccepted } from "./accepted-state.ts";
import { conflictError } from "./conflict.ts";
import { refuseProtectedChanges } from "./protect.ts";
import { treeDiffStat } from "./diffstat.ts";
import {
  baselineFilesOrRefuse,
  closeCheckout,
  type EngineDeps,
  localBytes,
  materializeInto,
  type OpenCheckout,
  openCheckout,
  privateStateMissing,
  scanLocal,
} from "./engine.ts";
import type { BuiltTree, FlatTree } from "./git/object-cache.ts";
import { MissingObjectError } from "./git/objects.ts";
import { compactPacks, DEFAULT_COMPACTION, needsCompaction } from "./compact.ts";
import { formatFor, type HistoryPackDescriptor, MANIFEST_KEY, type Manifest, newPublicationId, type PackDescriptor, packKey, serializeManifest } from "./manifest.ts";
import { decodeText } from "./text.ts";
import { mergeTrees, sameTree } from "./tree-merge.ts";
import { findMarkerBlocks } from "./xdiff/index.ts";

/** Backoff between attempts: full jitter, exponential, capped. */
const BACKOFF_BASE_MS = 20;
const BACKOFF_CAP_MS = 1_000;

export async function commit(deps: EngineDeps, path: string, message: string): Promise<OperationOutcome> {
  validateMessage(message);
  const checkout = await openCheckout(deps, path, false);
  try {
    // PULL_REQUIRED and UNRESOLVED_MARKERS come before any store access.
    if (checkout.baseline === null) {
      throw new DomainError(
        "PULL_REQUIRED",
        checkout.replaced
          ? "This directory is not the one that was pulled here (it was removed or replaced); call pull for it once, then commit. No remote state was touched."
          : "This directory was never pulled; call pull for it once, then commit. No remote state was touched.",
      );
    }
    await scanLocal(checkout);
    const baselineTree = await baselineFilesOrRefuse(checkout);
    await refuseMarkers(checkout, baselineTree);
    await refuseProtectedChanges(checkout, baselineTree);
    return await publish(checkout, baselineTree, message);
  } catch (e) {
    // A baseline object the cache lost or cannot read: a pull repairs it.
    if (e instanceof MissingObjectError) throw privateStateMissing(e);
    throw e;
  } finally {
    closeCheckout(checkout);
  }
}

async function refuseMarkers(checkout: OpenCheckout, baselineTree: FlatTree): Promise<void> {
  const files: ErrorFile[] = [];
  for (const [path, oid] of checkout.local) {
    if (baselineTree.get(path) === oid) continue;
    const text = decodeText(await localBytes(checkout, path)) ?? "";
    const ranges = findMarkerBlocks(text);
    if (ranges.length > 0) files.push({ path, reason: "UNRESOLVED_MARKERS", ranges });
  }
  if (files.length > 0) {
    throw new DomainError(
      "UNRESOLVED_MARKERS",
      "Conflict marker blocks are still in the files; remove the marker lines and commit again. Nothing was published.",
      { files },
    );
  }
}

/**
 * Merge, pack, upload and publish, until a publication lands or the retries
 * run out. Each pass: the accepted state (the guess, or read), the merge,
 * then either nothing to publish or one publication attempt.
 */
async function publish(checkout: OpenCheckout, baselineTree: FlatTree, message: string): Promise<OperationOutcome> {
  const turn = await takeTurn(checkout);
  try {
    return await attempts(checkout, baselineTree, message, turn);
  } finally {
    turn.end();
  }
}

/**
 * Where the store orders its writers (the embedded store: object-store.ts
 * `queue`), this commit's turn, from reading `current` to the moment its
 * conditional write is visible; while it waits, it downloads what the
 * writers before it publish, so that the turn itself reads little more
 * than `current`. Elsewhere (S3) a turn that is always ours: writers race,
 * and the conditional write decides.
 */
interface Turn {
  /** End the turn: before the files are written, and at the latest when the commit ends. */
  end(): void;
  /** The store as the turn reads it (object-store.ts `WriterTurn.get`). */
  store: ObjectStore;
  /**
   * Whether the store ordered this writer (a turn in the embedded store's
   * line): no one publishes between its read of `current` and its write,
   * and that read is local, so a guess saves nothing — and is stale
   * whenever anyone published since this process last looked.
   */
  ordered: boolean;
}

async function takeTurn(checkout: OpenCheckout): Promise<Turn> {
  const { store } = checkout.deps;
  if (!store.queue) return { end: () => {}, store, ordered: false };
  await checkout.deps.onStage("queue");
  // Downloads only when `current` changed since the last look.
  let seen: string | null = null;
  try {
    // Only the cache is filled from what it reads: nothing is acted on.
    const turn = await store.queue.enter(async (peek) => {
      const now = await peek.get(MANIFEST_KEY);
      if (now === null || now.etag === seen) return;
      seen = now.etag;
      await loadAcceptedState(peek, checkout.git);
    });
    return { end: () => turn.end(), store: { ...store, get: (key) => turn.get(key) }, ordered: true };
  } catch {
    // The queue failed (its database, say): go without a turn; the conditional write decides.
    return { end: () => {}, store, ordered: false };
  }
}

async function attempts(checkout: OpenCheckout, baselineTree: FlatTree, message: string, turn: Turn): Promise<OperationOutcome> {
  const { deps } = checkout;
  // The state this checkout was last brought to, as this process saw it: a
  // guess that `current` has not moved since. The conditional write checks
  // the guess; a wrong one costs an orphan pack and the read it skipped.
  // In a turn of the store's line the read is local and nobody can publish
  // before our write, while a stale guess would cost a pack, a flush of the
  // publication record and a lost write inside the turn: read instead.
  let guess =
    deps.guessCurrent && !turn.ordered ? lastAccepted(deps.memory, deps.storeId, checkout.baseline?.head ?? null, checkout.git) : null;
  // Races lost to other commits; a stale guess is not one (no backoff, no retry spent).
  let lost = 0;
  for (;;) {
    const accepted = await acceptedState(checkout, guess, turn);
    const merged = await mergeOrConflict(checkout, baselineTree, accepted, turn);
    if (sameTree(merged, accepted.files)) {
      // Nothing to publish against the guess: the store may have news.
      if (guess !== null) {
        guess = null;
        continue;
      }
      turn.end();
      return synchronise(checkout, accepted, merged);
    }
    const outcome = await tryPublication(checkout, accepted, merged, message, turn);
    if (outcome !== null) return outcome;
    if (guess !== null) {
      guess = null;
      continue;
    }
    if (lost >= deps.commitRetries) {
      throw new DomainError(
        "RETRIES_EXHAUSTED",
        `Other commits won the race ${lost + 1} times in a row; your files are untouched. Call again, or raise --commit-retries.`,
      );
    }
    await backOff(checkout, lost++);
  }
}

/** The guess, or the accepted state read from the store as the turn reads it (and remembered as the process's latest). */
async function acceptedState(checkout: OpenCheckout, guess: AcceptedState | null, turn: Turn): Promise<AcceptedState> {
  const { deps } = checkout;
  await deps.onStage("fetch");
  if (guess !== null) return guess;
  const accepted = await loadAcceptedState(turn.store, checkout.git);
  rememberAccepted(deps.memory, deps.storeId, accepted);
  return accepted;
}

/** The merge of the checkout's changes into `accepted`; a conflict is written into the files and thrown. */
async function mergeOrConflict(checkout: OpenCheckout, baselineTree: FlatTree, accepted: AcceptedState, turn: Turn): Promise<FlatTree> {
  await checkout.deps.onStage("merge");
  const merge = await mergeTrees(checkout.git, baselineTree, checkout.local, accepted.files, checkout.localContents);
  if (merge.conflicts.length > 0) {
    turn.end();
    await materializeInto(checkout, merge.result, targetOf(accepted), { operation: "commit", remoteAccepted: "no" });
    throw conflictError(merge.conflicts, "commit");
  }
  return merge.result;
}

/**
 * Nothing to publish: a synchronisation, which brings the checkout to the
 * accepted state (every local change is already in it).
 */
async function synchronise(checkout: OpenCheckout, accepted: AcceptedState, merged: FlatTree): Promise<OperationOutcome> {
  await materializeInto(checkout, merged, targetOf(accepted), { operation: "commit", remoteAccepted: "no" });
  return { path: checkout.dir, generation: accepted.generation, files: [] };
}

function targetOf(accepted: AcceptedState): Baseline {
  return { generation: accepted.generation, head: accepted.head, tree: accepted.tree };
}

/** The new commit and its pack, built and uploaded. */
interface Uploaded {
  head: string;
  built: BuiltTree;
  pack: Uint8Array;
  descriptor: PackDescriptor;
  /** The pack, when the store writes it together with `current` (object-store.ts `putWith`) rather than uploaded first. */
  along: Array<{ key: string; body: Uint8Array }> | null;
}

/**
 * One publication attempt on top of `accepted`: build and upload the pack,
 * choose the pack list (compacting it when long), record the publication,
 * and replace `current` conditionally. The outcome when it landed; null
 * when another publication won.
 */
async function tryPublication(
  checkout: OpenCheckout,
  accepted: AcceptedState,
  merged: FlatTree,
  message: string,
  turn: Turn,
): Promise<OperationOutcome | null> {
  const { deps } = checkout;
  const uploaded = await buildAndUpload(checkout, accepted, merged, message);
  const { packs, history } = await packList(checkout, accepted, uploaded);
  const manifest: Manifest = {
    format: formatFor(history),
    generation: accepted.generation + 1,
    head: uploaded.head,
    publication: newPublicationId(),
    packs,
    ...(history.length > 0 ? { history } : {}),
  };
  await deps.onStage("publish");
  // Should this process die once the write is sent, the next call learns
  // from this record whether it landed (publication.ts).
  checkout.state.recordPublication(checkout.baseline!, {
    publication: manifest.publication,
    pack: { key: uploaded.descriptor.key, sha256: uploaded.descriptor.sha256 },
    generation: manifest.generation,
    head: uploaded.head,
    merged: mergedIn(checkout.local, merged),
  });
  // The turn ends as soon as the write is visible to the other writers,
  // before the store flushes it (sqlite.ts): the next turn overlaps that flush.
  const landed = await conditionalReplace(deps.store, accepted, manifest, uploaded.along, () => turn.end());
  if (landed === false) return null;
  turn.end();
  return landedOutcome(checkout, accepted, merged, uploaded, manifest, landed.etag);
}

async function buildAndUpload(checkout: OpenCheckout, accepted: AcceptedState, merged: FlatTree, message: string): Promise<Uploaded> {
  const { deps, git } = checkout;
  await deps.onStage("pack");
  // Only the directories that differ from the accepted tree are built.
  const { tree, files, trees, dirs } = accepted;
  const built = await git.writeFlatTree(merged, tree === null ? undefined : { tree, files, trees, dirs });
  const head = await git.writeCommit({ tree: built.tree, parent: accepted.head, message, when: deps.now(), agent: deps.agent() });
  const newObjects = [head, ...[...built.trees].filter((t) => !accepted.trees.has(t))];
  const known = new Set(accepted.files.values());
  for (const oid of new Set(merged.values())) if (!known.has(oid)) newObjects.push(oid);
  const pack = await git.packObjects(newObjects);
  const sha256 = createHash("sha256").update(pack).digest("hex");
  const descriptor = { key: packKey(sha256), size: pack.byteLength, sha256 };

  await deps.onStage("upload");
  // Where the store writes the pack and `current` in one step, it does: one
  // flush to disk in the turn instead of two, and a lost race leaves no orphan.
  if (deps.store.putWith) return { head, built, pack, descriptor, along: [{ key: descriptor.key, body: pack }] };
  try {
    // Create-only: an existing key holds these very bytes (content-addressed).
    await deps.store.putIfAbsent(descriptor.key, pack);
  } catch (cause) {
    throw new DomainError("PACK_UPLOAD", "The new pack could not be uploaded; nothing was published.", { cause });
  }
  return { head, built, pack, descriptor, along: null };
}

/**
 * Our pack goes into the cache only once it is accepted (landedOutcome),
 * keeping the window between reading and replacing `current` short —
 * except that compaction reads every listed pack from the cache, ours
 * included.
 */
async function importOwnPack(checkout: OpenCheckout, uploaded: Uploaded): Promise<void> {
  if (!checkout.git.hasPack(uploaded.descriptor.sha256)) await checkout.git.importPack(uploaded.descriptor.sha256, uploaded.pack);
}

/**
 * The accepted packs plus ours, compacted when the list grows past the
 * policy's bound (compact.ts); and the history packs, carried over from the
 * accepted manifest, which only a compaction changes.
 */
async function packList(
  checkout: OpenCheckout,
  accepted: AcceptedState,
  uploaded: Uploaded,
): Promise<{ packs: PackDescriptor[]; history: HistoryPackDescriptor[] }> {
  const { deps } = checkout;
  const packs: PackDescriptor[] = [...(accepted.manifest?.packs ?? []), uploaded.descriptor];
  const history = [...(accepted.manifest?.history ?? [])];
  const policy = deps.compaction;
  if (policy === false || !needsCompaction(packs, { ...DEFAULT_COMPACTION, ...policy })) return { packs, history };
  // Keep the pack count, and so a cold pull, bounded. Our own pack stays
  // last, which the outcome proof (conditionalReplace) relies on.
  await deps.onStage("compact");
  await importOwnPack(checkout, uploaded);
  try {
    const compacted = await compactPacks({ store: deps.store, git: checkout.git, head: uploaded.head, packs, policy, history, now: deps.now() });
    return compacted === null ? { packs, history } : { packs: compacted.packs, history: compacted.history };
  } catch {
    // Compaction is an optimisation: publish the plain list instead.
    return { packs, history };
  }
}

/**
 * The publication landed: remember it as the accepted state (when its ETag
 * is ours), import our pack, bring the files to it, and report the diffstat.
 */
async function landedOutcome(
  checkout: OpenCheckout,
  accepted: AcceptedState,
  merged: FlatTree,
  uploaded: Uploaded,
  manifest: Manifest,
  etag: string | null,
): Promise<OperationOutcome> {
  const { deps, git } = checkout;
  const { head, built } = uploaded;
  if (etag !== null) {
    rememberAccepted(deps.memory, deps.storeId, {
      manifest,
      etag,
      generation: manifest.generation,
      head,
      tree: built.tree,
      files: merged,
      trees: built.trees,
      dirs: built.dirs,
    });
  }
  try {
    await importOwnPack(checkout, uploaded);
  } catch {
    // Accepted all the same; the next call finds our pack missing from
    // the cache and downloads it like any other.
  }
  const next = { generation: manifest.generation, head, tree: built.tree };
  await materializeInto(checkout, merged, next, { operation: "commit", remoteAccepted: "yes" });
  await deps.onStage("diffstat");
  const files = await treeDiffStat(git, accepted.files, merged, checkout.lineCounts);
  return { path: checkout.dir, generation: manifest.generation, files };
}

/** Before the next attempt after `lost` lost races: full jitter, exponential, capped. */
async function backOff(checkout: OpenCheckout, lost: number): Promise<void> {
  const { deps } = checkout;
  await deps.onStage("retry");
  const cap = Math.min(BACKOFF_CAP_MS, BACKOFF_BASE_MS * 2 ** lost);
  await deps.sleep(deps.random() * cap);
}

/** Where `published` differs from the visible files `local`: each path with what the visible file holds (null = absent). */
function mergedIn(local: FlatTree, published: FlatTree): Array<{ path: string; oid: string | null }> {
  const merged: Array<{ path: string; oid: string | null }> = [];
  for (const [path, oid] of published) if (local.get(path) !== oid) merged.push({ path, oid: local.get(path) ?? null });
  for (const [path, oid] of local) if (!published.has(path)) merged.push({ path, oid });
  return merged;
}

/**
 * One conditional write of `current`: false if our manifest was not accepted,
 * else the ETag it left (null when others published since). When the response
 * is lost or ambiguous, read `current` back and prove the outcome
 * (docs/design.md, What earlier systems got wrong). Every later manifest
 * keeps our pack, so its presence proves we landed even after others
 * published.
 */
async function conditionalReplace(
  store: ObjectStore,
  accepted: AcceptedState,
  manifest: Manifest,
  along: Array<{ key: string; body: Uint8Array }> | null,
  committed: () => void,
): Promise<{ etag: string | null } | false> {
  const body = serializeManifest(manifest);
  try {
    const result =
      along !== null && store.putWith
        ? await store.putWith(along, MANIFEST_KEY, body, accepted.etag, committed)
        : accepted.etag === null
          ? await store.putIfAbsent(MANIFEST_KEY, body)
          : await store.putIfMatch(MANIFEST_KEY, body, accepted.etag);
    if (result.ok) return { etag: result.etag };
  } catch (cause) {
    if (!(cause instanceof StoreError) || cause.outcome !== "unknown") {
      throw new DomainError("MANIFEST_WRITE", "The manifest write failed; nothing was published.", { cause });
    }
  }
  // Lost, or unknown: does `current` carry our publication? A lost response
  // to a write that landed, or an SDK retry that saw its own write as a
  // conflict, both show up here as success.
  let now;
  try {
    now = await readManifest(store);
  } catch (cause) {
    throw new DomainError(
      "PUBLICATION_UNPROVEN",
      "The store did not confirm the publication and it could not be proved either way; pull first and look before committing again.",
      { cause },
    );
  }
  const ownPack = manifest.packs[manifest.packs.length - 1]!.key;
  if (now.manifest?.publication === manifest.publication) return { etag: now.etag };
  // Landed, and others published since: their ETag is not ours to remember.
  if (now.manifest?.packs.some((p) => p.key === ownPack)) return { etag: null };
  return false;
}
