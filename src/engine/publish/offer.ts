/**
 * The proposer's side of combining (combine.ts is the combiner's): a
 * commit that lost a race offers its attempt as a proposal, then watches
 * `current` for a publication that carries it, or publishes it itself when
 * nobody else does (docs/storage-protocol.md, "Combining").
 */
import type { FlatTree } from "../git/object-cache.ts";
import { mergeTrees, sameTree } from "../merge/tree-merge.ts";
import { type AcceptedState, loadAcceptedState, readManifest } from "./accepted-state.ts";
import { carriable, type Carried, combine, fateOf, type Listed, listProposals, PROPOSAL_GENERATIONS, type Proposal, postProposal, proposalKey, waitingInOrder } from "./combine.ts";
import type { CombinedPublication } from "./manifest.ts";
import type { Publisher } from "./publisher.ts";
import { type Current, importOwnPack, type LostAttempt } from "./write.ts";

/** A commit's own proposal, posted (offer), and what the commit needs once it lands. */
export interface OwnProposal {
  proposal: Proposal;
  /** The tree the visible files are brought to: the merge the proposal was built from. */
  merged: FlatTree;
  /** Its built tree: the baseline's tree once it lands. */
  tree: string;
  /** The files of the state it was built on, for its diffstat. */
  parentFiles: FlatTree;
}

/** How many publications a proposer sees go by without its proposal before it publishes the proposal itself. */
const PATIENCE = 12;
/** How many looks in a row `current` must stand still before a proposer publishes its proposal itself: nobody else is publishing. */
const STILL_LOOKS = 1;
/** The first guess of the time between publications, at most (ms): a slow attempt of our own says little about how soon others publish. */
const FIRST_GAP_CAP_MS = 200;
/** Bounds of the time between looks (ms). */
const MIN_LOOK_MS = 5;
const MAX_LOOK_MS = 2_000;

/**
 * Wait for another writer's publication to carry our proposal: read
 * `current` about once per time between publications, as measured while
 * waiting (at first, about one of our own windows) — a crowd of waiting
 * writers on a busy machine must not poll faster than the store publishes.
 * Landed when a manifest lists it in `combined`; otherwise `current` to
 * build on ourselves, once it stood still for STILL_LOOKS looks (nobody is
 * publishing) and a look more for each proposal that waits before ours,
 * up to PATIENCE (its proposer publishes first, carrying ours: of a crowd
 * of proposers one combines, not each of them for all but one to lose),
 * or moved PATIENCE times without us (writers that list no proposals), or
 * when the proposal expired — or at once when it moved to a state ours no
 * longer merges onto: every combiner skips it from then on, and the commit
 * must merge afresh (and answer a conflict) itself. That state is
 * downloaded to tell: the next commit would download it anyway.
 */
export async function awaitCarried(
  p: Publisher,
  mine: OwnProposal,
  last: Current | null,
  windowMs: number,
): Promise<{ landed: CombinedPublication } | { current: Current }> {
  let gap = Math.min(windowMs, FIRST_GAP_CAP_MS);
  let movedAt = p.monotonic();
  for (let moved = 0, still = 0, before = 0; ; ) {
    await p.sleep(Math.min(MAX_LOOK_MS, Math.max(MIN_LOOK_MS, gap)) * (0.5 + p.random()));
    const now = await readManifest(p.store);
    const fate = fateOf(now.manifest, mine.proposal);
    if (typeof fate === "object") return fate;
    if (fate !== "waiting") return { current: now };
    if (now.etag === last?.etag) {
      if (++still === STILL_LOOKS) before = Math.min(PATIENCE, await waitingBefore(p.store, now, mine.proposal));
      if (still >= STILL_LOOKS + before) return { current: now };
    } else {
      const at = p.monotonic();
      gap = (gap + (at - movedAt)) / 2;
      movedAt = at;
      still = 0;
      if (++moved >= PATIENCE || !(await stillCarriable(p, now, mine))) return { current: now };
    }
    last = now;
  }
}

/** How many proposals not yet published on `now` a combiner takes before ours (combine.ts order); none when the listing fails. */
async function waitingBefore(store: Publisher["store"], now: Current, proposal: Proposal): Promise<number> {
  const waiting = waitingInOrder(await listProposals(store), now.manifest);
  const at = waiting.indexOf(proposalKey(proposal.publication));
  return at < 0 ? 0 : at;
}

/** Whether a combiner building on `now` would still carry our proposal; when that cannot be told, it may. */
async function stillCarriable(p: Publisher, now: Current, mine: OwnProposal): Promise<boolean> {
  try {
    return await carriable(p.git, await loadAcceptedState(p.store, p.git, now), mine.proposal);
  } catch {
    // A pack unreadable now, say: the wait goes on, and what follows it reads `current` again.
    return true;
  }
}

/**
 * The waiting proposals moved onto `accepted` (combine.ts) and, for a
 * commit with no proposal of its own, its changes merged on top of them.
 * Null when there is nothing to combine — or when our own proposal is not
 * among those that moved cleanly, or our changes would not merge cleanly
 * onto the others' (we then publish alone: a conflict with a proposal that
 * may never land is not one to answer).
 */
export async function combineWith(
  p: Publisher,
  accepted: AcceptedState,
  mine: OwnProposal | null,
  listed: Listed,
): Promise<(Carried & { merged: FlatTree | null }) | null> {
  await p.onStage("combine");
  const carried = await combine(p.store, p.git, accepted, mine?.proposal ?? null, listed);
  if (mine !== null) return carried.combined.some((c) => c.publication === mine.proposal.publication) ? { ...carried, merged: null } : null;
  if (carried.combined.length === 0) return null;
  const again = await mergeTrees(p.git, p.baselineTree, p.local, carried.state.files, p.localContents);
  if (again.conflicts.length > 0 || sameTree(again.result, carried.state.files)) return null;
  return { ...carried, merged: again.result };
}

/**
 * Offer a lost attempt to the other writers (combine.ts): its pack stays
 * in the store, and a proposal names it. Recorded first, so that should
 * this process die from here on, the next call on the checkout withdraws
 * it before anything else (publication.ts). Once it lands, the files
 * become `alone` — our merge onto the accepted state `parentFiles` the
 * attempt read, without the proposals it carried, which may never land.
 */
export async function offer(p: Publisher, own: LostAttempt, alone: FlatTree, parentFiles: FlatTree, generation: number): Promise<OwnProposal> {
  const { uploaded } = own;
  const proposal: Proposal = {
    format: 1,
    publication: own.record.publication,
    head: uploaded.head,
    pack: uploaded.descriptor,
    until: generation + PROPOSAL_GENERATIONS,
  };
  p.state.recordPublication(p.baseline, { ...own.record, proposal: { until: proposal.until } });
  try {
    // A store that writes a pack only along with `current` (sqlite.ts) has not kept it.
    if (uploaded.along !== null) await p.store.putIfAbsent(uploaded.descriptor.key, uploaded.pack);
    await importOwnPack(p.git, uploaded);
  } catch {
    // Then no one can combine it; it expires unused.
  }
  p.state.checkLock();
  await postProposal(p.store, proposal);
  // The baseline's tree once it lands. What lands is a moved copy of our
  // commit, so no accepted pack holds this tree, and our pack may be
  // collected from the store and dropped from the cache: written loose.
  const tree = await p.git.storeFlatTree(alone);
  return { proposal, merged: alone, tree, parentFiles };
}
