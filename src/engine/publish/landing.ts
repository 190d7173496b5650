/**
 * The ends a commit's attempts reach (attempt.ts `land`): the turn ends,
 * and the visible files are brought to what landed — our write, our
 * proposal carried by another writer's, or, with nothing to publish, the
 * accepted state — and the commit's answer is made.
 */
import type { OperationOutcome } from "../../contract/results.ts";
import type { Baseline } from "../checkout/state.ts";
import type { FlatTree } from "../git/object-cache.ts";
import { treeDiffStat } from "../merge/diffstat.ts";
import type { TreeMerge } from "../merge/tree-merge.ts";
import { type AcceptedState, rememberAccepted } from "./accepted-state.ts";
import type { Landing } from "./attempt.ts";
import { dropProposal } from "./combine.ts";
import { markIfDue } from "./compact-ahead.ts";
import type { CombinedPublication } from "./manifest.ts";
import type { OwnProposal } from "./offer.ts";
import type { Publisher } from "./publisher.ts";
import type { Turn } from "./turn.ts";
import { importOwnPack, type Landed } from "./write.ts";

/**
 * What the runner needs of the commit beyond its Publisher: its message
 * and limits, and the operation's ways with the visible files. The
 * operation (src/engine/commit.ts) makes it from its open checkout.
 */
export interface Committing {
  readonly message: string;
  /** The checkout's directory: the answer's path. */
  readonly dir: string;
  /** How many races the commit may lose (--commit-retries). */
  readonly retries: number;
  /** Whether it may build on the accepted state the process last saw. */
  readonly guessCurrent: boolean;
  /** Whether a lost meeting of two builds on the winner at once (PublishSettings.meetAtOnce). */
  readonly meetAtOnce: boolean;
  /** Line counts of blobs read this call, for the diffstat. */
  readonly lineCounts: Map<string, number>;
  /** Bring the visible files to `merge`, the commit's tree on `target` (the journalled write of engine.ts bringFiles). */
  bring(merge: TreeMerge, target: Baseline, targetFiles: FlatTree, how: { remoteAccepted: "yes" | "no"; firstBase: FlatTree; conflicts: "write" | "leave" }): Promise<TreeMerge>;
  /** Refuse an accepted state with a file this checkout cannot take (INVALID_CONTENT). */
  refuseOversize(baselineTree: FlatTree, accepted: FlatTree): Promise<void>;
}

/** End the turn, and bring the files to what landed. */
export async function landed(p: Publisher, c: Committing, turn: Turn, landing: Landing): Promise<OperationOutcome> {
  turn.end();
  switch (landing.how) {
    case "synchronised":
      return await synchronise(p, c, landing.accepted, landing.merged);
    case "carried":
      return await proposalLanded(p, c, landing.mine, landing.at);
    case "written":
      return await landedOutcome(p, c, landing.landed, landing.merged);
  }
}

/** What the files are brought to with the accepted state: its generation, commit, tree and notebook. */
export function targetOf(accepted: AcceptedState): Baseline {
  const notebook = accepted.manifest?.notebook;
  return { generation: accepted.generation, head: accepted.head, tree: accepted.tree, ...(notebook !== undefined ? { notebook } : {}) };
}

/**
 * Nothing to publish: a synchronisation, which brings the checkout to the
 * accepted state (every local change is already in it).
 */
async function synchronise(p: Publisher, c: Committing, accepted: AcceptedState, merged: FlatTree): Promise<OperationOutcome> {
  // Every local change is in the accepted state: files left as someone wrote them keep their scanned content as baseline.
  await c.bring({ result: merged, conflicts: [] }, targetOf(accepted), accepted.files, { remoteAccepted: "no", firstBase: p.local, conflicts: "leave" });
  return { path: c.dir, generation: accepted.generation, files: [] };
}

/**
 * Our proposal landed as `at` (a manifest's `combined` says so): bring the
 * files to what it published and move the baseline to its commit there.
 * Changes published before it that it was moved over come with the next
 * pull, as any other writer's.
 */
async function proposalLanded(p: Publisher, c: Committing, mine: OwnProposal, at: CombinedPublication): Promise<OperationOutcome> {
  const { generation, head } = at;
  dropProposal(p.store, mine.proposal.publication);
  // The same notebook as the baseline's: the store was checked before the proposal was offered.
  const { notebook } = p.baseline;
  const target = { generation, head, tree: mine.tree, ...(notebook !== undefined ? { notebook } : {}) };
  await c.bring({ result: mine.merged, conflicts: [] }, target, mine.merged, { remoteAccepted: "yes", firstBase: p.local, conflicts: "leave" });
  await p.onStage("diffstat");
  const files = await treeDiffStat(p.git, mine.parentFiles, mine.merged, c.lineCounts);
  return { path: c.dir, generation, files };
}

/**
 * Our publication landed: remember it as the accepted state (when its ETag
 * is ours), import our pack, bring the files to it, and report the diffstat.
 */
async function landedOutcome(p: Publisher, c: Committing, landed: Landed, merged: FlatTree): Promise<OperationOutcome> {
  const { uploaded, manifest, etag, parent } = landed;
  const { head, built } = uploaded;
  if (etag !== null) {
    rememberAccepted(p.memory, p.storeId, { manifest, etag, generation: manifest.generation, head, tree: built.tree, files: merged, trees: built.trees, dirs: built.dirs });
    // Our pack list, as remembered: a server compacts it between calls once it reaches the threshold.
    markIfDue(p.memory, p.storeId, manifest, uploaded.leading.length + 1, p.compaction);
  }
  // Accepted all the same when this fails: the next call finds our pack missing from the cache and downloads it like any other.
  await importOwnPack(p.git, uploaded).catch(() => {});
  const next = { generation: manifest.generation, head, tree: built.tree, notebook: manifest.notebook };
  // The published tree holds the scanned files' edits: a file left as someone wrote it since keeps its scanned content as baseline.
  await c.bring({ result: merged, conflicts: [] }, next, merged, { remoteAccepted: "yes", firstBase: p.local, conflicts: "leave" });
  await p.onStage("diffstat");
  const files = await treeDiffStat(p.git, parent.files, merged, c.lineCounts);
  return { path: c.dir, generation: manifest.generation, files };
}
