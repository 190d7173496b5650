/**
 * A commit that died between its conditional write and its baseline move.
 *
 * The commit records its publication in the checkout's state before the
 * write (CheckoutState.recordPublication). If the process dies after the
 * write landed but before the baseline moved, the baseline still names the
 * state before the commit while the store holds the commit: the next merge
 * would take the committed lines for someone else's, so deleting one of them
 * locally would be undone by the store's copy, and editing one would
 * conflict with no other writer. So the next call on the checkout settles
 * the record first (docs/storage-protocol.md, "The baseline invariant"):
 *
 * - landed: the baseline moves to the publication — to its commit, with the
 *   tree the visible files held when the commit scanned them (the published
 *   tree, except where changes of others were merged in and not yet
 *   written). Merging from there treats exactly the edits made since as
 *   local, and brings the merged-in changes as remote ones.
 * - not landed: the baseline stays; the edits are still local, and the next
 *   commit publishes them.
 * - offered to other writers (combine.ts): the offer is withdrawn first,
 *   which makes the answer final; landed, the baseline moves to where a
 *   manifest's `combined` says it landed, with the proposal's own tree.
 * - cannot tell (its commit fell out of the retained history, 32 commits):
 *   the baseline stays, the safe side: nothing unpublished can be lost, and
 *   at worst a line deleted since comes back from the store.
 * - the store went backwards (went-backwards.ts): it holds neither the
 *   baseline nor, built on it, this publication, so it can settle nothing —
 *   the record stays for the right store, and the call is refused. Only an
 *   attach settles it: not landed in the store it attaches to.
 */
import { createHash } from "../git/hash.ts";
import type { RandomSource } from "../../contract/clock.ts";
import type { ObjectStore } from "../../store/object-store.ts";
import { loadAcceptedState, readManifest } from "./accepted-state.ts";
import type { CheckoutState, PublicationRecord } from "../checkout/state.ts";
import { MissingObjectError } from "../git/objects.ts";
import type { BaselineOverride } from "../checkout/recovery.ts";
import { withdraw } from "./combine.ts";
import type { Manifest } from "./manifest.ts";
import { commitBack, wentBackwards, wentBackwardsError } from "./went-backwards.ts";

export type Landed = "yes" | "no" | "unknown";

/** Settle a publication a dead call left recorded; nothing to do when none is. */
/** `overrides`: what recovering its journal kept (checkout/recovery.ts), which the moved baseline keeps too. */
/** `attaching`: the call attaches the checkout to the store as it is, should it have gone backwards. */
export async function settlePublication(
  state: CheckoutState,
  store: ObjectStore,
  randomId: RandomSource["randomId"],
  overrides: BaselineOverride[] = [],
  attaching = false,
): Promise<Landed | null> {
  const pending = state.readPublication();
  if (pending === null) return null;
  const baseline = state.readBaseline();
  if (baseline === null) return null; // cannot happen: a commit needs a baseline; and the next write drops the record
  const { manifest } = await readManifest(store);
  const found = wentBackwards(baseline, manifest);
  if (found !== null) {
    if (!attaching) throw wentBackwardsError(baseline, found);
    state.writeBaseline(baseline);
    return "no";
  }
  const { landed, generation, head } = pending.proposal
    ? await proposalLanded(state, store, pending, randomId)
    : { landed: await publicationLanded(state, store, pending, manifest), generation: pending.generation, head: pending.head };
  const tree = landed === "yes" && head !== null ? await publishedTree(state, store, pending, overrides) : null;
  if (tree === null || head === null) state.writeBaseline(baseline);
  else state.writeBaseline({ generation, head, tree, ...(manifest?.notebook !== undefined ? { notebook: manifest.notebook } : {}) });
  return tree === null && landed === "yes" ? "unknown" : landed;
}

/**
 * A commit that died with its publication offered to other writers
 * (combine.ts): withdraw the offer, which makes the answer final, then
 * find the commit it landed as, if it did. Its tree is the proposal's own
 * (publishedTree reads `pending.head`); the baseline's head is where it
 * landed.
 */
async function proposalLanded(state: CheckoutState, store: ObjectStore, pending: PublicationRecord, randomId: RandomSource["randomId"]): Promise<{ landed: Landed; generation: number; head: string | null }> {
  const taken = await withdraw(store, { publication: pending.publication, until: pending.proposal!.until }, randomId);
  if (taken.landed === null) return { landed: "no", generation: pending.generation, head: null };
  // Too long ago to tell: the safe side, as for a commit beyond the retained history.
  if (taken.landed === "unknown") return { landed: "unknown", generation: pending.generation, head: null };
  return { landed: "yes", generation: taken.landed.generation, head: taken.landed.head };
}

/**
 * Whether `pending` is in the accepted history (`manifest`, as read). Generations count
 * publications one by one, and every commit's parent is the head before it,
 * so the commit at our generation is found by walking back from the head.
 */
async function publicationLanded(state: CheckoutState, store: ObjectStore, pending: PublicationRecord, manifest: Manifest | null): Promise<Landed> {
  if (manifest === null || manifest.generation < pending.generation) return "no";
  if (manifest.publication === pending.publication) return "yes";
  // Every later manifest lists our pack until a compaction folds it in.
  if (manifest.packs.some((p) => p.key === pending.pack.key)) return "yes";
  if (manifest.generation === pending.generation) return "no";
  const accepted = await loadAcceptedState(store, state.git);
  const at = await commitBack(state.git, accepted.head!, accepted.generation - pending.generation);
  if (at === null) return "unknown"; // beyond the retained history
  return at === pending.head ? "yes" : "no";
}

/** The tree the visible files held when the landed commit scanned them, stored in the cache; null if it cannot be built. */
async function publishedTree(state: CheckoutState, store: ObjectStore, pending: PublicationRecord, overrides: BaselineOverride[]): Promise<string | null> {
  const git = state.git;
  // The commit imports its pack only after its write landed: it may have died first.
  if (!git.hasPack(pending.pack.sha256)) {
    const object = await store.get(pending.pack.key).catch(() => null);
    if (object !== null && createHash("sha256").update(object.body).digest("hex") === pending.pack.sha256) {
      await git.importPack(pending.pack.sha256, object.body).catch(() => {});
    }
  }
  const published = await publishedCommitTree(store, git, pending.head);
  if (published === null) return null;
  try {
    // An offer's commit is in no accepted pack (what landed is its moved
    // copy), and its own pack may be collected from the store and dropped
    // from the cache: its tree, as the baseline's, is written loose.
    if (pending.merged.length === 0 && overrides.length === 0 && !pending.proposal) return published;
    const files = (await git.readFlatTree(published)).files;
    for (const { path, oid } of [...pending.merged, ...overrides]) {
      if (oid === null) files.delete(path);
      else files.set(path, oid);
    }
    return await git.storeFlatTree(files);
  } catch (e) {
    if (e instanceof MissingObjectError) return null;
    throw e;
  }
}

/**
 * The tree of the landed commit `head`. Its own pack may be gone — folded
 * into another by a compaction since, and collected — while the accepted
 * packs still hold it: download those once before giving up.
 */
async function publishedCommitTree(store: ObjectStore, git: CheckoutState["git"], head: string): Promise<string | null> {
  for (let attempt = 0; ; attempt++) {
    try {
      return await git.commitTree(head);
    } catch (e) {
      if (!(e instanceof MissingObjectError)) throw e;
      if (attempt > 0) return null;
      await loadAcceptedState(store, git);
    }
  }
}
