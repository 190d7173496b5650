/**
 * Running a commit's attempts to publish: the I/O of each step the state
 * machine (attempt.ts) names — read, load, merge, list, combine, write,
 * offer, wait, withdraw — and the ends it reaches (landing.ts), which bring
 * the visible files to what landed. Every decision is the machine's, and
 * each step carries what it needs: the runner keeps nothing between steps,
 * it only does what a step says and reports what it found
 * (docs/storage-protocol.md, "The attempt, as a state machine").
 */
import { DomainError } from "../../contract/errors.ts";
import type { OperationOutcome } from "../../contract/results.ts";
import { mergeTrees } from "../merge/tree-merge.ts";
import { lastAccepted, loadAcceptedState, readCurrentIfChanged, readManifest, rememberAccepted } from "./accepted-state.ts";
import { type AttemptRules, type Event, next, start, type Step } from "./attempt.ts";
import { dropProposal, fateOf, listProposals, othersWaiting, withdraw } from "./combine.ts";
import { commitEnded, contentionOf, measuredWindow, noteListing, noteOthersWaiting, retrySpread, settledContention } from "./contention.ts";
import { type Committing, landed, targetOf } from "./landing.ts";
import { type CombinedPublication, parseManifest } from "./manifest.ts";
import { awaitCarried, combineWith, offer, type OwnProposal } from "./offer.ts";
import type { Publisher } from "./publisher.ts";
import { takeTurn, type Turn } from "./turn.ts";
import { historyAt } from "./went-backwards.ts";
import { aloneOnAccepted, preparedAlone, writeAttempt } from "./write.ts";

export type { Committing } from "./landing.ts";

/** What every step runs with: the publisher, the commit's own ports, and the turn. */
interface Run {
  readonly p: Publisher;
  readonly c: Committing;
  readonly turn: Turn;
}

type Doing<K extends Step["do"]> = Step & { do: K };

/**
 * How many writers must be ahead in the store's line for a commit to offer
 * itself from there. With one ahead, that one is in its turn and has
 * listed the proposals already: an offer would only be published by us,
 * in our turn, at the cost of a pack built twice.
 */
const LINE_OFFERS_AT = 2;
/** How often a commit offered from the line looks whether a turn ahead carried it (ms, ± half). */
const LINE_LOOK_MS = 10;

/**
 * Publish the checkout's changes (scanned, merged against the publisher's
 * baseline tree), taking the store's turn where it orders its writers,
 * until a publication lands or the machine refuses.
 */
export async function publishCommit(p: Publisher, c: Committing): Promise<OperationOutcome> {
  const turn = await takeTurn(p);
  const run: Run = { p, c, turn };
  // Behind others in the line, the commit is offered for them to carry (group commit); else it waits for its turn first.
  const line = turn.ordered && turn.ahead >= LINE_OFFERS_AT;
  if (!line) await turn.began;
  // A meeting of two is met at once only by a process that lost no race lately: in a crowd, losers that
  // all retried at once would mostly lose again, each a whole publication's work; they offer instead.
  const calm = contentionOf(p.memory, p.storeId).level === 0;
  const rules: AttemptRules = { retries: c.retries, ordered: turn.ordered, line, guess: c.guessCurrent, meetAtOnce: c.meetAtOnce && calm, baseline: p.baseline };
  let { state, step } = start(rules);
  try {
    for (;;) {
      if (step.do === "land") return await landed(p, c, turn, step);
      if (step.do === "refuse") throw step.error;
      let event: Event;
      try {
        event = await perform(run, step);
      } catch (failure) {
        event = { got: "failed", failure };
      }
      ({ state, step } = next(state, event, rules));
    }
  } finally {
    turn.end();
    // Races lost to other commits, for the contention memory.
    commitEnded(p.memory, p.storeId, state.lost);
  }
}

