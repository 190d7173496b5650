/**
 * A commit's way to a publication, as a state machine: pure, with no I/O
 * (docs/storage-protocol.md, "The attempt, as a state machine"). The
 * runner (src/engine/commit.ts) does what each step says — read `current`,
 * merge, write, offer, wait, withdraw — and reports what it found as an
 * event; `next` says what to do then. So every decision of the publish
 * path is here, in one place, and tested without a store
 * (test/engine/attempt.test.ts: a table of transitions, and a property test
 * that drives random store answers through it and checks the invariants
 * the protocol rests on).
 *
 * The states, and the words for them (docs/glossary.md):
 * - **guessing**: building on the accepted state this process last saw,
 *   without reading `current` — the conditional write checks the guess;
 * - **reading**: building on `current` as read now;
 * - **proved**: building on `current` as the read-back of a lost write
 *   proved it (no second read);
 * - **offered**: this commit's own attempt is posted as a proposal, for the
 *   next writer to carry; it lands as a manifest's `combined` says;
 * - **withdrawing**: taking the proposal back (it conflicts now, or the
 *   retries are spent), which makes its fate final;
 * and the ends: **landed** (written, carried, or nothing to publish),
 * **refused** (a conflict, spent retries, or a fate that cannot be proved).
 */

/** Where the next attempt's accepted state comes from. */
export type Source = "guess" | "read" | "proved";

/** What the commit knows between steps. */
export type AttemptState =
  | { state: "guessing"; lost: number }
  | { state: "reading"; lost: number }
  | { state: "proved"; lost: number }
  | { state: "offered"; lost: number; source: "read" | "proved" }
  | { state: "withdrawing"; lost: number; then: "afresh" | "give up" }
  | { state: "landed"; lost: number; how: "written" | "carried" | "synchronised" }
  | { state: "refused"; lost: number; why: Refusal };

/** Why a commit ends without landing: the table's tokens. */
export type Refusal = "MERGE_CONFLICT" | "RETRIES_EXHAUSTED" | "PUBLICATION_UNPROVEN";

/** What the runner does next. */
export type Step =
  /** Get the accepted state from the source; racing writers list the proposals too. */
  | { do: "read"; from: Source }
  /** Merge the local changes onto the accepted state. */
  | { do: "merge" }
  /** Wait for the listing of proposals started with the read. */
  | { do: "list" }
  /** Move the waiting proposals onto the accepted state, ours among them when offered. */
  | { do: "combine"; own: boolean }
  /** Write one publication: our commit (and the proposals combined), conditionally. */
  | { do: "write" }
  /** Post our lost attempt as a proposal. */
  | { do: "offer" }
  /** Forget our proposal: it expired, nobody can carry it any more. */
  | { do: "forget proposal" }
  /** Take our proposal back, which makes its fate final; `final`: the commit gives up after it. */
  | { do: "withdraw"; final: boolean }
  /** A pause of backoff after a lost race. */
  | { do: "back off"; lost: number }
  /** Watch `current` for a publication carrying our proposal. */
  | { do: "await carried" }
  /** Ends: bring the files to what landed, or answer the refusal. */
  | { do: "land"; how: "written" | "carried" | "synchronised" }
  | { do: "refuse"; why: Refusal };

/** What the runner found, step by step. */
export type Event =
  /** The accepted state; with our proposal offered, what its manifest says of it. */
  | { got: "accepted"; fate?: "landed" | "waiting" | "expired" | "unknown" }
  | { got: "merged"; result: "conflict" | "nothing new" | "changes" }
  | { got: "listed"; othersWaiting: boolean }
  | { got: "combined"; carries: boolean }
  /** The write's outcome; lost, whether an offer is possible (our own commit was in it) and whether the call's deadline passed. */
  | { got: "written"; landed: true }
  | { got: "written"; landed: false; ours: boolean; outOfTime: boolean }
  | { got: "offered" }
  | { got: "forgotten" }
  | { got: "withdrawn"; landed: "yes" | "no" | "unknown" }
  | { got: "waited" }
  | { got: "carried"; landed: boolean };

export interface AttemptRules {
  /** How many races a commit may lose before it gives up (--commit-retries). */
  retries: number;
  /**
   * Whether the store orders its writers (a turn of the embedded store's
   * queue): no one publishes between our read and our write, so there is
   * no guess, no proposal and nothing to list.
   */
  ordered: boolean;
}

/** The first state and step: a guess when the process may build on what it last saw. */
export function start(guess: boolean): { state: AttemptState; step: Step } {
  return guess ? { state: { state: "guessing", lost: 0 }, step: { do: "read", from: "guess" } } : { state: { state: "reading", lost: 0 }, step: { do: "read", from: "read" } };
}

const readFrom = (source: "read" | "proved", lost: number): { state: AttemptState; step: Step } => ({
  state: { state: source === "read" ? "reading" : "proved", lost },
  step: { do: "read", from: source },
});
const end = (state: AttemptState & { state: "landed" | "refused" }): { state: AttemptState; step: Step } => ({
  state,
  step: state.state === "landed" ? { do: "land", how: state.how } : { do: "refuse", why: state.why },
});

/**
 * The step after `event`, in `state`. An event the state does not expect is
 * a bug of the runner: it throws.
 */
