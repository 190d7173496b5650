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
import type { Baseline, Publication } from "./checkout/state.ts";
import { type AcceptedState, lastAccepted, loadAcceptedState, readManifest, rememberAccepted } from "./publish/accepted-state.ts";
import { conflictError } from "./merge/conflict.ts";
import { refuseProtectedChanges } from "./protect.ts";
import { treeDiffStat } from "./merge/diffstat.ts";
import {
  baselineFilesOrRefuse,
  bringFiles,
  closeCheckout,
  deadlinePassed,
  type EngineDeps,
  localBytes,
  type OpenCheckout,
  openCheckout,
  localFailure,
  privateStateMissing,
  pullRequired,
  scanLocal,
  sleepWithin,
} from "./engine.ts";
import type { BuiltTree, FlatTree } from "./git/object-cache.ts";
import { MissingObjectError } from "./git/objects.ts";
import { compactPacks, DEFAULT_COMPACTION, needsCompaction } from "./publish/compact.ts";
import { type Chain, combine, dropProposal, fateOf, type Withdrawn, type Listed, listProposals, othersWaiting, PROPOSAL_GENERATIONS, type Proposal, postProposal, withdraw } from "./publish/combine.ts";
import { commitEnded, contentionOf, measuredWindow, noteOthersWaiting, retrySpread } from "./publish/contention.ts";
import { type CombinedPublication, combinedList, formatFor, type HistoryPackDescriptor, MANIFEST_KEY, type Manifest, newNotebookId, newPublicationId, type PackDescriptor, packKey, serializeManifest } from "./publish/manifest.ts";
import { refuseWentBackwards, storeWentBackwards } from "./publish/went-backwards.ts";
import { decodeText } from "./merge/text.ts";
import { mergeTrees, sameTree } from "./merge/tree-merge.ts";
import { findMarkerBlocks } from "./merge/xdiff/index.ts";

export interface CommitInput {
  /** The checkout's directory. */
  path: string;
  message: string;
}

