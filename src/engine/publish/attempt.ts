/**
 * A commit's way to a publication, as a state machine: pure, with no I/O
 * (docs/storage-protocol.md, "The attempt, as a state machine"). The
 * runner (runner.ts) does what each step says — read `current`, merge,
 * write, offer, wait, withdraw — and reports what it found as an event;
 * `next` says what to do then. So every decision of the publish path is
 * here, in one place, and tested without a store (test/engine/attempt.test.ts:
 * a table of transitions, and a property test that drives random store
 * answers through it and checks the invariants the protocol rests on).
 *
 * Each state carries what the commit found so far (the accepted state it
 * read, its merge, its lost write, its proposal), and each step carries what
 * the runner needs to do it: the runner keeps nothing between steps.
 *
 * The states, and the words for them (docs/glossary.md):
 * - **recalling**: asking this process's memory whether to guess;
 * - **guessing**: building on the accepted state this process last saw,
 *   without reading `current` — the conditional write checks the guess;
 * - **reading**: building on `current` as read now;
 * - **proved**: building on `current` as the read-back of a lost write
 *   proved it (no second read);
 * - **offered**: this commit's own attempt is posted as a proposal, for the
 *   next writer to carry; it lands as a manifest's `combined` says;
 * - **withdrawing**: taking the proposal back (it conflicts now, the
 *   retries are spent, or the store failed while it was out), which makes
 *   its fate final;
 * and the ends: **landed** (written, carried, or nothing to publish),
 * **refused** (a conflict, spent retries, a fate that cannot be proved, a
 * store that went backwards, or a failure that stands).
 */
import type { ErrorFile } from "../../contract/errors.ts";
import type { Baseline } from "../checkout/state.ts";
import type { FlatTree } from "../git/object-cache.ts";
import { conflictError } from "../merge/conflict.ts";
import { sameTree, type TreeMerge } from "../merge/tree-merge.ts";
import type { AcceptedState, ManifestRead } from "./accepted-state.ts";
import { type Carried, fateOf, type Listed } from "./combine.ts";
import type { CombinedPublication } from "./manifest.ts";
import type { OwnProposal } from "./offer.ts";
import { exhausted, storeFailed, unprovenOffer, unprovenProposal } from "./refusals.ts";
import { historyWentBackwards, wentBackwards, wentBackwardsError } from "./went-backwards.ts";
import type { Landed, LostAttempt } from "./write.ts";

/** Why a commit ends without landing: the table's tokens, or a failure that stands as it is. */
export type Refusal = "MERGE_CONFLICT" | "RETRIES_EXHAUSTED" | "PUBLICATION_UNPROVEN" | "HISTORY_INVALID" | "failed";

/** The listing of proposals started with a read (racing writers only). */
export type Listing = Promise<Listed>;

/** The accepted state an attempt builds on, with when its read began (the window is measured from it) and the listing started alongside. */
export interface Read {
  accepted: AcceptedState;
  started: number;
  listing: Listing | null;
}

/** What an attempt of our own holds, by the event it waits for. */
export type Own =
  | { awaits: "current"; guess: AcceptedState | null }
  | { awaits: "accepted"; started: number; listing: Listing | null }
  | { awaits: "remembered" | "merged"; read: Read }
  | { awaits: "conflicts written"; conflicts: ErrorFile[] }
  | { awaits: "listed" | "combined"; read: Read; alone: FlatTree }
  /** `alone`: our merge onto the accepted state; `merged`: what is written (on the proposals carried, when `carried`). */
  | { awaits: "written"; read: Read; alone: FlatTree; merged: FlatTree; carried: boolean }
  /** Lost: `proved` is `current` as the write's read-back proved it (null in a turn, which reads again). */
  | { awaits: "offered"; proved: ManifestRead }
  | { awaits: "waited"; proved: ManifestRead | null };

/** What a commit whose proposal is out holds, by the event it waits for. */
export type Out =
  | { awaits: "carried" | "current" | "written" }
  | { awaits: "accepted"; started: number; listing: Listing | null }
  | { awaits: "remembered" | "forgotten" | "listed" | "combined"; read: Read };

