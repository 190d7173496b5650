/**
 * Running a commit's attempts to publish: the I/O of each step the state
 * machine (publish/attempt.ts) names — read, merge, list, combine, write,
 * offer, wait, withdraw — and the ends it reaches, which bring the visible
 * files to what landed. Every decision is the machine's; this file only
 * does what it says and reports what it found (docs/storage-protocol.md,
 * "The attempt, as a state machine").
 */
import { DomainError, type ErrorFile } from "../contract/errors.ts";
import type { OperationOutcome } from "../contract/results.ts";
import type { Baseline } from "./checkout/state.ts";
import { StoreError } from "../store/object-store.ts";
import { deadlinePassed, sleepWithin } from "../store/deadline.ts";
import { bringFiles, refuseOversizeAccepted } from "./checkout/session-materialize.ts";
import type { OpenCheckout } from "./with-checkout.ts";
import type { FlatTree } from "./git/object-cache.ts";
import { conflictError } from "./merge/conflict.ts";
import { treeDiffStat } from "./merge/diffstat.ts";
import { mergeTrees, sameTree } from "./merge/tree-merge.ts";
import { type AcceptedState, lastAccepted, loadAcceptedState, readManifest, rememberAccepted } from "./publish/accepted-state.ts";
import { type AttemptRules, type AttemptState, type Event, next, type Refusal, type Source, start, type Step } from "./publish/attempt.ts";
import { type Carried, dropProposal, fateOf, type Listed, listProposals, othersWaiting, withdraw } from "./publish/combine.ts";
import { commitEnded, measuredWindow, noteListing, noteOthersWaiting, retrySpread, settledContention } from "./publish/contention.ts";
import type { CombinedPublication } from "./publish/manifest.ts";
import { awaitCarried, combineWith, offer, type OwnProposal, unprovenProposal } from "./publish/offer.ts";
import type { Publisher } from "./publish/publisher.ts";
import { takeTurn, type Turn } from "./publish/turn.ts";
import { refuseWentBackwards, storeWentBackwards } from "./publish/went-backwards.ts";
import { aloneOnAccepted, type Current, importOwnPack, type Landed, type LostAttempt, writeAttempt } from "./publish/write.ts";

/**
 * Publish the checkout's changes (scanned, merged against `baselineTree`),
 * taking the store's turn where it orders its writers, until a publication
 * lands or the machine refuses.
 */
export async function publishCommit(checkout: OpenCheckout, baselineTree: FlatTree, message: string): Promise<OperationOutcome> {
  const p = publisherOf(checkout, baselineTree);
  const turn = await takeTurn(p);
  const run = new Attempts(checkout, p, message, turn);
  try {
    return await run.go();
  } finally {
    turn.end();
    commitEnded(p.memory, p.storeId, run.lost);
  }
}

/** What publishing needs of the open checkout and its call (publish/publisher.ts). */
function publisherOf(checkout: OpenCheckout, baselineTree: FlatTree): Publisher {
  const { deps } = checkout;
  return {
    store: deps.store,
    storeId: deps.storeId,
    memory: deps.memory,
    git: checkout.git,
    state: checkout.state,
    baseline: checkout.baseline!,
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
  };
}

/** One commit's attempts: what they found so far, and the handler of each step. */
class Attempts {
  /** Races lost to other commits (the machine's count, for the contention memory). */
  lost = 0;
  private readonly rules: AttemptRules;
  /** The accepted state this process last saw, when the first attempt may build on it. */
  private guess: AcceptedState | null = null;
  private accepted: AcceptedState | null = null;
  /** `current` as a lost write's read-back proved it (or a wait for our proposal saw it). */
  private proved: Current | null = null;
  /** The listing of proposals started with the read, racing writers only. */
  private listing: Promise<Listed> | null = null;
  private listed: Listed | null = null;
  /** Our merge onto the accepted state alone, and what we write (with the proposals carried, when any). */
  private alone: FlatTree | null = null;
  private merged: FlatTree | null = null;
  private carried: (Carried & { merged: FlatTree | null }) | null = null;
  private conflicts: ErrorFile[] = [];
  private started = 0;
  private windowMs = 0;
  /** What our lost write prepared: enough to offer it. */
  private lostAttempt: LostAttempt | null = null;
  /** Our own proposal, once offered. */
  private mine: OwnProposal | null = null;
  private landed: Landed | null = null;
  private landedAt: CombinedPublication | null = null;
  private outOfTime = false;