export async function commit(deps: EngineDeps, input: CommitInput): Promise<OperationOutcome> {
  const { path, message } = input;
  validateMessage(message);
  const checkout = await openCheckout(deps, path, false);
  try {
    // PULL_REQUIRED and UNRESOLVED_MARKERS come before any store access.
    if (checkout.baseline === null) throw pullRequired(checkout.lost, ", then commit. No remote state was touched.");
    await scanLocal(checkout);
    const baselineTree = await baselineFilesOrRefuse(checkout);
    await refuseMarkers(checkout, baselineTree);
    await refuseProtectedChanges(checkout, baselineTree);
    return await publish(checkout, baselineTree, message);
  } catch (e) {
    // A baseline object the cache lost or cannot read: a pull repairs it.
    if (e instanceof MissingObjectError) throw privateStateMissing(e);
    throw localFailure(checkout, e);
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
  // Races lost to other commits; a stale guess is not one (no backoff, no retry spent).
  let lost = 0;
  try {
    const seen = contentionOf(deps.memory, deps.storeId);
    // The state this checkout was last brought to, as this process saw it: a
    // guess that `current` has not moved since. The conditional write checks
    // the guess; a wrong one costs an orphan pack and the read it skipped.
    // In a turn of the store's line the read is local and nobody can publish
    // before our write, while a stale guess would cost a pack, a flush of the
    // publication record and a lost write inside the turn: read instead. And
    // a writer that lost races lately does not guess: its guess is likely
    // stale, and it is how a winner kept winning (contention.ts); nor does
    // one whose last guess saw others waiting to be carried: it reads, and
    // carries them (below).
    let guess =
      deps.guessCurrent && !turn.ordered && seen.level === 0 && !seen.othersWaiting
        ? lastAccepted(deps.memory, deps.storeId, checkout.baseline?.head ?? null, checkout.git)
        : null;
    // `current` as the read-back of a lost race proved it: the next attempt
    // builds on it instead of reading again.
    let proved: Current | null = null;
    // This commit's proposal, once a lost race made it offer its publication
    // to the other writers (combine.ts): from then on it lands when any
    // writer publishes it, this one included.
    let posted: Posted | null = null;
    for (;;) {
      const started = performance.now();
      // Racing writers (no turns): whether others wait to be published is
      // listed alongside the read of `current`, so that a writer that keeps
      // winning publishes them too rather than starve them. A guess reads
      // nothing, and waiting for the listing would slow the one writer the
      // guess is for: what it finds is for this process's next commit.
      const peek = turn.ordered ? null : listProposals(deps.store);
      const guessed = guess;
      const deferPeek = guessed !== null;
      if (guessed !== null) void peek!.then((listed) => noteOthersWaiting(deps.memory, deps.storeId, othersWaiting(listed, guessed)));
      const accepted = await acceptedState(checkout, guess, proved, turn);
      proved = null;
      if (posted !== null) {
        const fate = fateOf(accepted.manifest, posted.proposal);
        if (typeof fate === "object") return await proposalLanded(checkout, posted, fate.landed, turn);
        if (fate === "unknown") throw unprovenProposal();
        // Expired: nobody can combine it any more, so it never landed. Start afresh.
        if (fate === "expired") {
          dropProposal(deps.store, posted.proposal.publication);
          posted = null;
        }
      }
      let merged: FlatTree | null = null;
      if (posted === null) {
        merged = await mergeOrConflict(checkout, baselineTree, accepted, turn);
        if (sameTree(merged, accepted.files)) {
          // Nothing to publish against the guess: the store may have news.
          if (guess !== null) {
            guess = null;
            continue;
          }
          turn.end();
          return await synchronise(checkout, accepted, merged);
        }
      }
      // Writers that lost races, this one or others, wait to be published:
      // publish them along (combine.ts).
      const listed = peek === null || deferPeek ? null : await peek;
      if (listed !== null) noteOthersWaiting(deps.memory, deps.storeId, othersWaiting(listed, accepted));
      const chain = listed !== null && (posted !== null || othersWaiting(listed, accepted)) ? await combineWith(checkout, baselineTree, accepted, posted, listed) : null;
      if (posted !== null && chain === null) {
        // Our proposal no longer moves cleanly onto the accepted state: take
        // it back, and merge as a fresh commit would (which writes a conflict).
        checkout.state.checkLock();
        const taken = await withdraw(deps.store, posted.proposal);
        if (taken.landed === "unknown") throw unprovenProposal();
        if (taken.landed !== null) return await proposalLanded(checkout, posted, taken.landed, turn);
        posted = null;
        continue;
      }
      // Our merge onto the accepted state alone: what our files become if this
      // attempt is lost and offered, since the proposals it carries may never land.
      const alone = merged;
      if (chain !== null && posted === null) merged = chain.merged;
      const outcome = await tryPublication(checkout, accepted, chain, merged, message, turn, posted);
      if (outcome.landed) return outcome.outcome;
      // What the lost write read back is built on, and offered to, below: not a store that went backwards.
      refuseWentBackwards(checkout.baseline, outcome.current.manifest);
      const windowMs = measuredWindow(deps.memory, deps.storeId, performance.now() - started);
      if (!turn.ordered) proved = outcome.current;
      if (guess !== null) {
        guess = null;
        continue;
      }
      // The call's deadline ends the retries as their bound does.
      const outOfTime = deadlinePassed(deps);
      if (posted === null && !turn.ordered && outcome.own !== null && alone !== null && lost < deps.commitRetries && !outOfTime) {
        posted = await offer(checkout, outcome.own, alone, accepted.files, proved?.manifest?.generation ?? accepted.generation);
      }
      if (lost >= deps.commitRetries || outOfTime) {
        if (posted !== null) {
          // Take the proposal back before answering, or learn it landed after all.
          // When that cannot be proved, its record stays: the next call on the
          // checkout settles it before anything else (publication.ts).
          checkout.state.checkLock();
          const taken: Withdrawn = await withdraw(deps.store, posted.proposal).catch((e) => {
            if (e instanceof DomainError && e.reason === "PUBLICATION_UNPROVEN") return { landed: "unknown" };
            throw e;
          });
          if (taken.landed !== null && taken.landed !== "unknown") return await proposalLanded(checkout, posted, taken.landed, turn);
          // Known not to have landed, for good: the record has nothing left to settle.
          if (taken.landed === null) checkout.state.writeBaseline(checkout.baseline!);
        }
        throw new DomainError(
          "RETRIES_EXHAUSTED",
          outOfTime
            ? `Other commits won the race ${lost + 1} times in a row until the call deadline; your files are untouched. Call again.`
            : `Other commits won the race ${lost + 1} times in a row; your files are untouched. Call again, or raise --commit-retries.`,
        );
      }
      await deps.onStage("retry");
      lost++;
      if (posted === null) {
        await pause(checkout, retrySpread(lost, windowMs));
        continue;
      }
      // Offered: the next writer to publish publishes ours too. Watch
      // `current` for that, and publish it ourselves only when nobody else
      // publishes (combine.ts).
      const carried = await awaitCarried(checkout, posted, proved, windowMs);
      if ("landed" in carried) return await proposalLanded(checkout, posted, carried.landed, turn);
      proved = carried.current;
    }
  } finally {
    commitEnded(deps.memory, deps.storeId, lost);
  }
}

/** How many publications a proposer sees go by without its proposal before it publishes the proposal itself. */
const PATIENCE = 12;
/** How many looks in a row `current` must stand still before a proposer publishes its proposal itself: nobody else is publishing. */
const STILL_LOOKS = 3;
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
 * publishing) or moved PATIENCE times without us (a writer that lists no
 * proposals, or ours no longer merges), or when the proposal expired.
 */
