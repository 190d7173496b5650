/**
 * commit: publish the caller's changes. The preconditions come first,
 * before any store access — a checkout pulled before, no marker blocks,
 * nothing changed under a protected path — then publishing
 * (publish/runner.ts: merge with the latest accepted state, upload one
 * create-only pack, replace `current` with one conditional write, and on a
 * lost race try again, offering the attempt to the other writers; the
 * visible files change only once the outcome is known). The operation
 * hands publish/ what it needs of the open checkout as two ports, so that
 * publish/ depends on no operation above it.
 */
import { DomainError, type ErrorFile } from "../contract/errors.ts";
import { validateMessage } from "../contract/message.ts";
import type { OperationOutcome } from "../contract/results.ts";
import { baselineFilesOrRefuse } from "./checkout/session-baseline.ts";
import { pullRequired } from "./checkout/session.ts";
import { localBytes, scanLocal, withIgnoredCount } from "./checkout/session-scan.ts";
import type { EngineDeps } from "./engine.ts";
import { deadlinePassed, sleepWithin } from "../store/deadline.ts";
import { bringFiles, refuseOversizeAccepted } from "./checkout/session-materialize.ts";
import type { Baseline } from "./checkout/state.ts";
import { type OpenCheckout, withCheckout } from "./with-checkout.ts";
import type { FlatTree } from "./git/object-cache.ts";
import { findMarkerBlocks } from "./merge/xdiff/index.ts";
import { refuseProtectedChanges } from "./protect.ts";
import { PACK_BYTES, type Publisher } from "./publish/publisher.ts";
import { type Committing, publishCommit } from "./publish/runner.ts";

export interface CommitInput {
  /** The checkout's directory. */
  path: string;
  message: string;
}

export async function commit(deps: EngineDeps, input: CommitInput): Promise<OperationOutcome> {
  const { path, message } = input;
  validateMessage(message);
  // A baseline object the cache lost or cannot read: a pull repairs it (withCheckout says so).
  return withCheckout(deps, path, { create: false }, async (checkout) => {
    // PULL_REQUIRED and UNRESOLVED_MARKERS come before any store access.
    const { baseline } = checkout;
    if (baseline === null) throw pullRequired(checkout.lost, ", then commit. No remote state was touched.");
    await scanLocal(checkout);
    const baselineTree = await baselineFilesOrRefuse(checkout);
    await refuseMarkers(checkout, baselineTree);
    await refuseProtectedChanges(checkout, baselineTree);
    return withIgnoredCount(await publishCommit(publisherOf(checkout, baseline, baselineTree), committing(checkout, message)), checkout);
  });
}

async function refuseMarkers(checkout: OpenCheckout, baselineTree: FlatTree): Promise<void> {
  const files: ErrorFile[] = [];
  for (const [path, oid] of checkout.local) {
    if (baselineTree.get(path) === oid) continue;
    const ranges = findMarkerBlocks(await localBytes(checkout, path));
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

/** What publishing needs of the open checkout and its call (publish/publisher.ts). */
function publisherOf(checkout: OpenCheckout, baseline: Baseline, baselineTree: FlatTree): Publisher {
  const { deps } = checkout;
  return {
    store: deps.store,
    storeId: deps.storeId,
    memory: deps.memory,
    git: checkout.git,
    state: checkout.state,
    baseline,
    baselineTree,
    local: checkout.local,
    localContents: checkout.localContents,
    agent: deps.agent,
    now: deps.now,
    monotonic: deps.monotonic,
    random: deps.random,
    randomId: deps.randomId,
    sleep: (ms) => sleepWithin(deps, ms),
    outOfTime: () => deadlinePassed(deps),
    onStage: deps.onStage,
    compaction: deps.compaction,
    packBytes: deps.packBytes ?? PACK_BYTES,
  };
}

/** The commit's own ports: its message and limits, and the checkout's journalled file writes (publish/landing.ts). */
function committing(checkout: OpenCheckout, message: string): Committing {
  const { deps } = checkout;
  return {
    message,
    dir: checkout.dir,
    retries: deps.commitRetries,
    guessCurrent: deps.guessCurrent,
    meetAtOnce: deps.meetAtOnce,
    lineCounts: checkout.lineCounts,
    bring: (merge, target, targetFiles, how) =>
      bringFiles(checkout, merge, target, targetFiles, { operation: "commit", remoteAccepted: how.remoteAccepted }, how.firstBase, { conflicts: how.conflicts }),
    refuseOversize: (baselineTree, accepted) => refuseOversizeAccepted(checkout, baselineTree, accepted),
  };
}