/** Counted over the whole commit: races lost, and the last window measured (contention.ts). */
interface Counts {
  lost: number;
  windowMs: number;
}

/** What the commit knows between steps. */
export type AttemptState = Counts &
  (
    | { state: "recalling"; at: { awaits: "contention" | "recalled" } }
    | { state: "guessing" | "reading" | "proved"; at: Own }
    | { state: "offered"; mine: OwnProposal; at: Out }
    | { state: "withdrawing"; mine: OwnProposal; then: "afresh" }
    | { state: "withdrawing"; mine: OwnProposal; then: "give up"; outOfTime: boolean }
    | { state: "withdrawing"; mine: OwnProposal; then: "prove"; failure: unknown }
    | { state: "landed"; how: Landing["how"] }
    | { state: "refused"; why: Refusal }
  );

/** What landed, and what the files are brought to. */
export type Landing =
  | { how: "written"; landed: Landed; merged: FlatTree }
  | { how: "carried"; mine: OwnProposal; at: CombinedPublication }
  | { how: "synchronised"; accepted: AcceptedState; merged: FlatTree };

/** What the runner does next. */
export type Step =
  /** Whether this process lost races lately, or saw others waiting, once a listing still out is answered. */
  | { do: "settle contention" }
  /** The accepted state this process last saw, at the checkout's baseline. */
  | { do: "recall" }
  /**
   * Begin an attempt: `current` from its source; racing writers list the
   * proposals alongside (`list`) — a guess does not wait for its listing,
   * which is noted for the process's next commit.
   */
  | { do: "read"; from: "read"; list: boolean }
  | { do: "read"; from: "proved"; proved: ManifestRead; list: boolean }
  | { do: "read"; from: "guess"; guess: AcceptedState; list: boolean }
  /** The accepted state `current` names (its packs; a guess is loaded already), and its history at the baseline's generation. */
  | { do: "load"; current: ManifestRead }
  | { do: "load"; guess: AcceptedState }
  /** Remember it as the process's latest. */
  | { do: "remember"; accepted: AcceptedState }
  /** Merge the local changes onto the accepted state. */
  | { do: "merge"; accepted: AcceptedState }
  /** A conflict: end the turn (nothing is written to the store) and write the merge, blocks and all, into the files. */
  | { do: "write conflicts"; accepted: AcceptedState; merge: TreeMerge }
  /** Wait for the listing of proposals started with the read. */
  | { do: "list"; listing: Listing; accepted: AcceptedState }
  /** Move the waiting proposals onto the accepted state: ours among them, or our changes on top of them. */
  | { do: "combine"; own: false; accepted: AcceptedState; listed: Listed }
  | { do: "combine"; own: true; mine: OwnProposal; accepted: AcceptedState; listed: Listed }
  /**
   * Write one publication, conditionally: `merged` on the proposals
   * `carried`, or (null) our proposal among them, `own`. Lost, the window
   * from the read `started` is measured.
   */
  | { do: "write"; accepted: AcceptedState; carried: Carried | null; merged: FlatTree | null; own: string | null; started: number }
  /** Post our lost attempt as a proposal: `alone` on `accepted` (made anew when it `carried` others), at `generation`. */
  | { do: "offer"; accepted: AcceptedState; attempt: LostAttempt; alone: FlatTree; carried: boolean; generation: number }
  /** Forget our proposal: it expired, nobody can carry it any more. */
  | { do: "forget proposal"; mine: OwnProposal }
  /**
   * Take our proposal back, which makes its fate final. `final`: the commit
   * gives up after it (not landed, its record ends); `failed`: the store
   * failed while it was out, and any failure of taking it back leaves its
   * fate unknown.
   */
  | { do: "withdraw"; mine: OwnProposal; final: boolean; failed: boolean }
  /** A pause of backoff after the `lost`-th lost race. */
  | { do: "back off"; lost: number; windowMs: number }
  /** Watch `current`, last seen as `last`, for a publication carrying our proposal. */
  | { do: "await carried"; mine: OwnProposal; last: ManifestRead; windowMs: number }
  /** Ends: end the turn and bring the files to what landed, or answer the refusal. */
  | ({ do: "land" } & Landing)
  | { do: "refuse"; why: Refusal; error: unknown };