async function awaitCarried(
  checkout: OpenCheckout,
  posted: Posted,
  last: Current | null,
  windowMs: number,
): Promise<{ landed: CombinedPublication } | { current: Current }> {
  const { deps } = checkout;
  let gap = Math.min(windowMs, FIRST_GAP_CAP_MS);
  let movedAt = performance.now();
  for (let moved = 0, still = 0; ; ) {
    await sleepWithin(deps, Math.min(MAX_LOOK_MS, Math.max(MIN_LOOK_MS, gap)) * (0.5 + deps.random()));
    const now = await readManifest(deps.store);
    const fate = fateOf(now.manifest, posted.proposal);
    if (typeof fate === "object") return fate;
    if (fate !== "waiting") return { current: now };
    if (now.etag === last?.etag) {
      if (++still >= STILL_LOOKS) return { current: now };
    } else {
      const at = performance.now();
      gap = (gap + (at - movedAt)) / 2;
      movedAt = at;
      still = 0;
      if (++moved >= PATIENCE) return { current: now };
    }
    last = now;
  }
}

/** A proposer that looked again only after its proposal's entry would have left the list (combine.ts fateOf). */
function unprovenProposal(): DomainError {
  return new DomainError(
    "PUBLICATION_UNPROVEN",
    "So many publications landed while this commit waited that it cannot prove whether its own was among them; pull first and look before committing again.",
  );
}

/** Wait a random time up to `spread` ms (full jitter). */
async function pause(checkout: OpenCheckout, spread: number): Promise<void> {
  const { deps } = checkout;
  if (spread > 0) await sleepWithin(deps, deps.random() * spread);
}

/**
 * The guess, `current` as a lost race's read-back proved it, or the accepted
 * state read from the store as the turn reads it (and remembered as the
 * process's latest). Whichever it is, one that went backwards from the
 * checkout's baseline is refused (went-backwards.ts): a commit never builds
 * on, and so never publishes over, a state older than the one its checkout
 * saw. A guess is at the baseline by construction (lastAccepted), and the
 * conditional write proves it current, but is checked all the same.
 */
async function acceptedState(checkout: OpenCheckout, guess: AcceptedState | null, proved: Current | null, turn: Turn): Promise<AcceptedState> {
  const { deps } = checkout;
  await deps.onStage("fetch");
  let accepted = guess;
  if (accepted === null) {
    const read = proved ?? (await readManifest(turn.store));
    // What `current` alone says of a store that went backwards is refused before any pack is read.
    refuseWentBackwards(checkout.baseline, read.manifest);
    accepted = await loadAcceptedState(turn.store, checkout.git, read);
  }
  const backwards = await storeWentBackwards(checkout, accepted);
  if (backwards !== null) throw backwards;
  if (guess === null) rememberAccepted(deps.memory, deps.storeId, accepted);
  return accepted;
}

/** The merge of the checkout's changes into `accepted`; a conflict is written into the files and thrown. */
async function mergeOrConflict(checkout: OpenCheckout, baselineTree: FlatTree, accepted: AcceptedState, turn: Turn): Promise<FlatTree> {
  await checkout.deps.onStage("merge");
  const merge = await mergeTrees(checkout.git, baselineTree, checkout.local, accepted.files, checkout.localContents);
  if (merge.conflicts.length > 0) {
    turn.end();
    const written = await bringFiles(checkout, merge, targetOf(accepted), accepted.files, { operation: "commit", remoteAccepted: "no" }, baselineTree, { conflicts: "write" });
    // A conflicting file left as someone kept writing it still conflicts; it is named all the same.
    throw conflictError(written.conflicts.length > 0 ? written.conflicts : merge.conflicts, "commit");
  }
  return merge.result;
}