  constructor(
    private readonly checkout: OpenCheckout,
    private readonly p: Publisher,
    private readonly message: string,
    private readonly turn: Turn,
  ) {
    this.rules = { retries: checkout.deps.commitRetries, ordered: turn.ordered };
  }

  async go(): Promise<OperationOutcome> {
    await this.decideGuess();
    let { state, step } = start(this.guess !== null);
    for (;;) {
      if (step.do === "land") return await this.land(step.how);
      if (step.do === "refuse") throw this.refusal(step.why, state);
      let event: Event;
      try {
        event = await this.perform(step);
      } catch (failure) {
        if (this.mine === null || !storeFailed(failure)) throw failure;
        await this.proveOffered(failure);
        return await this.land("carried");
      }
      ({ state, step } = next(state, event, this.rules));
      if ("lost" in state) this.lost = state.lost;
    }
  }

  /**
   * The state this checkout was last brought to, as this process saw it: a
   * guess that `current` has not moved since. The conditional write checks
   * the guess; a wrong one costs an orphan pack and the read it skipped. In
   * a turn of the store's queue the read is local and nobody can publish
   * before our write, while a stale guess would cost a pack, a flush of the
   * publication record and a lost write inside the turn: read instead. And
   * a writer that lost races lately does not guess: its guess is likely
   * stale, and it is how a winner kept winning (contention.ts); nor does
   * one whose last guess saw others waiting to be carried: it reads, and
   * carries them.
   */
  private async decideGuess(): Promise<void> {
    const { deps } = this.checkout;
    if (!deps.guessCurrent || this.turn.ordered) return;
    const seen = await settledContention(deps.memory, deps.storeId);
    if (seen.level === 0 && !seen.othersWaiting) this.guess = lastAccepted(deps.memory, deps.storeId, this.p.baseline.head, this.p.git);
  }

  private perform(step: Exclude<Step, { do: "land" } | { do: "refuse" }>): Promise<Event> {
    switch (step.do) {
      case "read":
        return this.read(step.from);
      case "merge":
        return this.merge();
      case "list":
        return this.list();
      case "combine":
        return this.combine(step.own);
      case "write":
        return this.write();
      case "offer":
        return this.offer();
      case "forget proposal":
        return this.forget();
      case "withdraw":
        return this.withdraw(step.final);
      case "back off":
        return this.backOff(step.lost);
      case "await carried":
        return this.awaitCarried();
    }
  }

  /**
   * The accepted state from `from`; racing writers list the proposals
   * alongside, so that a writer that keeps winning publishes them too
   * rather than starve them. A guess reads nothing, and waiting for the
   * listing would slow the one writer the guess is for: what it finds is
   * for this process's next commit.
   */
  private async read(from: Source): Promise<Event> {
    const { deps } = this.checkout;
    this.started = this.p.monotonic();
    this.listing = this.turn.ordered ? null : listProposals(deps.store);
    // Not every attempt waits for it (a conflict, nothing to publish): its failure then goes unheard.
    this.listing?.catch(() => {});
    const guess = from === "guess" ? this.guess : null;
    if (guess !== null) noteListing(deps.memory, deps.storeId, this.listing!.then((listed) => othersWaiting(listed, guess)));
    if (from !== "guess") this.guess = null;
    this.accepted = await this.acceptedState(guess);
    this.proved = null;
    this.merged = this.alone = this.carried = null;
    if (this.mine === null) return { got: "accepted" };
    const fate = fateOf(this.accepted.manifest, this.mine.proposal);
    if (typeof fate !== "object") return { got: "accepted", fate };
    this.landedAt = fate.landed;
    return { got: "accepted", fate: "landed" };
  }