function perform(run: Run, step: Exclude<Step, Doing<"land" | "refuse">>): Promise<Event> {
  const { p } = run;
  switch (step.do) {
    case "settle contention":
      return settle(p);
    case "recall":
      return Promise.resolve({ got: "recalled", guess: lastAccepted(p.memory, p.storeId, p.baseline.head, p.git) });
    case "read":
      return read(run, step);
    case "load":
      return load(run, step);
    case "remember":
      rememberAccepted(p.memory, p.storeId, step.accepted);
      return Promise.resolve({ got: "remembered" });
    case "merge":
      return merge(run, step);
    case "write conflicts":
      return writeConflicts(run, step);
    case "list":
      return list(p, step);
    case "combine":
      return combine(p, step);
    case "write":
      return write(run, step);
    case "offer":
      return offerOurs(run, step);
    case "forget proposal":
      dropProposal(p.store, step.mine.proposal.publication);
      return Promise.resolve({ got: "forgotten" });
    case "withdraw":
      return withdrawOurs(p, step);
    case "back off":
      return backOff(p, step);
    case "await carried":
      return run.turn.waiting() ? carriedInLine(run, step) : carried(p, step);
  }
}

/** What this process saw of the races on the store, once a listing still being answered is in. */
async function settle(p: Publisher): Promise<Event> {
  const seen = await settledContention(p.memory, p.storeId);
  return { got: "contention", level: seen.level, othersWaiting: seen.othersWaiting === true };
}

/**
 * `current` from the step's source; racing writers list the proposals
 * alongside, so that a writer that keeps winning publishes them too rather
 * than starve them. A guess reads nothing, and waiting for the listing
 * would slow the one writer the guess is for: what it finds is noted for
 * this process's next commit.
 */
async function read({ p, turn }: Run, step: Doing<"read">): Promise<Event> {
  const started = p.monotonic();
  const listing = step.list ? listProposals(p.store) : null;
  // Not every attempt waits for it (a conflict, nothing to publish): its failure then goes unheard.
  listing?.catch(() => {});
  if (step.from === "guess" && listing !== null) {
    const { guess } = step;
    noteListing(p.memory, p.storeId, listing.then((listed) => othersWaiting(listed, guess)));
  }
  await p.onStage("fetch");
  const current = step.from === "guess" ? step.guess : step.from === "proved" ? step.proved : await readManifest(turn.store);
  return { got: "current", current, started, listing };
}

/** The accepted state `current` names, as the turn reads the store, and its history at the baseline's generation. */
async function load({ p, turn }: Run, step: Doing<"load">): Promise<Event> {
  const accepted = "guess" in step ? step.guess : await loadAcceptedState(turn.store, p.git, step.current);
  return { got: "accepted", accepted, at: await historyAt(p.git, p.baseline, accepted) };
}

/** Our changes merged onto the accepted state (whose files must all fit this checkout). */
async function merge({ p, c }: Run, { accepted }: Doing<"merge">): Promise<Event> {
  await p.onStage("merge");
  await c.refuseOversize(p.baselineTree, accepted.files);
  return { got: "merged", merge: await mergeTrees(p.git, p.baselineTree, p.local, accepted.files, p.localContents) };
}

async function writeConflicts({ p, c, turn }: Run, { accepted, merge }: Doing<"write conflicts">): Promise<Event> {
  turn.end();
  const written = await c.bring(merge, targetOf(accepted), accepted.files, { remoteAccepted: "no", firstBase: p.baselineTree, conflicts: "write" });
  return { got: "conflicts written", conflicts: written.conflicts };
}

/** Whether others (or we) wait to be carried, as listed alongside the read. */
async function list(p: Publisher, step: Doing<"list">): Promise<Event> {
  const listed = await step.listing;
  const waiting = othersWaiting(listed, step.accepted);
  noteOthersWaiting(p.memory, p.storeId, waiting);
  return { got: "listed", listed, othersWaiting: waiting };
}

/** The waiting proposals moved onto the accepted state, ours among them when `own` (offer.ts). */
async function combine(p: Publisher, step: Doing<"combine">): Promise<Event> {
  const carried = await combineWith(p, step.accepted, step.own ? step.mine : null, step.listed);
  return { got: "combined", carried, merged: carried?.merged ?? null };
}

/** One conditional write of `current`; lost, the read-back is what the next attempt builds on. */
async function write({ p, c, turn }: Run, step: Doing<"write">): Promise<Event> {
  const written = await writeAttempt(p, step.accepted, step.carried, step.merged, c.message, turn, step.own);
  if (written.landed) return { got: "written", landed: true, written };
  const windowMs = measuredWindow(p.memory, p.storeId, p.monotonic() - step.started);
  // The call's deadline ends the retries as their bound does.
  return { got: "written", landed: false, current: written.current, attempt: written.attempt, windowMs, outOfTime: p.outOfTime() };
}