/**
 * Nothing to publish: a synchronisation, which brings the checkout to the
 * accepted state (every local change is already in it).
 */
async function synchronise(checkout: OpenCheckout, accepted: AcceptedState, merged: FlatTree): Promise<OperationOutcome> {
  // Every local change is in the accepted state: files left as someone wrote them keep their scanned content as baseline.
  await bringFiles(checkout, { result: merged, conflicts: [] }, targetOf(accepted), accepted.files, { operation: "commit", remoteAccepted: "no" }, checkout.local, { conflicts: "leave" });
  return { path: checkout.dir, generation: accepted.generation, files: [] };
}

function targetOf(accepted: AcceptedState): Baseline {
  const notebook = accepted.manifest?.notebook;
  return { generation: accepted.generation, head: accepted.head, tree: accepted.tree, ...(notebook !== undefined ? { notebook } : {}) };
}

/** `current` as read: the manifest (null when absent) and its ETag. */
type Current = Awaited<ReturnType<typeof readManifest>>;

/** The new commit and its pack, built and uploaded. */
interface Uploaded {
  head: string;
  built: BuiltTree;
  pack: Uint8Array;
  descriptor: PackDescriptor;
  /** The pack, when the store writes it together with `current` (object-store.ts `putWith`) rather than uploaded first. */
  along: Array<{ key: string; body: Uint8Array }> | null;
}

/** A commit's own proposal, posted (offer), and what the commit needs once it lands. */
interface Posted {
  proposal: Proposal;
  /** The tree the visible files are brought to: the merge the proposal was built from. */
  merged: FlatTree;
  /** Its built tree: the baseline's tree once it lands. */
  tree: string;
  /** The files of the state it was built on, for its diffstat. */
  parentFiles: FlatTree;
}

/** What a lost publication attempt had prepared: enough to offer it as a proposal. */
interface Prepared {
  uploaded: Uploaded;
  /** Its publication record: the publication id it tried to write, its pack, commit and merged-in paths. */
  record: Publication;
  /** The tree it published: ours, on top of the proposals it carried, if any. */
  merged: FlatTree;
}

/**
 * One publication attempt on top of `accepted`, with the proposals `chain`
 * moved onto it (then `merged`, this commit's own tree, on top of them;
 * null when this commit's proposal is itself in the chain): build and
 * upload the pack, choose the pack list (compacting it when long), record
 * the publication, and replace `current` conditionally. The outcome when
 * it landed; when another publication won, `current` as read back and what
 * was prepared.
 */
async function tryPublication(
  checkout: OpenCheckout,
  accepted: AcceptedState,
  chain: Chain | null,
  merged: FlatTree | null,
  message: string,
  turn: Turn,
  posted: Posted | null,
): Promise<{ landed: true; outcome: OperationOutcome } | { landed: false; current: Current; own: Prepared | null }> {
  const { deps } = checkout;
  const parent = chain?.state ?? accepted;
  const uploaded = await buildAndUpload(checkout, accepted, parent, merged, message, chain?.objects ?? []);
  const { packs, history } = await packList(checkout, accepted, uploaded);
  const generation = parent.generation + (merged === null ? 0 : 1);
  const combined = combinedList(accepted.manifest, generation, chain?.combined ?? []);
  // Minted with generation 1, and by this version's first commit to a store that has none.
  const notebook = accepted.manifest?.notebook ?? newNotebookId();
  const manifest: Manifest = {
    format: formatFor(history, combined, notebook),
    notebook,
    generation,
    head: uploaded.head,
    publication: newPublicationId(),
    packs,
    ...(history.length > 0 ? { history } : {}),
    ...(combined.length > 0 ? { combined } : {}),
  };
  await deps.onStage("publish");
  let record: Publication | null = null;
  if (merged !== null) {
    // Should this process die once the write is sent, the next call learns
    // from this record whether it landed (publication.ts). A commit whose
    // proposal is posted keeps the proposal's record: it lands as `combined` says.
    record = {
      publication: manifest.publication,
      pack: { key: uploaded.descriptor.key, sha256: uploaded.descriptor.sha256 },
      generation: manifest.generation,
      head: uploaded.head,
      merged: mergedIn(checkout.local, merged),
    };
    checkout.state.recordPublication(checkout.baseline!, record);
  }
  // The turn ends as soon as the write is visible to the other writers,
  // before the store flushes it (sqlite.ts): the next turn overlaps that flush.
  // A call stopped and taken over since it read `current` publishes nothing (checkout/lock.ts).
  checkout.state.checkLock();
  const written = await conditionalReplace(deps.store, accepted, manifest, uploaded.along, () => turn.end());
  if (!written.landed) {
    const own = merged !== null && record !== null ? { uploaded, record, merged } : null;
    return { landed: false, current: written.current, own };
  }
  if (chain !== null) dropCombined(deps.store, chain);
  if (posted !== null) {
    // The commits it moved exist only in this call's memory and our pack.
    await importOwnPack(checkout, uploaded).catch(() => {});
    const at = chain!.combined.find((c) => c.publication === posted.proposal.publication)!;
    return { landed: true, outcome: await proposalLanded(checkout, posted, at, turn) };
  }
  turn.end();
  return { landed: true, outcome: await landedOutcome(checkout, parent, merged!, uploaded, manifest, written.etag) };
}