/** What the runner found, step by step. */
export type Event =
  | { got: "contention"; level: number; othersWaiting: boolean }
  | { got: "recalled"; guess: AcceptedState | null }
  | { got: "current"; current: ManifestRead; started: number; listing: Listing | null }
  /** `at`: the commit the store's history holds at the baseline's generation, when it is past it and the cache reaches (went-backwards.ts). */
  | { got: "accepted"; accepted: AcceptedState; at: string | null }
  | { got: "remembered" }
  | { got: "merged"; merge: TreeMerge }
  | { got: "conflicts written"; conflicts: ErrorFile[] }
  | { got: "listed"; listed: Listed; othersWaiting: boolean }
  /** `merged`: our changes on top of the proposals carried (when we carry others' only). */
  | { got: "combined"; carried: Carried | null; merged: FlatTree | null }
  | { got: "written"; landed: true; written: Landed }
  /** Lost: `current` as read back, what was prepared (to offer it; null when our own commit was not in it), the window measured, and whether the call's deadline passed. */
  | { got: "written"; landed: false; current: ManifestRead; attempt: LostAttempt | null; windowMs: number; outOfTime: boolean }
  | { got: "offered"; mine: OwnProposal }
  | { got: "forgotten" }
  | { got: "withdrawn"; landed: "yes"; at: CombinedPublication }
  | { got: "withdrawn"; landed: "no" | "unknown" }
  | { got: "waited" }
  | { got: "carried"; landed: true; at: CombinedPublication }
  | { got: "carried"; landed: false; current: ManifestRead }
  /** A step failed: what it threw. */
  | { got: "failed"; failure: unknown };

export interface AttemptRules {
  /** How many races a commit may lose before it gives up (--commit-retries). */
  retries: number;
  /**
   * Whether the store orders its writers (a turn of the embedded store's
   * queue): no one publishes between our read and our write, so there is
   * no guess, no proposal and nothing to list.
   */
  ordered: boolean;
  /** Whether a commit may build on the accepted state this process last saw (EngineDeps.guessCurrent). */
  guess: boolean;
  /** The checkout's baseline: no accepted state that went backwards from it is built on (went-backwards.ts). */
  baseline: Baseline;
}

export type Transition = { state: AttemptState; step: Step };

/**
 * The first state and step. In a turn of the store's queue the read is
 * local and nobody can publish before our write, while a stale guess would
 * cost a pack, a flush of the publication record and a lost write inside
 * the turn: read. Elsewhere ask the process's memory whether to guess.
 */
export function start(rules: AttemptRules): Transition {
  if (!rules.guess || rules.ordered) return readFrom(null, { lost: 0, windowMs: 0 }, rules);
  return { state: { state: "recalling", lost: 0, windowMs: 0, at: { awaits: "contention" } }, step: { do: "settle contention" } };
}

/** The next attempt of our own, from `current` as `proved` (or read afresh when null). */
export function readFrom(proved: ManifestRead | null, state: Counts, rules: AttemptRules): Transition {
  const at: Own = { awaits: "current", guess: null };
  const counts = { lost: state.lost, windowMs: state.windowMs };
  if (proved === null) return { state: { state: "reading", ...counts, at }, step: { do: "read", from: "read", list: !rules.ordered } };
  return { state: { state: "proved", ...counts, at }, step: { do: "read", from: "proved", proved, list: !rules.ordered } };
}

/** The commit refused: `error` is its answer. */
export function refuse(state: Counts, why: Refusal, error: unknown): Transition {
  return { state: { state: "refused", lost: state.lost, windowMs: state.windowMs, why }, step: { do: "refuse", why, error } };
}

