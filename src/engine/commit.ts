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
import { ENGINE_DETAILS } from "../contract/tokens.ts";
import { type ObjectStore, StoreError } from "../store/object-store.ts";
import { type AcceptedState, lastAccepted, loadAcceptedState, readManifest, rememberAccepted } from "./accepted-state.ts";
import { conflictError } from "./conflict.ts";
import { refuseProtectedChanges } from "./protect.ts";
import { treeDiffStat } from "./diffstat.ts";
import { BaselineMissing, baselineFiles, closeSession, type EngineDeps, materializeInto, openSession, oursBytes, scanOurs, type Session } from "./engine.ts";
import type { FlatTree } from "./git/object-cache.ts";
import { MissingObjectError } from "./git/objects.ts";
import { compactPacks, DEFAULT_COMPACTION, needsCompaction } from "./compact.ts";
import { MANIFEST_KEY, type Manifest, newPublicationId, type PackDescriptor, packKey, serializeManifest } from "./manifest.ts";
import { decodeText } from "./text.ts";
import { mergeTrees, sameTree } from "./tree-merge.ts";
import { findMarkerBlocks } from "./xdiff/index.ts";

/** Backoff between attempts: full jitter, exponential, capped. */
const BACKOFF_BASE_MS = 20;
const BACKOFF_CAP_MS = 1_000;

export async function commit(deps: EngineDeps, path: string, message: string): Promise<OperationOutcome> {
  validateMessage(message);
  const session = await openSession(deps, path, false);
  try {
    // PULL_REQUIRED and UNRESOLVED_MARKERS come before any store access.
    if (session.baseline === null) {
      throw new DomainError(
        "PULL_REQUIRED",
        session.replaced
          ? "This directory is not the one that was pulled here (it was removed or replaced); call pull for it once, then commit. No remote state was touched."
          : "This directory was never pulled; call pull for it once, then commit. No remote state was touched.",
      );
    }
    await scanOurs(session);
    let base: FlatTree;
    try {
      base = await baselineFiles(session);
    } catch (e) {
      if (!(e instanceof BaselineMissing)) throw e;
      throw new DomainError("ENGINE_FAILED", "The baseline of this checkout is missing from the private cache.", {
        detail: ENGINE_DETAILS.stateMissingLocally(),
        cause: e,
      });
    }
    await refuseMarkers(session, base);
    await refuseProtectedChanges(session, base);
    return await publish(session, base, message);
  } catch (e) {
    // A baseline object the cache lost or cannot read: a pull repairs it.
    if (e instanceof MissingObjectError) {
      throw new DomainError("ENGINE_FAILED", "Part of this checkout's private state is missing or unreadable.", {
        detail: ENGINE_DETAILS.stateMissingLocally(),
        cause: e,
      });
    }
    throw e;
  } finally {
    closeSession(session);
  }
}