/**
 * The waiting proposals moved onto `accepted` (combine.ts) and, for a
 * commit with no proposal of its own, its changes merged on top of them.
 * Null when there is nothing to combine — or when our own proposal is not
 * among those that moved cleanly, or our changes would not merge cleanly
 * onto the others' (we then publish alone: a conflict with a proposal that
 * may never land is not one to answer).
 */
async function combineWith(
  checkout: OpenCheckout,
  baselineTree: FlatTree,
  accepted: AcceptedState,
  posted: Posted | null,
  listed: Listed,
): Promise<(Chain & { merged: FlatTree | null }) | null> {
  await checkout.deps.onStage("combine");
  const chain = await combine(checkout.deps.store, checkout.git, accepted, posted?.proposal ?? null, listed);
  if (posted !== null) return chain.combined.some((c) => c.publication === posted.proposal.publication) ? { ...chain, merged: null } : null;
  if (chain.combined.length === 0) return null;
  const again = await mergeTrees(checkout.git, baselineTree, checkout.local, chain.state.files, checkout.localContents);
  if (again.conflicts.length > 0 || sameTree(again.result, chain.state.files)) return null;
  return { ...chain, merged: again.result };
}

/**
 * Offer a lost attempt to the other writers (combine.ts): its pack stays
 * in the store, and a proposal names it. Recorded first, so that should
 * this process die from here on, the next call on the checkout withdraws
 * it before anything else (publication.ts). Once it lands, the files
 * become `alone` — our merge onto the accepted state `parentFiles` the
 * attempt read, without the proposals it carried, which may never land.
 */
async function offer(checkout: OpenCheckout, own: Prepared, alone: FlatTree, parentFiles: FlatTree, generation: number): Promise<Posted> {
  const { deps } = checkout;
  const { uploaded } = own;
  const proposal: Proposal = {
    format: 1,
    publication: own.record.publication,
    head: uploaded.head,
    pack: uploaded.descriptor,
    until: generation + PROPOSAL_GENERATIONS,
  };
  checkout.state.recordPublication(checkout.baseline!, { ...own.record, proposal: { until: proposal.until } });
  try {
    // A store that writes a pack only along with `current` (sqlite.ts) has not kept it.
    if (uploaded.along !== null) await deps.store.putIfAbsent(uploaded.descriptor.key, uploaded.pack);
    await importOwnPack(checkout, uploaded);
  } catch {
    // Then no one can combine it; it expires unused.
  }
  checkout.state.checkLock();
  await postProposal(deps.store, proposal);
  // The baseline's tree once it lands. What lands is a moved copy of our
  // commit, so no accepted pack holds this tree, and our pack may be
  // collected from the store and dropped from the cache: written loose.
  const tree = await checkout.git.storeFlatTree(alone);
  return { proposal, merged: alone, tree, parentFiles };
}

/**
 * Our proposal landed as `generation` (a manifest's `combined` says so):
 * bring the files to what it published and move the baseline to its commit
 * there. Changes published before it that it was moved over come with the
 * next pull, as any other writer's.
 */