export function land(state: Counts, landing: Landing): Transition {
  return { state: { state: "landed", lost: state.lost, windowMs: state.windowMs, how: landing.how }, step: { do: "land", ...landing } };
}

/** RETRIES_EXHAUSTED after `lost` lost races (and one more, the last). */
function spent(state: Counts, outOfTime: boolean): Transition {
  return refuse(state, "RETRIES_EXHAUSTED", exhausted(state.lost, outOfTime));
}

/**
 * The step after `event`, in `state`. An event the state does not expect is
 * a bug of the runner: it throws. A step that failed ends the commit with
 * its failure — unless our proposal is out and the store failed: another
 * writer may have published it meanwhile, so the failure alone would hide a
 * publication that may have landed. Taking it back makes its fate final.
 */
export function next(state: AttemptState, event: Event, rules: AttemptRules): Transition {
  if (event.got === "failed") return failed(state, event.failure);
  switch (state.state) {
    case "recalling":
      return recalling(state, event, rules);
    case "guessing":
    case "reading":
    case "proved":
      return building(state, event, rules);
    case "offered":
      return offered(state, event, rules);
    case "withdrawing":
      return withdrawing(state, event, rules);
    default:
      throw unexpected(state, event);
  }
}

export function unexpected(state: AttemptState, event: Event): Error {
  const at = "at" in state ? ` awaiting ${state.at.awaits}` : "";
  return new Error(`attempt: ${event.got} in ${state.state}${at}`);
}

function failed(state: AttemptState, failure: unknown): Transition {
  const out = state.state === "offered" || (state.state === "withdrawing" && state.then !== "prove") ? state : null;
  if (out === null || !storeFailed(failure)) return refuse(state, "failed", failure);
  return {
    state: { state: "withdrawing", lost: out.lost, windowMs: out.windowMs, mine: out.mine, then: "prove", failure },
    step: { do: "withdraw", mine: out.mine, final: true, failed: true },
  };
}

/**
 * Whether to guess: a writer that lost races lately does not — its guess is
 * likely stale, and it is how a winner kept winning (contention.ts); nor
 * does one whose last guess saw others waiting to be carried: it reads, and
 * carries them. The guess is a guess that `current` has not moved since;
 * the conditional write checks it, and a wrong one costs an orphan pack and
 * the read it skipped.
 */
function recalling(state: AttemptState & { state: "recalling" }, event: Event, rules: AttemptRules): Transition {
  if (event.got === "contention" && state.at.awaits === "contention") {
    if (event.level > 0 || event.othersWaiting) return readFrom(null, state, rules);
    return { state: { ...state, at: { awaits: "recalled" } }, step: { do: "recall" } };
  }
  if (event.got !== "recalled" || state.at.awaits !== "recalled") throw unexpected(state, event);
  if (event.guess === null) return readFrom(null, state, rules);
  const { guess } = event;
  return { state: { state: "guessing", lost: 0, windowMs: state.windowMs, at: { awaits: "current", guess } }, step: { do: "read", from: "guess", guess, list: !rules.ordered } };
}

/**
 * `current` as read (or the guess): what it alone says of a store that went
 * backwards is refused before any pack is read — a commit never builds on,
 * and so never publishes over, a state older than the one its checkout saw
 * (went-backwards.ts). A guess is at the baseline by construction
 * (accepted-state.ts lastAccepted), and the conditional write proves it
 * current, but is checked all the same.
 */
export function readCurrent(state: Counts, event: Event & { got: "current" }, guess: AcceptedState | null, rules: AttemptRules): Transition | { load: Step; started: number; listing: Listing | null } {
  const found = wentBackwards(rules.baseline, event.current.manifest);
  if (found !== null) return refuse(state, "HISTORY_INVALID", wentBackwardsError(rules.baseline, found));
  const load: Step = guess !== null ? { do: "load", guess } : { do: "load", current: event.current };
  return { load, started: event.started, listing: event.listing };
}

