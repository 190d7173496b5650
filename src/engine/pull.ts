/**
 * pull: bring the accepted state into the visible directory without losing
 * unpublished edits. base = baseline, ours = visible files, theirs =
 * accepted state; the merge result is written, conflicts with git's markers,
 * and the baseline moves to the accepted state.
 */
import type { OperationOutcome } from "../contract/results.ts";
import { loadAcceptedState } from "./accepted-state.ts";
import { treeDiffStat } from "./diffstat.ts";
import { BaselineMissing, baselineFiles, closeSession, type EngineDeps, openSession, scanOurs } from "./engine.ts";
import type { FlatTree } from "./git-store.ts";
import { materialize } from "./materialize.ts";
import { mergeTrees } from "./tree-merge.ts";
import { conflictError } from "./conflict.ts";
import { takeRemoteSide } from "./protect.ts";

export async function pull(deps: EngineDeps, path: string): Promise<OperationOutcome> {
  const session = await openSession(deps, path, true);
  try {
    await scanOurs(session);
    let base: FlatTree;
    try {
      base = await baselineFiles(session);
    } catch (e) {
      // The cache lost the baseline: merge against nothing. Every differing
      // file becomes a conflict block, so nothing is lost, only made visible.
      if (!(e instanceof BaselineMissing)) throw e;
      base = new Map();
    }
    await session.deps.onStage("fetch");
    const accepted = await loadAcceptedState(session.deps.store, session.git);
    await session.deps.onStage("merge");
    // Protected paths take the remote's side before the merge, so they never
    // conflict: the process may not change them anyway.
    const ours = takeRemoteSide(session.ours, accepted.files, session.deps.pathSets);
    const merge = await mergeTrees(session.git, base, ours, accepted.files);
    await materialize(
      session.state,
      session.ours,
      merge.result,
      { generation: accepted.generation, head: accepted.head, tree: accepted.tree },
      session.deps.onStage,
    );
    if (merge.conflicts.length > 0) throw conflictError(merge.conflicts, "pull");
    const files = await treeDiffStat(session.git, session.ours, merge.result);
    return { path: session.dir, generation: accepted.generation, files };
  } finally {
    closeSession(session);
  }
}