async function proposalLanded(checkout: OpenCheckout, posted: Posted, at: CombinedPublication, turn: Turn): Promise<OperationOutcome> {
  const { deps, git } = checkout;
  const { generation, head } = at;
  turn.end();
  dropProposal(deps.store, posted.proposal.publication);
  // The same notebook as the baseline's: the store was checked before the proposal was offered.
  const notebook = checkout.baseline?.notebook;
  const target = { generation, head, tree: posted.tree, ...(notebook !== undefined ? { notebook } : {}) };
  await bringFiles(checkout, { result: posted.merged, conflicts: [] }, target, posted.merged, { operation: "commit", remoteAccepted: "yes" }, checkout.local, { conflicts: "leave" });
  await deps.onStage("diffstat");
  const files = await treeDiffStat(git, posted.parentFiles, posted.merged, checkout.lineCounts);
  return { path: checkout.dir, generation, files };
}

/** Proposals a landed publication combined are litter now: delete them (gc would, later). */
function dropCombined(store: ObjectStore, chain: Chain): void {
  for (const c of chain.combined) dropProposal(store, c.publication);
}

/**
 * Our commit on `parent` (none when `merged` is null: the chain's head is
 * the head), and one pack of everything `accepted` lacks: the chain's
 * objects, then ours.
 */
async function buildAndUpload(
  checkout: OpenCheckout,
  accepted: AcceptedState,
  parent: AcceptedState,
  merged: FlatTree | null,
  message: string,
  chainObjects: string[],
): Promise<Uploaded> {
  const { deps, git } = checkout;
  await deps.onStage("pack");
  const newObjects = new Set(chainObjects);
  let head = parent.head!;
  let built: BuiltTree = { tree: parent.tree!, trees: parent.trees, dirs: parent.dirs };
  if (merged !== null) {
    // Only the directories that differ from the parent's tree are built.
    const { tree, files, trees, dirs } = parent;
    built = await git.writeFlatTree(merged, tree === null ? undefined : { tree, files, trees, dirs });
    head = await git.writeCommit({ tree: built.tree, parent: parent.head, message, when: deps.now(), agent: deps.agent() });
    newObjects.add(head);
    for (const t of built.trees) if (!accepted.trees.has(t)) newObjects.add(t);
    const known = new Set(accepted.files.values());
    for (const oid of new Set(merged.values())) if (!known.has(oid)) newObjects.add(oid);
  }
  const pack = await git.packObjects([...newObjects]);
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
  const next = { generation: manifest.generation, head, tree: built.tree, notebook: manifest.notebook };
  // The published tree holds the scanned files' edits: a file left as someone wrote it since keeps its scanned content as baseline.
  await bringFiles(checkout, { result: merged, conflicts: [] }, next, merged, { operation: "commit", remoteAccepted: "yes" }, checkout.local, { conflicts: "leave" });
  await deps.onStage("diffstat");
  const files = await treeDiffStat(git, accepted.files, merged, checkout.lineCounts);
  return { path: checkout.dir, generation: manifest.generation, files };
}

/** Where `published` differs from the visible files `local`: each path with what the visible file holds (null = absent). */
function mergedIn(local: FlatTree, published: FlatTree): Array<{ path: string; oid: string | null }> {
  const merged: Array<{ path: string; oid: string | null }> = [];
  for (const [path, oid] of published) if (local.get(path) !== oid) merged.push({ path, oid: local.get(path) ?? null });
  for (const [path, oid] of local) if (!published.has(path)) merged.push({ path, oid });
  return merged;
}

/**
 * One conditional write of `current`: whether our manifest was accepted, with
 * the ETag it left (null when others published since), or else `current` as
 * read back, which the next attempt builds on. When the response
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
): Promise<{ landed: true; etag: string | null } | { landed: false; current: Current }> {
  const body = serializeManifest(manifest);
  try {
    const result =
      along !== null && store.putWith
        ? await store.putWith(along, MANIFEST_KEY, body, accepted.etag, committed)
        : accepted.etag === null
          ? await store.putIfAbsent(MANIFEST_KEY, body)
          : await store.putIfMatch(MANIFEST_KEY, body, accepted.etag);
    if (result.ok) return { landed: true, etag: result.etag };
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
  if (now.manifest?.publication === manifest.publication) return { landed: true, etag: now.etag };
  // Landed, and others published since: their ETag is not ours to remember.
  if (now.manifest?.packs.some((p) => p.key === ownPack)) return { landed: true, etag: null };
  return { landed: false, current: now };
}