/** The accepted state loaded: refused when its history does not pass through the baseline; else what the attempt builds on. */
export function loaded(state: Counts, event: Event & { got: "accepted" }, at: { started: number; listing: Listing | null }, rules: AttemptRules): Transition | Read {
  const backwards = historyWentBackwards(rules.baseline, event.accepted.manifest, event.at);
  if (backwards !== null) return refuse(state, "HISTORY_INVALID", backwards);
  return { accepted: event.accepted, started: at.started, listing: at.listing };
}

/** Our own commit, merged onto the accepted state and written (no proposal of ours is out). */
function building(state: AttemptState & { state: "guessing" | "reading" | "proved" }, event: Event, rules: AttemptRules): Transition {
  const { at } = state;
  if (event.got === "current" && at.awaits === "current") {
    const read = readCurrent(state, event, at.guess, rules);
    if ("step" in read) return read;
    return { state: { ...state, at: { awaits: "accepted", started: read.started, listing: read.listing } }, step: read.load };
  }
  if (event.got === "accepted" && at.awaits === "accepted") {
    const read = loaded(state, event, at, rules);
    if ("step" in read) return read;
    // A guess is what the process remembers already.
    if (state.state === "guessing") return { state: { ...state, at: { awaits: "merged", read } }, step: { do: "merge", accepted: read.accepted } };
    return { state: { ...state, at: { awaits: "remembered", read } }, step: { do: "remember", accepted: read.accepted } };
  }
  if (event.got === "remembered" && at.awaits === "remembered") return { state: { ...state, at: { awaits: "merged", read: at.read } }, step: { do: "merge", accepted: at.read.accepted } };
  if (event.got === "merged" && at.awaits === "merged") return merged(state, event.merge, at.read, rules);
  if (event.got === "conflicts written" && at.awaits === "conflicts written") {
    // A conflicting file left as someone kept writing it still conflicts; it is named all the same.
    return refuse(state, "MERGE_CONFLICT", conflictError(event.conflicts.length > 0 ? event.conflicts : at.conflicts, "commit"));
  }
  if (event.got === "listed" && at.awaits === "listed") {
    if (!event.othersWaiting) return writeAlone(state, at.read, at.alone);
    return { state: { ...state, at: { awaits: "combined", read: at.read, alone: at.alone } }, step: { do: "combine", own: false, accepted: at.read.accepted, listed: event.listed } };
  }
  if (event.got === "combined" && at.awaits === "combined") {
    if (event.carried === null || event.merged === null) return writeAlone(state, at.read, at.alone);
    const write: Step = { do: "write", accepted: at.read.accepted, carried: event.carried, merged: event.merged, own: null, started: at.read.started };
    return { state: { ...state, at: { awaits: "written", read: at.read, alone: at.alone, merged: event.merged, carried: true } }, step: write };
  }
  if (event.got === "written" && at.awaits === "written") {
    if (event.landed) return land(state, { how: "written", landed: event.written, merged: at.merged });
    return lostRace(state, event, at, rules);
  }
  // Offered: the next writer to publish publishes ours too; watch `current` for that.
  if (event.got === "offered" && at.awaits === "offered") {
    const out: AttemptState = { state: "offered", lost: state.lost, windowMs: state.windowMs, mine: event.mine, at: { awaits: "carried" } };
    return { state: out, step: { do: "await carried", mine: event.mine, last: at.proved, windowMs: state.windowMs } };
  }
  if (event.got === "waited" && at.awaits === "waited") return readFrom(rules.ordered ? null : at.proved, state, rules);
  throw unexpected(state, event);
}

/**
 * Our merge onto the accepted state: a conflict is written into the files
 * and refused; nothing to publish against a guess reads (the store may have
 * news), and against a read is a synchronisation; changes are written — by
 * a racing read once the listing says whether others wait to be carried. A
 * guess does not wait for its listing: what it finds is for this process's
 * next commit.
 */