export function next(state: AttemptState, event: Event, rules: AttemptRules): { state: AttemptState; step: Step } {
  switch (state.state) {
    case "guessing":
    case "reading":
    case "proved":
      return building(state, event, rules);
    case "offered":
      return offered(state, event, rules);
    case "withdrawing":
      return withdrawing(state, event);
    default:
      throw unexpected(state, event);
  }
}

function unexpected(state: AttemptState, event: Event): Error {
  return new Error(`attempt: ${event.got} in ${state.state}`);
}

/** Our own commit, merged onto the accepted state and written (no proposal of ours is out). */
function building(state: AttemptState & { state: "guessing" | "reading" | "proved" }, event: Event, rules: AttemptRules): { state: AttemptState; step: Step } {
  const guessing = state.state === "guessing";
  switch (event.got) {
    case "accepted":
      return { state, step: { do: "merge" } };
    case "merged":
      if (event.result === "conflict") return end({ state: "refused", lost: state.lost, why: "MERGE_CONFLICT" });
      // Nothing to publish against the guess: the store may have news.
      if (event.result === "nothing new") return guessing ? readFrom("read", state.lost) : end({ state: "landed", lost: state.lost, how: "synchronised" });
      // A guess does not wait for its listing: what it finds is for this process's next commit.
      return { state, step: rules.ordered || guessing ? { do: "write" } : { do: "list" } };
    case "listed":
      return { state, step: event.othersWaiting ? { do: "combine", own: false } : { do: "write" } };
    case "combined":
      return { state, step: { do: "write" } };
    case "written":
      return event.landed ? end({ state: "landed", lost: state.lost, how: "written" }) : lostRace(state, event, rules);
    // Offered: the next writer to publish publishes ours too; watch `current` for that.
    case "offered":
      return { state: { state: "offered", lost: state.lost, source: "proved" }, step: { do: "await carried" } };
    case "waited":
      return readFrom(rules.ordered ? "read" : "proved", state.lost);
    default:
      throw unexpected(state, event);
  }
}

/**
 * Our write lost: another publication landed first. Past the call's
 * deadline, give up. A stale guess is no race lost (no retry spent, no
 * backoff): read and try again. Otherwise give up once the retries are
 * spent, or offer the attempt to the others (racing writers), or back off.
 */
function lostRace(state: AttemptState & { lost: number }, event: Event & { got: "written"; landed: false }, rules: AttemptRules): { state: AttemptState; step: Step } {
  const source = rules.ordered ? "read" : "proved";
  // Past the call's deadline nothing more is written, after a stale guess too.
  if (event.outOfTime) return end({ state: "refused", lost: state.lost, why: "RETRIES_EXHAUSTED" });
  if (state.state === "guessing") return readFrom(source, state.lost);
  if (state.lost >= rules.retries) return end({ state: "refused", lost: state.lost, why: "RETRIES_EXHAUSTED" });
  if (!rules.ordered && event.ours) return { state: { state: state.state as "reading" | "proved", lost: state.lost + 1 }, step: { do: "offer" } };
  return { state: { state: state.state as "reading" | "proved", lost: state.lost + 1 }, step: { do: "back off", lost: state.lost + 1 } };
}

/** Our proposal is out: it lands when a manifest lists it, or we publish it ourselves. */
function offered(state: AttemptState & { state: "offered" }, event: Event, rules: AttemptRules): { state: AttemptState; step: Step } {
  switch (event.got) {
    case "carried":
      return event.landed ? end({ state: "landed", lost: state.lost, how: "carried" }) : { state: { ...state, source: "proved" }, step: { do: "read", from: "proved" } };
    case "accepted":
      if (event.fate === "landed") return end({ state: "landed", lost: state.lost, how: "carried" });
      if (event.fate === "unknown") return end({ state: "refused", lost: state.lost, why: "PUBLICATION_UNPROVEN" });
      // Expired: nobody can combine it any more, so it never landed. Start afresh.
      if (event.fate === "expired") return { state, step: { do: "forget proposal" } };
      return { state, step: { do: "list" } };
    case "forgotten":
      return { state: { state: "reading", lost: state.lost }, step: { do: "merge" } };
    case "listed":
      return { state, step: { do: "combine", own: true } };
    case "combined":
      // Ours no longer moves cleanly onto the accepted state: take it back, and merge afresh.
      return event.carries ? { state, step: { do: "write" } } : { state: { state: "withdrawing", lost: state.lost, then: "afresh" }, step: { do: "withdraw", final: false } };
    case "written":
      if (event.landed) return end({ state: "landed", lost: state.lost, how: "carried" });
      if (state.lost >= rules.retries || event.outOfTime) return { state: { state: "withdrawing", lost: state.lost, then: "give up" }, step: { do: "withdraw", final: true } };
      return { state: { state: "offered", lost: state.lost + 1, source: "proved" }, step: { do: "await carried" } };
    default:
      throw unexpected(state, event);
  }
}

/** Taking our proposal back: its fate is final once withdrawn. */
function withdrawing(state: AttemptState & { state: "withdrawing" }, event: Event): { state: AttemptState; step: Step } {
  if (event.got !== "withdrawn") throw unexpected(state, event);
  if (event.landed === "yes") return end({ state: "landed", lost: state.lost, how: "carried" });
  if (state.then === "give up") return end({ state: "refused", lost: state.lost, why: "RETRIES_EXHAUSTED" });
  if (event.landed === "unknown") return end({ state: "refused", lost: state.lost, why: "PUBLICATION_UNPROVEN" });
  return readFrom("read", state.lost);
}