  /**
   * The guess, `current` as a lost race's read-back proved it, or the
   * accepted state read from the store as the turn reads it (and remembered
   * as the process's latest). Whichever it is, one that went backwards from
   * the checkout's baseline is refused (went-backwards.ts): a commit never
   * builds on, and so never publishes over, a state older than the one its
   * checkout saw. A guess is at the baseline by construction
   * (lastAccepted), and the conditional write proves it current, but is
   * checked all the same.
   */
  private async acceptedState(guess: AcceptedState | null): Promise<AcceptedState> {
    const { deps } = this.checkout;
    await deps.onStage("fetch");
    let accepted = guess;
    if (accepted === null) {
      const read = this.proved ?? (await readManifest(this.turn.store));
      // What `current` alone says of a store that went backwards is refused before any pack is read.
      refuseWentBackwards(this.checkout.baseline, read.manifest);
      accepted = await loadAcceptedState(this.turn.store, this.p.git, read);
    }
    const backwards = await storeWentBackwards(this.checkout, accepted);
    if (backwards !== null) throw backwards;
    if (guess === null) rememberAccepted(deps.memory, deps.storeId, accepted);
    return accepted;
  }

  /** Our changes merged onto the accepted state; a conflict is written into the files (the machine then refuses). */
  private async merge(): Promise<Event> {
    const { checkout, p } = this;
    const accepted = this.accepted!;
    await checkout.deps.onStage("merge");
    await refuseOversizeAccepted(checkout, p.baselineTree, accepted.files);
    const merge = await mergeTrees(p.git, p.baselineTree, p.local, accepted.files, p.localContents);
    if (merge.conflicts.length > 0) {
      this.turn.end();
      const written = await bringFiles(checkout, merge, targetOf(accepted), accepted.files, { operation: "commit", remoteAccepted: "no" }, p.baselineTree, { conflicts: "write" });
      // A conflicting file left as someone kept writing it still conflicts; it is named all the same.
      this.conflicts = written.conflicts.length > 0 ? written.conflicts : merge.conflicts;
      return { got: "merged", result: "conflict" };
    }
    this.merged = this.alone = merge.result;
    return { got: "merged", result: sameTree(merge.result, accepted.files) ? "nothing new" : "changes" };
  }

  /** Whether others (or we) wait to be carried, as listed alongside the read. */
  private async list(): Promise<Event> {
    const { deps } = this.checkout;
    this.listed = await this.listing!;
    const waiting = othersWaiting(this.listed, this.accepted!);
    noteOthersWaiting(deps.memory, deps.storeId, waiting);
    return { got: "listed", othersWaiting: waiting };
  }

  /** The waiting proposals moved onto the accepted state, ours among them when `own` (combine.ts). */
  private async combine(own: boolean): Promise<Event> {
    this.carried = await combineWith(this.p, this.accepted!, own ? this.mine : null, this.listed!);
    if (this.carried !== null && !own) this.merged = this.carried.merged;
    return { got: "combined", carries: this.carried !== null };
  }

  /** One conditional write of `current`; lost, the read-back is what the next attempt builds on. */
  private async write(): Promise<Event> {
    const ownPublication = this.mine?.proposal.publication ?? null;
    const written = await writeAttempt(this.p, this.accepted!, this.carried, this.mine !== null ? null : this.merged, this.message, this.turn, ownPublication);
    if (written.landed) {
      this.landed = written;
      this.landedAt = written.ownAt;
      return { got: "written", landed: true };
    }
    // What the lost write read back is built on, and offered to, next: not a store that went backwards.
    refuseWentBackwards(this.checkout.baseline, written.current.manifest);
    const { deps } = this.checkout;
    this.windowMs = measuredWindow(deps.memory, deps.storeId, this.p.monotonic() - this.started);
    if (!this.turn.ordered) this.proved = written.current;
    this.lostAttempt = written.attempt;
    // The call's deadline ends the retries as their bound does.
    this.outOfTime = this.p.outOfTime();
    return { got: "written", landed: false, ours: this.mine === null && this.lostAttempt !== null && this.alone !== null, outOfTime: this.outOfTime };
  }