function merged(state: AttemptState & { state: "guessing" | "reading" | "proved" }, merge: TreeMerge, read: Read, rules: AttemptRules): Transition {
  const { accepted } = read;
  if (merge.conflicts.length > 0) return { state: { ...state, at: { awaits: "conflicts written", conflicts: merge.conflicts } }, step: { do: "write conflicts", accepted, merge } };
  if (sameTree(merge.result, accepted.files)) return state.state === "guessing" ? readFrom(null, state, rules) : land(state, { how: "synchronised", accepted, merged: merge.result });
  const alone = merge.result;
  if (rules.ordered || state.state === "guessing" || read.listing === null) return writeAlone(state, read, alone);
  return { state: { ...state, at: { awaits: "listed", read, alone } }, step: { do: "list", listing: read.listing, accepted } };
}

function writeAlone(state: AttemptState & { state: "guessing" | "reading" | "proved" }, read: Read, alone: FlatTree): Transition {
  return {
    state: { ...state, at: { awaits: "written", read, alone, merged: alone, carried: false } },
    step: { do: "write", accepted: read.accepted, carried: null, merged: alone, own: null, started: read.started },
  };
}

/**
 * Our write lost: another publication landed first. What the write read
 * back is built on, and offered to, next: not a store that went backwards.
 * Past the call's deadline, give up. A stale guess is no race lost (no
 * retry spent, no backoff): read and try again. Otherwise give up once the
 * retries are spent, or offer the attempt to the others (racing writers,
 * when our own commit was in it), or back off.
 */
function lostRace(
  state: AttemptState & { state: "guessing" | "reading" | "proved" },
  event: Event & { got: "written"; landed: false },
  at: Own & { awaits: "written" },
  rules: AttemptRules,
): Transition {
  const found = wentBackwards(rules.baseline, event.current.manifest);
  if (found !== null) return refuse(state, "HISTORY_INVALID", wentBackwardsError(rules.baseline, found));
  const counts = { lost: state.lost, windowMs: event.windowMs };
  const proved = rules.ordered ? null : event.current;
  // Past the call's deadline nothing more is written, after a stale guess too.
  if (event.outOfTime) return spent(counts, true);
  if (state.state === "guessing") return readFrom(proved, counts, rules);
  if (state.lost >= rules.retries) return spent(counts, false);
  const lost = { lost: state.lost + 1, windowMs: event.windowMs };
  if (proved !== null && event.attempt !== null) {
    const { accepted } = at.read;
    const offer: Step = { do: "offer", accepted, attempt: event.attempt, alone: at.alone, carried: at.carried, generation: proved.manifest?.generation ?? accepted.generation };
    return { state: { ...state, ...lost, at: { awaits: "offered", proved } }, step: offer };
  }
  return { state: { ...state, ...lost, at: { awaits: "waited", proved } }, step: { do: "back off", lost: lost.lost, windowMs: event.windowMs } };
}

/** Our proposal is out: it lands when a manifest lists it, or we publish it ourselves. */
function offered(state: AttemptState & { state: "offered" }, event: Event, rules: AttemptRules): Transition {
  const { at, mine } = state;
  if (event.got === "carried" && at.awaits === "carried") {
    if (event.landed) return land(state, { how: "carried", mine, at: event.at });
    return { state: { ...state, at: { awaits: "current" } }, step: { do: "read", from: "proved", proved: event.current, list: !rules.ordered } };
  }
  if (event.got === "current" && at.awaits === "current") {
    const read = readCurrent(state, event, null, rules);
    if ("step" in read) return read;
    return { state: { ...state, at: { awaits: "accepted", started: read.started, listing: read.listing } }, step: read.load };
  }
  if (event.got === "accepted" && at.awaits === "accepted") {
    const read = loaded(state, event, at, rules);
    if ("step" in read) return read;
    return { state: { ...state, at: { awaits: "remembered", read } }, step: { do: "remember", accepted: read.accepted } };
  }
  if (event.got === "remembered" && at.awaits === "remembered") return fate(state, at.read);
  // Forgotten: merge afresh on what was read.
  if (event.got === "forgotten" && at.awaits === "forgotten") {
    return { state: { state: "reading", lost: state.lost, windowMs: state.windowMs, at: { awaits: "merged", read: at.read } }, step: { do: "merge", accepted: at.read.accepted } };
  }
  if (event.got === "listed" && at.awaits === "listed") {
    return { state: { ...state, at: { awaits: "combined", read: at.read } }, step: { do: "combine", own: true, mine, accepted: at.read.accepted, listed: event.listed } };
  }
  if (event.got === "combined" && at.awaits === "combined") {
    const { accepted, started } = at.read;
    if (event.carried !== null) return { state: { ...state, at: { awaits: "written" } }, step: { do: "write", accepted, carried: event.carried, merged: null, own: mine.proposal.publication, started } };
    // Ours no longer moves cleanly onto the accepted state: take it back, and merge afresh.
    return { state: { state: "withdrawing", lost: state.lost, windowMs: state.windowMs, mine, then: "afresh" }, step: { do: "withdraw", mine, final: false, failed: false } };
  }
  if (event.got === "written" && at.awaits === "written") return offeredWritten(state, event, rules);
  throw unexpected(state, event);
}

