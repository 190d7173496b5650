/**
 * pull: bring the accepted state into the visible directory without losing
 * unpublished edits. The merge's sides: the baseline, the local (visible)
 * files, and the accepted state; the merge result is written, conflicts with git's markers,
 * and the baseline moves to the accepted state.
 */
import type { OperationOutcome } from "../contract/results.ts";
import { loadAcceptedState, readManifest, rememberAccepted } from "./publish/accepted-state.ts";
import { treeDiffStat } from "./merge/diffstat.ts";
import { BaselineMissing, baselineFiles, bringFiles, closeCheckout, type EngineDeps, localFailure, openCheckout, scanLocal } from "./engine.ts";
import type { FlatTree } from "./git/object-cache.ts";
import { MissingObjectError } from "./git/objects.ts";
import { mergeTrees } from "./merge/tree-merge.ts";
import { conflictError } from "./merge/conflict.ts";
import { takeAcceptedSide } from "./protect.ts";
import { attachBase, refuseWentBackwards, storeWentBackwards } from "./publish/went-backwards.ts";

export async function pull(deps: EngineDeps, path: string): Promise<OperationOutcome> {
  return (await pullOrAttach(deps, path, false)).outcome;
}

/**
 * A pull that takes the store as it is, should it have gone backwards
 * (went-backwards.ts): the baseline moves to the store's state, and the
 * files stay local edits against it, merged against the store's state when
 * the checkout's history passed through it, else against nothing (attachBase).
 * `attached` says whether it went backwards; if not, this was a plain pull.
 */
export async function attach(deps: EngineDeps, path: string): Promise<{ outcome: OperationOutcome; attached: boolean }> {
  return pullOrAttach(deps, path, true);
}

async function pullOrAttach(deps: EngineDeps, path: string, attaching: boolean): Promise<{ outcome: OperationOutcome; attached: boolean }> {
  const checkout = await openCheckout(deps, path, true, { attach: attaching });
  try {
    await scanLocal(checkout);
    await checkout.deps.onStage("fetch");
    // What `current` alone says of a store that went backwards is refused before any pack is read.
    const read = await readManifest(checkout.deps.store);
    if (!attaching) refuseWentBackwards(checkout.baseline, read.manifest);
    // Fetching first also repairs a cache that lost accepted history, so a
    // baseline that was once accepted can be read again below.
    let accepted = await loadAcceptedState(checkout.deps.store, checkout.git, read);
    const backwards = await storeWentBackwards(checkout, accepted);
    if (backwards !== null && !attaching) throw backwards;
    rememberAccepted(checkout.deps.memory, checkout.deps.storeId, accepted);
    await checkout.deps.onStage("merge");
    let baselineTree: FlatTree;
    try {
      baselineTree = backwards !== null ? await attachBase(checkout, accepted) : await baselineFiles(checkout);
    } catch (e) {
      if (!(e instanceof BaselineMissing)) throw e;
      // The cache cannot produce the baseline: download the accepted packs
      // again, since the baseline was once accepted and is in them.
      await checkout.git.dropPacks();
      accepted = await loadAcceptedState(checkout.deps.store, checkout.git);
      const reread = await storeWentBackwards(checkout, accepted);
      if (reread !== null) throw reread;
      try {
        baselineTree = await baselineFiles(checkout);
      } catch (again) {
        // Gone for good (compacted away): merge against nothing. Every
        // differing file becomes a conflict block; nothing is lost.
        if (!(again instanceof BaselineMissing)) throw again;
        baselineTree = new Map();
      }
    }
    // Protected paths take the remote's side before the merge, so they never
    // conflict: the process may not change them anyway. Not in an attach,
    // which keeps every file: the store lost what they hold.
    const protect = (files: FlatTree) => (backwards !== null ? files : takeAcceptedSide(files, accepted.files, checkout.deps.pathSets));
    const local = protect(checkout.local);
    let merge;
    try {
      merge = await mergeTrees(checkout.git, baselineTree, local, accepted.files, checkout.localContents);
    } catch (e) {
      if (!(e instanceof MissingObjectError)) throw e;
      // An object the cache lost: read every visible file again (the stat
      // cache was forgotten), and merge against nothing if the baseline's
      // files are what is missing.
      await scanLocal(checkout, false);
      const again = protect(checkout.local);
      try {
        merge = await mergeTrees(checkout.git, baselineTree, again, accepted.files, checkout.localContents);
      } catch (e2) {
        if (!(e2 instanceof MissingObjectError)) throw e2;
        merge = await mergeTrees(checkout.git, new Map(), again, accepted.files, checkout.localContents);
      }
    }
    const notebook = accepted.manifest?.notebook;
    const target = { generation: accepted.generation, head: accepted.head, tree: accepted.tree, ...(notebook !== undefined ? { notebook } : {}) };
    const scanned = checkout.local;
    const done = await bringFiles(checkout, merge, target, accepted.files, { operation: "pull", remoteAccepted: "no" }, baselineTree, { prepare: protect, conflicts: "write" });
    if (done.conflicts.length > 0) throw conflictError(done.conflicts, "pull");
    await checkout.deps.onStage("diffstat");
    const files = await treeDiffStat(checkout.git, scanned, done.result, checkout.lineCounts);
    return { outcome: { path: checkout.dir, generation: accepted.generation, files }, attached: backwards !== null };
  } catch (e) {
    throw localFailure(checkout, e);
  } finally {
    closeCheckout(checkout);
  }
}