async function refuseMarkers(session: Session, base: FlatTree): Promise<void> {
  const files: ErrorFile[] = [];
  for (const [path, oid] of session.ours) {
    if (base.get(path) === oid) continue;
    const text = decodeText(await oursBytes(session, path)) ?? "";
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

async function publish(session: Session, base: FlatTree, message: string): Promise<OperationOutcome> {
  const { deps, git } = session;
  const store = deps.store;
  // The state this checkout was last brought to, as this process saw it: a
  // guess that `current` has not moved since. The conditional write checks
  // the guess; a wrong one costs an orphan pack and the read it skipped.
  let guess = deps.guessCurrent ? lastAccepted(deps.memory, deps.storeId, session.baseline?.head ?? null, git) : null;
  for (let attempt = 0; ; attempt++) {
    await deps.onStage("fetch");
    const accepted = guess ?? (await loadAcceptedState(store, git));
    if (guess === null) rememberAccepted(deps.memory, deps.storeId, accepted);
    await deps.onStage("merge");
    const merge = await mergeTrees(git, base, session.ours, accepted.files, session.oursContents);
    const target = { generation: accepted.generation, head: accepted.head, tree: accepted.tree };
    if (merge.conflicts.length > 0) {
      await materializeInto(session, merge.result, target, { operation: "commit", remoteAccepted: "no" });
      throw conflictError(merge.conflicts, "commit");
    }
    if (guess !== null && sameTree(merge.result, accepted.files)) {
      // Nothing to publish against the guess: the store may have news.
      guess = null;
      attempt--;
      continue;
    }
    if (sameTree(merge.result, accepted.files)) {
      // Nothing to publish: a synchronisation, which brings the checkout to
      // the accepted state (every local change is already in it).
      await materializeInto(session, merge.result, target, { operation: "commit", remoteAccepted: "no" });
      return { path: session.dir, generation: accepted.generation, files: [] };
    }

    await deps.onStage("pack");
    // Only the directories that differ from the accepted tree are built.
    const { tree, files, trees, dirs } = accepted;
    const built = await git.writeFlatTree(merge.result, tree === null ? undefined : { tree, files, trees, dirs });
    const head = await git.writeCommit({ tree: built.tree, parent: accepted.head, message, when: deps.now() });
    const newObjects = [head, ...[...built.trees].filter((t) => !accepted.trees.has(t))];
    const known = new Set(accepted.files.values());
    for (const oid of new Set(merge.result.values())) if (!known.has(oid)) newObjects.push(oid);
    const pack = await git.packObjects(newObjects);
    const sha256 = createHash("sha256").update(pack).digest("hex");
    const key = packKey(sha256);

    await deps.onStage("upload");
    try {
      // Create-only: an existing key holds these very bytes (content-addressed).
      await store.putIfAbsent(key, pack);
    } catch (cause) {
      throw new DomainError("PACK_UPLOAD", "The new pack could not be uploaded; nothing was published.", { cause });
    }
    // Into the cache only once it is accepted (below), keeping the window
    // between reading and replacing `current` short — except that
    // compaction reads every listed pack from the cache, ours included.
    const importOurs = async () => {
      if (!git.hasPack(sha256)) await git.importPack(sha256, pack);
    };

    let packs: PackDescriptor[] = [...(accepted.manifest?.packs ?? []), { key, size: pack.byteLength, sha256 }];
    const policy = deps.compaction;
    if (policy !== false && needsCompaction(packs, { ...DEFAULT_COMPACTION, ...policy })) {
      // Keep the pack count, and so a cold pull, bounded (compact.ts). Our
      // own pack stays last, which the outcome proof below relies on.
      await deps.onStage("compact");
      await importOurs();
      try {
        packs = (await compactPacks({ store, git, head, packs, policy }))?.packs ?? packs;
      } catch {
        // Compaction is an optimisation: publish the plain list instead.
      }
    }
    const manifest: Manifest = {
      format: 1,
      generation: accepted.generation + 1,
      head,
      publication: newPublicationId(),
      packs,
    };
    await deps.onStage("publish");
    // Should this process die once the write is sent, the next call learns
    // from this record whether it landed (publication.ts).
    session.state.recordPublication(session.baseline!, {
      publication: manifest.publication,
      pack: { key, sha256 },
      generation: manifest.generation,
      head,
      merged: mergedIn(session.ours, merge.result),
    });
    const landed = await conditionalReplace(store, accepted, manifest);
    if (landed !== false) {
      if (landed.etag !== null) {
        const { tree: builtTree, trees: builtTrees, dirs: builtDirs } = built;
        rememberAccepted(deps.memory, deps.storeId, {
          manifest,
          etag: landed.etag,
          generation: manifest.generation,
          head,
          tree: builtTree,
          files: merge.result,
          trees: builtTrees,
          dirs: builtDirs,
        });
      }
      try {
        await importOurs();
      } catch {
        // Accepted all the same; the next call finds our pack missing from
        // the cache and downloads it like any other.
      }
      const next = { generation: manifest.generation, head, tree: built.tree };
      await materializeInto(session, merge.result, next, { operation: "commit", remoteAccepted: "yes" });
      await deps.onStage("diffstat");
      const files = await treeDiffStat(git, accepted.files, merge.result, session.lineCounts);
      return { path: session.dir, generation: manifest.generation, files };
    }
    if (guess !== null) {
      // The guess was stale: not a lost race, so no backoff and no retry spent.
      guess = null;
      attempt--;
      continue;
    }
    if (attempt >= deps.commitRetries) {
      throw new DomainError(
        "RETRIES_EXHAUSTED",
        `Other commits won the race ${attempt + 1} times in a row; your files are untouched. Call again, or raise --commit-retries.`,
      );
    }
    await deps.onStage("retry");
    const cap = Math.min(BACKOFF_CAP_MS, BACKOFF_BASE_MS * 2 ** attempt);
    await deps.sleep(deps.random() * cap);
  }
}

/** Where `published` differs from the visible files `ours`: each path with what the visible file holds (null = absent). */
function mergedIn(ours: FlatTree, published: FlatTree): Array<{ path: string; oid: string | null }> {
  const merged: Array<{ path: string; oid: string | null }> = [];
  for (const [path, oid] of published) if (ours.get(path) !== oid) merged.push({ path, oid: ours.get(path) ?? null });
  for (const [path, oid] of ours) if (!published.has(path)) merged.push({ path, oid });
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
async function conditionalReplace(store: ObjectStore, accepted: AcceptedState, manifest: Manifest): Promise<{ etag: string | null } | false> {
  const body = serializeManifest(manifest);
  try {
    const result =
      accepted.etag === null ? await store.putIfAbsent(MANIFEST_KEY, body) : await store.putIfMatch(MANIFEST_KEY, body, accepted.etag);
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
  const ours = manifest.packs[manifest.packs.length - 1]!.key;
  if (now.manifest?.publication === manifest.publication) return { etag: now.etag };
  // Landed, and others published since: their ETag is not ours to remember.
  if (now.manifest?.packs.some((p) => p.key === ours)) return { etag: null };
  return false;
}