/** What the manifest read says of our proposal: landed, not provable, expired (forget it, start afresh), or waiting (carry it ourselves, with the others). */
function fate(state: AttemptState & { state: "offered" }, read: Read): Transition {
  const { mine } = state;
  const fate = fateOf(read.accepted.manifest, mine.proposal);
  if (typeof fate === "object") return land(state, { how: "carried", mine, at: fate.landed });
  if (fate === "unknown") return refuse(state, "PUBLICATION_UNPROVEN", unprovenProposal());
  if (fate === "expired") return { state: { ...state, at: { awaits: "forgotten", read } }, step: { do: "forget proposal", mine } };
  // Racing writers only are offered: the read listed the proposals.
  if (read.listing === null) throw new Error("attempt: an offered proposal read without listing");
  return { state: { ...state, at: { awaits: "listed", read } }, step: { do: "list", listing: read.listing, accepted: read.accepted } };
}

/** Our write of our proposal: landed as carried; lost, watch again, or take it back once retries or time are spent. */
function offeredWritten(state: AttemptState & { state: "offered" }, event: Event & { got: "written" }, rules: AttemptRules): Transition {
  const { mine } = state;
  if (event.landed) {
    if (event.written.ownAt === null) throw new Error("attempt: a write of our proposal that did not carry it");
    return land(state, { how: "carried", mine, at: event.written.ownAt });
  }
  const found = wentBackwards(rules.baseline, event.current.manifest);
  if (found !== null) return refuse(state, "HISTORY_INVALID", wentBackwardsError(rules.baseline, found));
  const counts = { lost: state.lost, windowMs: event.windowMs };
  if (state.lost >= rules.retries || event.outOfTime) {
    return { state: { state: "withdrawing", ...counts, mine, then: "give up", outOfTime: event.outOfTime }, step: { do: "withdraw", mine, final: true, failed: false } };
  }
  const lost = { lost: state.lost + 1, windowMs: event.windowMs };
  return { state: { state: "offered", ...lost, mine, at: { awaits: "carried" } }, step: { do: "await carried", mine, last: event.current, windowMs: event.windowMs } };
}

/** Taking our proposal back: its fate is final once withdrawn. */
function withdrawing(state: AttemptState & { state: "withdrawing" }, event: Event, rules: AttemptRules): Transition {
  if (event.got !== "withdrawn") throw unexpected(state, event);
  if (event.landed === "yes") return land(state, { how: "carried", mine: state.mine, at: event.at });
  switch (state.then) {
    case "give up":
      return spent(state, state.outOfTime);
    // Not landed: nothing was published, nothing is left to settle, and the failure stands; not provable, and the commit answers PUBLICATION_UNPROVEN, its record kept for the next call.
    case "prove":
      return event.landed === "no" ? refuse(state, "failed", state.failure) : refuse(state, "PUBLICATION_UNPROVEN", unprovenOffer(state.failure));
    case "afresh":
      return event.landed === "unknown" ? refuse(state, "PUBLICATION_UNPROVEN", unprovenProposal()) : readFrom(null, state, rules);
  }
}