  /** Our lost attempt, offered to the other writers as a proposal (offer.ts). */
  private async offer(): Promise<Event> {
    const accepted = this.accepted!;
    const lost = this.carried === null ? this.lostAttempt! : await aloneOnAccepted(this.p, accepted, this.lostAttempt!, this.alone!, this.message);
    this.mine = await offer(this.p, lost, this.alone!, accepted.files, this.proved?.manifest?.generation ?? accepted.generation);
    return { got: "offered" };
  }

  /** Our proposal expired: nobody can combine it any more, so it never landed. */
  private async forget(): Promise<Event> {
    dropProposal(this.checkout.deps.store, this.mine!.proposal.publication);
    this.mine = null;
    return { got: "forgotten" };
  }

  /**
   * Take our proposal back. `final`: the commit gives up — when that cannot
   * be proved, its record stays and the next call on the checkout settles it
   * before anything else (publication.ts); known not to have landed, for
   * good, the record has nothing left to settle.
   */
  private async withdraw(final: boolean): Promise<Event> {
    const { state } = this.checkout;
    state.checkLock();
    const taken = await withdraw(this.checkout.deps.store, this.mine!.proposal, this.p.randomId).catch((e) => {
      if (final && e instanceof DomainError && e.reason === "PUBLICATION_UNPROVEN") return { landed: "unknown" as const };
      throw e;
    });
    if (taken.landed === "unknown") return { got: "withdrawn", landed: "unknown" };
    if (taken.landed !== null) {
      this.landedAt = taken.landed;
      return { got: "withdrawn", landed: "yes" };
    }
    if (final) state.writeBaseline(this.checkout.baseline!);
    else this.mine = null;
    return { got: "withdrawn", landed: "no" };
  }

  /**
   * A step failed at the store while our proposal was out: another writer
   * may have published it meanwhile, so the failure alone (retry) would
   * hide a publication that may have landed. Taking the proposal back makes
   * its fate final and says it (combine.ts withdraw): landed, and the commit
   * ends as carried; not landed, and the failure stands — nothing was
   * published, nothing is left to settle; or not provable (a store that
   * stopped answering, the deadline passed), and the commit answers
   * PUBLICATION_UNPROVEN, as for a lost write, its record kept for the next
   * call to settle (publication.ts).
   */
  private async proveOffered(failure: unknown): Promise<void> {
    const { state } = this.checkout;
    state.checkLock();
    const taken = await withdraw(this.checkout.deps.store, this.mine!.proposal, this.p.randomId).catch(() => ({ landed: "unknown" as const }));
    if (taken.landed === "unknown") throw unprovenOffer(failure);
    if (taken.landed === null) {
      state.writeBaseline(this.checkout.baseline!);
      throw failure;
    }
    this.landedAt = taken.landed;
  }

  /** Wait a random time up to the spread after the `lost`-th lost race (full jitter). */
  private async backOff(lost: number): Promise<Event> {
    await this.checkout.deps.onStage("retry");
    const spread = retrySpread(lost, this.windowMs);
    if (spread > 0) await this.p.sleep(this.p.random() * spread);
    return { got: "waited" };
  }

  /** Watch `current` for a publication carrying our proposal, publishing it ourselves when nobody else does (offer.ts). */
  private async awaitCarried(): Promise<Event> {
    await this.checkout.deps.onStage("retry");
    const carried = await awaitCarried(this.p, this.mine!, this.proved, this.windowMs);
    if ("landed" in carried) {
      this.landedAt = carried.landed;
      return { got: "carried", landed: true };
    }
    this.proved = carried.current;
    return { got: "carried", landed: false };
  }

  private async land(how: "written" | "carried" | "synchronised"): Promise<OperationOutcome> {
    this.turn.end();
    if (how === "synchronised") return await synchronise(this.checkout, this.accepted!, this.merged!);
    if (how === "carried") return await proposalLanded(this.checkout, this.mine!, this.landedAt!);
    return await landedOutcome(this.checkout, this.landed!, this.merged!);
  }