/**
 * Our lost attempt, offered to the other writers as a proposal (offer.ts):
 * our own commit alone when it carried others, and in one pack when it was
 * published in several (a proposal names one pack, which its carrier reads).
 */
async function offerOurs({ p, c }: Run, step: Doing<"offer">): Promise<Event> {
  const { attempt } = step;
  const rebuild = attempt !== null && (step.carried || attempt.uploaded.leading.length > 0);
  const lost = attempt === null ? await preparedAlone(p, step.accepted, step.alone, c.message) : rebuild ? await aloneOnAccepted(p, step.accepted, attempt, step.alone, c.message) : attempt;
  return { got: "offered", mine: await offer(p, lost, step.alone, step.accepted.files, step.generation) };
}

/**
 * Take our proposal back (combine.ts withdraw). `final`, not landed: the
 * record has nothing left to settle. When that cannot be proved, its
 * record stays and the next call on the checkout settles it before anything
 * else (publication.ts).
 */
async function withdrawOurs(p: Publisher, step: Doing<"withdraw">): Promise<Event> {
  p.state.checkLock();
  const taken = await withdraw(p.store, step.mine.proposal, p.randomId).catch((e) => {
    if (step.failed || (step.final && e instanceof DomainError && e.reason === "PUBLICATION_UNPROVEN")) return { landed: "unknown" as const };
    throw e;
  });
  if (taken.landed === "unknown") return { got: "withdrawn", landed: "unknown" };
  if (taken.landed !== null) return { got: "withdrawn", landed: "yes", at: taken.landed };
  if (step.final) p.state.writeBaseline(p.baseline);
  return { got: "withdrawn", landed: "no" };
}

/** Wait a random time up to the spread after the `lost`-th lost race (full jitter). */
async function backOff(p: Publisher, step: Doing<"back off">): Promise<Event> {
  await p.onStage("retry");
  const spread = retrySpread(step.lost, step.windowMs);
  if (spread > 0) await p.sleep(p.random() * spread);
  return { got: "waited" };
}

/** Watch `current` for a publication carrying our proposal, publishing it ourselves when nobody else does (offer.ts). */
async function carried(p: Publisher, step: Doing<"await carried">): Promise<Event> {
  await p.onStage("retry");
  const found = await awaitCarried(p, step.mine, step.last, step.windowMs);
  if ("landed" in found) return { got: "carried", landed: true, at: found.landed };
  return { got: "carried", landed: false, current: found.current };
}

/**
 * Offered from the line: wait for a turn ahead to carry our proposal —
 * `current` looked at every few milliseconds, a local read that reads no
 * body while it has not moved — or for our own turn, in which `current`
 * is read to go on from (combining ours first, with those behind us).
 */
async function carriedInLine({ p, turn }: Run, step: Doing<"await carried">): Promise<Event> {
  await p.onStage("queue");
  const looking = { on: true };
  const watching = watchCarried(p, step.mine, step.last.etag, looking);
  const first = await Promise.race([turn.began.then(() => null), watching]);
  looking.on = false;
  if (first !== null) return { got: "carried", landed: true, at: first };
  // Our turn: the look still out ends at its next wake-up.
  await watching.catch(() => {});
  return { got: "carried", landed: false, current: await readManifest(turn.store) };
}

/** Until a manifest lists our proposal in `combined` (its entry), or `looking.on` turns false (null). */
async function watchCarried(p: Publisher, mine: OwnProposal, etag: string | null, looking: { on: boolean }): Promise<CombinedPublication | null> {
  for (let seen = etag; ; ) {
    await p.sleep(LINE_LOOK_MS * (0.5 + p.random()));
    if (!looking.on) return null;
    const now = await readCurrentIfChanged(p.store, seen);
    if (now === "unchanged" || now === null) continue;
    seen = now.etag;
    const fate = fateOf(parseManifest(now.body), mine.proposal);
    if (typeof fate === "object") return fate.landed;
  }
}
