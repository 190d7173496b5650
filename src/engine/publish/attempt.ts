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
 * - **lining**: waiting in the store's line behind other writers (the
 *   embedded store's queue), building on `current` as read, to offer the
 *   commit to the writers ahead, who carry it in their turns;
 * - **offered**: this commit's own attempt is posted as a proposal, for the
 *   next writer to carry; it lands as a manifest's `combined` says;
 * - **withdrawing**: taking the proposal back (it conflicts now, the
 *   retries are spent, or the store failed while it was out), which makes
 *   its fate final;
 * and the ends: **landed** (written, carried, or nothing to publish),
 * **refused** (a conflict, spent retries, a fate that cannot be proved, a
 * store that went backwards, or a failure that stands).
 */
import type { FlatTree } from "../git/object-cache.ts";
import { conflictError } from "../merge/conflict.ts";
import { sameTree, type TreeMerge } from "../merge/tree-merge.ts";
import type { AcceptedState, ManifestRead } from "./accepted-state.ts";
import type { AttemptRules, AttemptState, Counts, Event, Landing, Listing, Own, Read, Refusal, Step, Transition } from "./attempt-words.ts";
import { fateOf } from "./combine.ts";
import { exhausted, storeFailed, unprovenOffer, unprovenProposal } from "./refusals.ts";
import { historyWentBackwards, wentBackwards, wentBackwardsError } from "./went-backwards.ts";

export type { AttemptRules, AttemptState, Event, Landing, Listing, Out, Own, Read, Refusal, Step, Transition } from "./attempt-words.ts";


/**
 * The first state and step. In a turn of the store's queue the read is
 * local and nobody can publish before our write, while a stale guess would
 * cost a pack, a flush of the publication record and a lost write inside
 * the turn: read. Elsewhere ask the process's memory whether to guess.
 */
export function start(rules: AttemptRules): Transition {
  if (rules.ordered && rules.line) return { state: { state: "lining", lost: 0, windowMs: 0, at: { awaits: "current", guess: null } }, step: { do: "read", from: "read", list: true } };
  if (!rules.guess || rules.ordered) return readFrom(null, { lost: 0, windowMs: 0 }, rules);
  return { state: { state: "recalling", lost: 0, windowMs: 0, at: { awaits: "contention" } }, step: { do: "settle contention" } };
}

/**
 * The next attempt of our own, from `current` as `proved` (or read afresh
 * when null). The proposals are listed alongside, to be carried: by racing
 * writers, and in a turn of the store's line, by the writer in its turn.
 */
export function readFrom(proved: ManifestRead | null, state: Counts, _rules: AttemptRules): Transition {
  const at: Own = { awaits: "current", guess: null };
  const counts = { lost: state.lost, windowMs: state.windowMs };
  if (proved === null) return { state: { state: "reading", ...counts, at }, step: { do: "read", from: "read", list: true } };
  return { state: { state: "proved", ...counts, at }, step: { do: "read", from: "proved", proved, list: true } };
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
    case "lining":
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
function building(state: AttemptState & { state: "guessing" | "reading" | "proved" | "lining" }, event: Event, rules: AttemptRules): Transition {
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
function merged(state: AttemptState & { state: "guessing" | "reading" | "proved" | "lining" }, merge: TreeMerge, read: Read, rules: AttemptRules): Transition {
  const { accepted } = read;
  if (merge.conflicts.length > 0) return { state: { ...state, at: { awaits: "conflicts written", conflicts: merge.conflicts } }, step: { do: "write conflicts", accepted, merge } };
  if (sameTree(merge.result, accepted.files)) return state.state === "guessing" ? readFrom(null, state, rules) : land(state, { how: "synchronised", accepted, merged: merge.result });
  const alone = merge.result;
  if (state.state === "lining") return offerFromLine(state, read, alone);
  if (state.state === "guessing" || read.listing === null) return writeAlone(state, read, alone);
  return { state: { ...state, at: { awaits: "listed", read, alone } }, step: { do: "list", listing: read.listing, accepted } };
}

/**
 * Group commit: from the line, our changes on the state as read are offered
 * at once, before our turn — a writer ahead carries them in its turn, or we
 * publish them in ours, carrying those behind us.
 */
function offerFromLine(state: AttemptState & { state: "guessing" | "reading" | "proved" | "lining" }, read: Read, alone: FlatTree): Transition {
  const { accepted } = read;
  const offer: Step = { do: "offer", accepted, attempt: null, alone, carried: false, generation: accepted.generation };
  return { state: { ...state, at: { awaits: "offered", proved: accepted } }, step: offer };
}

function writeAlone(state: AttemptState & { state: "guessing" | "reading" | "proved" | "lining" }, read: Read, alone: FlatTree): Transition {
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
  state: AttemptState & { state: "guessing" | "reading" | "proved" | "lining" },
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
    // Two commits met: build on the one that won, at once — offering would
    // wait for a carrier that, the race being over, never comes.
    if (rules.meetAtOnce && metOne(state, at, proved)) return readFrom(proved, lost, rules);
    const { accepted } = at.read;
    const offer: Step = { do: "offer", accepted, attempt: event.attempt, alone: at.alone, carried: at.carried, generation: proved.manifest?.generation ?? accepted.generation };
    return { state: { ...state, ...lost, at: { awaits: "offered", proved } }, step: offer };
  }
  return { state: { ...state, ...lost, at: { awaits: "waited", proved } }, step: { do: "back off", lost: lost.lost, windowMs: event.windowMs } };
}

/**
 * Whether a lost write met exactly one other publication, with nobody
 * waiting to be carried: this commit's first loss, its attempt carried no
 * proposals, and the write-back is one generation past the state it built
 * on. Anything more is a crowd, and a crowd is served by combining.
 */
function metOne(state: Counts, at: Own & { awaits: "written" }, proved: ManifestRead): boolean {
  return state.lost === 0 && !at.carried && proved.manifest !== null && proved.manifest.generation === at.read.accepted.generation + 1;
}

/** Our proposal is out: it lands when a manifest lists it, or we publish it ourselves. */
function offered(state: AttemptState & { state: "offered" }, event: Event, rules: AttemptRules): Transition {
  const { at, mine } = state;
  if (event.got === "carried" && at.awaits === "carried") {
    if (event.landed) return land(state, { how: "carried", mine, at: event.at });
    return { state: { ...state, at: { awaits: "current" } }, step: { do: "read", from: "proved", proved: event.current, list: true } };
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