  private refusal(why: Refusal, state: AttemptState): DomainError {
    if (why === "MERGE_CONFLICT") return conflictError(this.conflicts, "commit");
    if (why === "PUBLICATION_UNPROVEN") return unprovenProposal();
    const lost = "lost" in state ? state.lost : this.lost;
    return new DomainError(
      "RETRIES_EXHAUSTED",
      this.outOfTime
        ? `Other commits won the race ${lost + 1} times in a row until the call deadline; your files are untouched. Call again.`
        : `Other commits won the race ${lost + 1} times in a row; your files are untouched. Call again, or raise --commit-retries.`,
    );
  }
}

/** A failure of the store's own (a retryable STORAGE_FAILURE other than the checkout's private state), which says nothing of a proposal's fate. */
function storeFailed(e: unknown): boolean {
  if (e instanceof StoreError) return true;
  return e instanceof DomainError && e.code === "STORAGE_FAILURE" && e.action === "RETRY" && e.reason !== "LOCAL_STATE";
}

/** The store failed while our proposal was out, and taking it back could not prove whether another writer published it. */
function unprovenOffer(failure: unknown): DomainError {
  return new DomainError(
    "PUBLICATION_UNPROVEN",
    "The store failed while this commit's offer to be published with another was out, and whether another writer published it could not be proved; pull first and look before committing again.",
    { cause: failure },
  );
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

/**
 * Our proposal landed as `at` (a manifest's `combined` says so): bring the
 * files to what it published and move the baseline to its commit there.
 * Changes published before it that it was moved over come with the next
 * pull, as any other writer's.
 */
async function proposalLanded(checkout: OpenCheckout, mine: OwnProposal, at: CombinedPublication): Promise<OperationOutcome> {
  const { deps, git } = checkout;
  const { generation, head } = at;
  dropProposal(deps.store, mine.proposal.publication);
  // The same notebook as the baseline's: the store was checked before the proposal was offered.
  const notebook = checkout.baseline?.notebook;
  const target = { generation, head, tree: mine.tree, ...(notebook !== undefined ? { notebook } : {}) };
  await bringFiles(checkout, { result: mine.merged, conflicts: [] }, target, mine.merged, { operation: "commit", remoteAccepted: "yes" }, checkout.local, { conflicts: "leave" });
  await deps.onStage("diffstat");
  const files = await treeDiffStat(git, mine.parentFiles, mine.merged, checkout.lineCounts);
  return { path: checkout.dir, generation, files };
}

/**
 * Our publication landed: remember it as the accepted state (when its ETag
 * is ours), import our pack, bring the files to it, and report the diffstat.
 */
async function landedOutcome(checkout: OpenCheckout, landed: Landed, merged: FlatTree): Promise<OperationOutcome> {
  const { deps, git } = checkout;
  const { uploaded, manifest, etag, parent } = landed;
  const { head, built } = uploaded;
  if (etag !== null) {
    rememberAccepted(deps.memory, deps.storeId, { manifest, etag, generation: manifest.generation, head, tree: built.tree, files: merged, trees: built.trees, dirs: built.dirs });
  }
  // Accepted all the same when this fails: the next call finds our pack missing from the cache and downloads it like any other.
  await importOwnPack(git, uploaded).catch(() => {});
  const next = { generation: manifest.generation, head, tree: built.tree, notebook: manifest.notebook };
  // The published tree holds the scanned files' edits: a file left as someone wrote it since keeps its scanned content as baseline.
  await bringFiles(checkout, { result: merged, conflicts: [] }, next, merged, { operation: "commit", remoteAccepted: "yes" }, checkout.local, { conflicts: "leave" });
  await deps.onStage("diffstat");
  const files = await treeDiffStat(git, parent.files, merged, checkout.lineCounts);
  return { path: checkout.dir, generation: manifest.generation, files };
}
