/**
 * The words of the publish state machine (attempt.ts): its states, the
 * steps it names for the runner, the events the runner reports, and its
 * rules. Types only: attempt.ts decides, runner.ts acts.
 */
import type { ErrorFile } from "../../contract/errors.ts";
import type { Baseline } from "../checkout/state.ts";
import type { FlatTree } from "../git/object-cache.ts";
import type { TreeMerge } from "../merge/tree-merge.ts";
import type { AcceptedState, ManifestRead } from "./accepted-state.ts";
import type { Carried, Listed } from "./combine.ts";
import type { CombinedPublication } from "./manifest.ts";
import type { OwnProposal } from "./offer.ts";
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
export interface Counts {
  lost: number;
  windowMs: number;
}

/** What the commit knows between steps. */
export type AttemptState = Counts &
  (
    | { state: "recalling"; at: { awaits: "contention" | "recalled" } }
    | { state: "guessing" | "reading" | "proved" | "lining"; at: Own }
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
  /**
   * Post our attempt as a proposal: `alone` on `accepted`, at `generation`.
   * A lost attempt is offered as prepared (made anew when it `carried`
   * others); from the line (null) nothing was written yet, and it is built.
   */
  | { do: "offer"; accepted: AcceptedState; attempt: LostAttempt | null; alone: FlatTree; carried: boolean; generation: number }
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
  /**
   * Whether this commit took its place in the store's line behind others
   * (`ordered` only): it offers its commit from the line, for the writers
   * ahead to carry in their turns (group commit), rather than wait idle and
   * publish alone in its own.
   */
  line: boolean;
  /**
   * Whether a first loss to one publication builds on it at once (metOne)
   * rather than offering: EngineDeps.meetAtOnce, for a process that lost no
   * race lately (contention.ts) — in a crowd, losers offer.
   */
  meetAtOnce: boolean;
  /** The checkout's baseline: no accepted state that went backwards from it is built on (went-backwards.ts). */
  baseline: Baseline;
}

export type Transition = { state: AttemptState; step: Step };
