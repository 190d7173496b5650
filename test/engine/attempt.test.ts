/**
 * The attempt's state machine (src/engine/publish/attempt.ts), without a
 * store: a table of its transitions, and a property test that drives
 * random store answers through it and checks the invariants of
 * docs/storage-protocol.md, "The attempt, as a state machine", one by one.
 * The machine's states carry what the commit found (a manifest, a merge, a
 * proposal): the answers here are small made-up values of those shapes.
 */
import { describe, expect, test } from "bun:test";
import fc from "fast-check";
import type { DomainError, ErrorFile } from "../../src/contract/errors.ts";
import type { Baseline } from "../../src/engine/checkout/state.ts";
import type { FlatTree } from "../../src/engine/git/object-cache.ts";
import type { AcceptedState, ManifestRead } from "../../src/engine/publish/accepted-state.ts";
import { type AttemptRules, type AttemptState, type Event, next, start, type Step, type Transition } from "../../src/engine/publish/attempt.ts";
import type { Carried } from "../../src/engine/publish/combine.ts";
import type { Manifest } from "../../src/engine/publish/manifest.ts";
import type { OwnProposal } from "../../src/engine/publish/offer.ts";
import type { Landed, LostAttempt } from "../../src/engine/publish/write.ts";
import { StoreError } from "../../src/store/object-store.ts";

const BASELINE: Baseline = { generation: 3, head: "h3", tree: "t3" };
const RACING: AttemptRules = { retries: 3, ordered: false, line: false, guess: false, meetAtOnce: true, baseline: BASELINE };
const TURN: AttemptRules = { retries: 3, ordered: true, line: false, guess: true, meetAtOnce: true, baseline: BASELINE };
const LINE: AttemptRules = { ...TURN, line: true };
const GUESSING: AttemptRules = { ...RACING, guess: true };

const FILES: FlatTree = new Map([["a.md", "blob-a"]]);
const CHANGED: FlatTree = new Map([["a.md", "blob-a2"]]);
const CONFLICTS: ErrorFile[] = [{ path: "a.md", reason: "TEXT_CONFLICT", ranges: [] }];
const PUBLICATION = "p".repeat(32);
/** Our proposal: combined only onto generations below 100. */
const MINE = { proposal: { publication: PUBLICATION, until: 100 }, merged: CHANGED, tree: "t-mine", parentFiles: FILES } as unknown as OwnProposal;
const OURS_AT = { publication: PUBLICATION, generation: 9, head: "h9" };

/** A manifest at `generation` (heads named after their generation; the baseline's is h3), listing `combined`. */
function manifest(generation: number, combined: Array<typeof OURS_AT> = []): Manifest {
  return { generation, head: `h${generation}`, combined } as unknown as Manifest;
}
const current = (generation = 3, combined: Array<typeof OURS_AT> = []): ManifestRead => ({ manifest: manifest(generation, combined), etag: `e${generation}` });
function accepted(generation = 3, combined: Array<typeof OURS_AT> = []): AcceptedState {
  return { ...current(generation, combined), generation, head: `h${generation}`, tree: `t${generation}`, files: FILES, trees: new Set(), dirs: new Map() };
}

/** The manifest an offered commit reads, saying `fate` of our proposal. */
function fated(fate: "landed" | "waiting" | "expired" | "unknown"): AcceptedState {
  if (fate === "landed") return accepted(9, [OURS_AT]);
  return accepted(fate === "waiting" ? 50 : fate === "expired" ? 120 : 500);
}

const LISTING = Promise.resolve([]);
const CARRIED = { state: accepted(4), objects: [], combined: [] } as unknown as Carried;
const LOST_ATTEMPT = {} as LostAttempt;
const storeFailure = () => new StoreError("get", "the store failed");

const ev = {
  contention: (level = 0, othersWaiting = false): Event => ({ got: "contention", level, othersWaiting }),
  recalled: (guess: AcceptedState | null = accepted()): Event => ({ got: "recalled", guess }),
  current: (generation = 3): Event => ({ got: "current", current: current(generation), started: 0, listing: LISTING }),
  accepted: (state = accepted(), at: string | null = null): Event => ({ got: "accepted", accepted: state, at }),
  remembered: (): Event => ({ got: "remembered" }),
  merged: (result: "conflict" | "nothing new" | "changes"): Event => ({
    got: "merged",
    merge: result === "conflict" ? { result: CHANGED, conflicts: CONFLICTS } : { result: result === "nothing new" ? new Map(FILES) : CHANGED, conflicts: [] },
  }),
  conflictsWritten: (): Event => ({ got: "conflicts written", conflicts: [] }),
  listed: (othersWaiting: boolean): Event => ({ got: "listed", listed: [], othersWaiting }),
  combined: (carries: boolean): Event => (carries ? { got: "combined", carried: CARRIED, merged: CHANGED } : { got: "combined", carried: null, merged: null }),
  landed: (ownAt: typeof OURS_AT | null = null): Event => ({ got: "written", landed: true, written: { landed: true, ownAt } as unknown as Landed }),
  lost: (ours = true, outOfTime = false, generation = 5): Event => ({ got: "written", landed: false, current: current(generation), attempt: ours ? LOST_ATTEMPT : null, windowMs: 7, outOfTime }),
  offered: (): Event => ({ got: "offered", mine: MINE }),
  forgotten: (): Event => ({ got: "forgotten" }),
  withdrawn: (landed: "yes" | "no" | "unknown"): Event => (landed === "yes" ? { got: "withdrawn", landed, at: OURS_AT } : { got: "withdrawn", landed }),
  waited: (): Event => ({ got: "waited" }),
  carried: (landed: boolean): Event => (landed ? { got: "carried", landed, at: OURS_AT } : { got: "carried", landed, current: current(6) }),
  failed: (failure: unknown = storeFailure()): Event => ({ got: "failed", failure }),
};

/** The machine fed `events` from its start. */
function after(rules: AttemptRules, events: Event[]): Transition {
  let t = start(rules);
  for (const e of events) t = next(t.state, e, rules);
  return t;
}

/** Ways into the states the rows start from. */
const READ = [ev.current(), ev.accepted(), ev.remembered()];
const GUESSED = [ev.contention(), ev.recalled(), ev.current(), ev.accepted()];
const LOST = [...READ, ev.merged("changes"), ev.listed(false), ev.lost()];
const OFFERED = [...LOST, ev.offered()];
const OFFERED_READ = [...OFFERED, ev.carried(false), ev.current(6), ev.accepted(fated("waiting")), ev.remembered()];
const OFFERED_WRITE = [...OFFERED_READ, ev.listed(false), ev.combined(true)];
const SPENT = (rules: AttemptRules) => [...READ, ...Array.from({ length: rules.retries }, () => [ev.merged("changes"), ev.listed(false), ev.lost(false), ev.waited(), ev.current(), ev.accepted(), ev.remembered()]).flat()];

/** A step without its data: what the rows compare. */
function shape(step: Step): Record<string, unknown> {
  const keys = ["do", "from", "own", "final", "failed", "lost", "how", "why", "list"];
  // A write's `own` names our proposal's publication; a combine's says whether ours is among those moved.
  return Object.fromEntries(Object.entries(step).filter(([k, v]) => keys.includes(k) && (k !== "own" || typeof v === "boolean")));
}

describe("transitions", () => {
  const rows: Array<[string, AttemptRules, Event[], Event, { state: AttemptState["state"]; step: Record<string, unknown> }]> = [
    ["calm: recall the guess", GUESSING, [], ev.contention(), { state: "recalling", step: { do: "recall" } }],
    ["races lost lately: read", GUESSING, [], ev.contention(2), { state: "reading", step: { do: "read", from: "read", list: true } }],
    ["others seen waiting: read, to carry them", GUESSING, [], ev.contention(0, true), { state: "reading", step: { do: "read", from: "read", list: true } }],
    ["nothing remembered: read", GUESSING, [ev.contention()], ev.recalled(null), { state: "reading", step: { do: "read", from: "read", list: true } }],
    ["remembered: guess", GUESSING, [ev.contention()], ev.recalled(), { state: "guessing", step: { do: "read", from: "guess", list: true } }],
    ["a read current is loaded", RACING, [], ev.current(), { state: "reading", step: { do: "load" } }],
    ["a current behind the baseline is refused before any pack is read", RACING, [], ev.current(2), { state: "refused", step: { do: "refuse", why: "HISTORY_INVALID" } }],
    ["a history that does not pass through the baseline is refused", RACING, [ev.current(5)], ev.accepted(accepted(5), "another"), { state: "refused", step: { do: "refuse", why: "HISTORY_INVALID" } }],
    ["a read accepted state is remembered", RACING, [ev.current()], ev.accepted(), { state: "reading", step: { do: "remember" } }],
    ["a guess merges what it found, remembered already", GUESSING, GUESSED.slice(0, 3), ev.accepted(), { state: "guessing", step: { do: "merge" } }],
    ["remembered: merge", RACING, READ.slice(0, 2), ev.remembered(), { state: "reading", step: { do: "merge" } }],
    ["a guess with nothing new reads before answering", GUESSING, GUESSED, ev.merged("nothing new"), { state: "reading", step: { do: "read", from: "read", list: true } }],
    ["a read with nothing new is a synchronisation", RACING, READ, ev.merged("nothing new"), { state: "landed", step: { do: "land", how: "synchronised" } }],
    ["a conflict is written into the files, the turn ended", RACING, READ, ev.merged("conflict"), { state: "reading", step: { do: "write conflicts" } }],
    ["then refused", RACING, [...READ, ev.merged("conflict")], ev.conflictsWritten(), { state: "refused", step: { do: "refuse", why: "MERGE_CONFLICT" } }],
    ["a guess writes without waiting for its listing", GUESSING, GUESSED, ev.merged("changes"), { state: "guessing", step: { do: "write" } }],
    ["a racing read waits for the listing", RACING, READ, ev.merged("changes"), { state: "reading", step: { do: "list" } }],
    ["a turn waits for its listing, to carry those offered from the line", TURN, READ, ev.merged("changes"), { state: "reading", step: { do: "list" } }],
    ["a turn carries those offered from the line", TURN, [...READ, ev.merged("changes")], ev.listed(true), { state: "reading", step: { do: "combine", own: false } }],
    ["a turn with nobody offered writes alone", TURN, [...READ, ev.merged("changes")], ev.listed(false), { state: "reading", step: { do: "write" } }],
    ["from the line: read, listing", LINE, [], ev.current(), { state: "lining", step: { do: "load" } }],
    ["from the line: changes are offered before anything is written", LINE, READ, ev.merged("changes"), { state: "lining", step: { do: "offer" } }],
    ["from the line: nothing new is a synchronisation", LINE, READ, ev.merged("nothing new"), { state: "landed", step: { do: "land", how: "synchronised" } }],
    ["from the line: a conflict is written, the place in line left", LINE, READ, ev.merged("conflict"), { state: "lining", step: { do: "write conflicts" } }],
    ["offered from the line: wait to be carried, or for the turn", LINE, [...READ, ev.merged("changes")], ev.offered(), { state: "offered", step: { do: "await carried" } }],
    ["carried by a turn ahead", LINE, [...READ, ev.merged("changes"), ev.offered()], ev.carried(true), { state: "landed", step: { do: "land", how: "carried" } }],
    ["our turn came: read on as offered", LINE, [...READ, ev.merged("changes"), ev.offered()], ev.carried(false), { state: "offered", step: { do: "read", from: "proved", list: true } }],
    ["in our turn, ours first with those behind", LINE, [...READ, ev.merged("changes"), ev.offered(), ev.carried(false), ev.current(6), ev.accepted(fated("waiting")), ev.remembered()], ev.listed(true), { state: "offered", step: { do: "combine", own: true } }],
    ["others waiting are combined", RACING, [...READ, ev.merged("changes")], ev.listed(true), { state: "reading", step: { do: "combine", own: false } }],
    ["nobody waiting: write alone", RACING, [...READ, ev.merged("changes")], ev.listed(false), { state: "reading", step: { do: "write" } }],
    ["combined: write on the others", RACING, [...READ, ev.merged("changes"), ev.listed(true)], ev.combined(true), { state: "reading", step: { do: "write" } }],
    ["a write that landed lands", RACING, [...READ, ev.merged("changes"), ev.listed(false)], ev.landed(), { state: "landed", step: { do: "land", how: "written" } }],
    ["a stale guess reads the proved state, no retry spent", GUESSING, [...GUESSED, ev.merged("changes")], ev.lost(), { state: "proved", step: { do: "read", from: "proved", list: true } }],
    ["a racing loser offers its attempt", RACING, LOST.slice(0, -1), ev.lost(), { state: "reading", step: { do: "offer", lost: undefined } }],
    ["a meeting of two: build on the winner at once", RACING, LOST.slice(0, -1), ev.lost(true, false, 4), { state: "proved", step: { do: "read", from: "proved", list: true } }],
    ["a meeting of two, the second loss: offer", RACING, [...LOST.slice(0, -1), ev.lost(true, false, 4), ev.current(4), ev.accepted(accepted(4)), ev.remembered(), ev.merged("changes"), ev.listed(false)], ev.lost(true, false, 5), { state: "proved", step: { do: "offer" } }],
    ["a meeting of two, meetAtOnce off: offer", { ...RACING, meetAtOnce: false }, LOST.slice(0, -1), ev.lost(true, false, 4), { state: "reading", step: { do: "offer" } }],
    ["a loser in a turn backs off", TURN, [...READ, ev.merged("changes"), ev.listed(false)], ev.lost(), { state: "reading", step: { do: "back off", lost: 1 } }],
    ["a loser whose write carried only others backs off", RACING, LOST.slice(0, -1), ev.lost(false), { state: "reading", step: { do: "back off", lost: 1 } }],
    ["a read-back behind the baseline is refused", RACING, LOST.slice(0, -1), ev.lost(true, false, 2), { state: "refused", step: { do: "refuse", why: "HISTORY_INVALID" } }],
    ["retries spent: refused", RACING, [...SPENT(RACING), ev.merged("changes"), ev.listed(false)], ev.lost(), { state: "refused", step: { do: "refuse", why: "RETRIES_EXHAUSTED" } }],
    ["deadline passed: refused", RACING, LOST.slice(0, -1), ev.lost(true, true), { state: "refused", step: { do: "refuse", why: "RETRIES_EXHAUSTED" } }],
    ["a backoff ends in a read of the proved state", RACING, [...LOST.slice(0, -1), ev.lost(false)], ev.waited(), { state: "proved", step: { do: "read", from: "proved", list: true } }],
    ["in a turn, the next read is a read", TURN, [...READ, ev.merged("changes"), ev.listed(false), ev.lost()], ev.waited(), { state: "reading", step: { do: "read", from: "read", list: true } }],
    ["offered: watch for being carried", RACING, LOST, ev.offered(), { state: "offered", step: { do: "await carried" } }],
    ["carried", RACING, OFFERED, ev.carried(true), { state: "landed", step: { do: "land", how: "carried" } }],
    ["not carried: build on what was seen", RACING, OFFERED, ev.carried(false), { state: "offered", step: { do: "read", from: "proved", list: true } }],
    ["a manifest lists our proposal", RACING, [...OFFERED_READ.slice(0, -2), ev.accepted(fated("landed"))], ev.remembered(), { state: "landed", step: { do: "land", how: "carried" } }],
    ["our proposal's fate cannot be told", RACING, [...OFFERED_READ.slice(0, -2), ev.accepted(fated("unknown"))], ev.remembered(), { state: "refused", step: { do: "refuse", why: "PUBLICATION_UNPROVEN" } }],
    ["our proposal expired: forget it", RACING, [...OFFERED_READ.slice(0, -2), ev.accepted(fated("expired"))], ev.remembered(), { state: "offered", step: { do: "forget proposal" } }],
    ["forgotten: merge afresh", RACING, [...OFFERED_READ.slice(0, -2), ev.accepted(fated("expired")), ev.remembered()], ev.forgotten(), { state: "reading", step: { do: "merge" } }],
    ["waiting: list, to carry ours with the others", RACING, OFFERED_READ.slice(0, -1), ev.remembered(), { state: "offered", step: { do: "list" } }],
    ["listed: combine ours", RACING, OFFERED_READ, ev.listed(false), { state: "offered", step: { do: "combine", own: true } }],
    ["ours no longer moves cleanly: withdraw it", RACING, [...OFFERED_READ, ev.listed(false)], ev.combined(false), { state: "withdrawing", step: { do: "withdraw", final: false, failed: false } }],
    ["our write of our proposal landed", RACING, OFFERED_WRITE, ev.landed(OURS_AT), { state: "landed", step: { do: "land", how: "carried" } }],
    ["our write of our proposal lost: watch again", RACING, OFFERED_WRITE, ev.lost(false), { state: "offered", step: { do: "await carried" } }],
    ["offered, deadline passed: withdraw before answering", RACING, OFFERED_WRITE, ev.lost(false, true), { state: "withdrawing", step: { do: "withdraw", final: true, failed: false } }],
    ["withdrawn, it had landed", RACING, [...OFFERED_WRITE, ev.lost(false, true)], ev.withdrawn("yes"), { state: "landed", step: { do: "land", how: "carried" } }],
    ["withdrawn when giving up", RACING, [...OFFERED_WRITE, ev.lost(false, true)], ev.withdrawn("no"), { state: "refused", step: { do: "refuse", why: "RETRIES_EXHAUSTED" } }],
    ["giving up, the withdrawal unproved: refused, its record kept", RACING, [...OFFERED_WRITE, ev.lost(false, true)], ev.withdrawn("unknown"), { state: "refused", step: { do: "refuse", why: "RETRIES_EXHAUSTED" } }],
    ["withdrawn afresh: read and merge again", RACING, [...OFFERED_WRITE.slice(0, -1), ev.combined(false)], ev.withdrawn("no"), { state: "reading", step: { do: "read", from: "read", list: true } }],
    ["withdrawn afresh, unproved", RACING, [...OFFERED_WRITE.slice(0, -1), ev.combined(false)], ev.withdrawn("unknown"), { state: "refused", step: { do: "refuse", why: "PUBLICATION_UNPROVEN" } }],
    ["a failure with no proposal out stands", RACING, READ, ev.failed(), { state: "refused", step: { do: "refuse", why: "failed" } }],
    ["the store failed with our proposal out: take it back to prove its fate", RACING, OFFERED, ev.failed(), { state: "withdrawing", step: { do: "withdraw", final: true, failed: true } }],
    ["a failure of our own with our proposal out stands", RACING, OFFERED, ev.failed(new Error("a bug")), { state: "refused", step: { do: "refuse", why: "failed" } }],
    ["taken back after the failure, it had landed", RACING, [...OFFERED, ev.failed()], ev.withdrawn("yes"), { state: "landed", step: { do: "land", how: "carried" } }],
    ["taken back after the failure, not landed: the failure stands", RACING, [...OFFERED, ev.failed()], ev.withdrawn("no"), { state: "refused", step: { do: "refuse", why: "failed" } }],
    ["taken back after the failure, unproved", RACING, [...OFFERED, ev.failed()], ev.withdrawn("unknown"), { state: "refused", step: { do: "refuse", why: "PUBLICATION_UNPROVEN" } }],
    ["a failure of the withdrawal that proves stands", RACING, [...OFFERED, ev.failed()], ev.failed(), { state: "refused", step: { do: "refuse", why: "failed" } }],
  ];
  for (const [name, rules, before, event, expected] of rows) {
    test(name, () => {
      const { state } = after(rules, before);
      const got = next(state, event, rules);
      const want = Object.fromEntries(Object.entries(expected.step).filter(([, v]) => v !== undefined));
      expect({ state: got.state.state, step: shape(got.step) }).toEqual({ state: expected.state, step: want });
    });
  }

  test("the start: ask the memory, or read (never in a turn)", () => {
    expect(start(GUESSING).step).toEqual({ do: "settle contention" });
    expect(shape(start(RACING).step)).toEqual({ do: "read", from: "read", list: true });
    expect(shape(start(TURN).step)).toEqual({ do: "read", from: "read", list: true });
    expect(start(LINE).state.state).toBe("lining");
  });

  test("an offer from the line carries what the runner builds it from: the state read, our merge onto it, nothing prepared", () => {
    const { step } = after(LINE, [...READ, ev.merged("changes")]);
    expect(step).toMatchObject({ do: "offer", attempt: null, alone: CHANGED, carried: false, generation: 3 });
  });

  test("steps carry what the runner needs: the offer its lost attempt and the generation its read-back proved", () => {
    const { step } = after(RACING, LOST);
    expect(step).toMatchObject({ do: "offer", attempt: LOST_ATTEMPT, alone: CHANGED, carried: false, generation: 5 });
    const watch = after(RACING, OFFERED).step;
    expect(watch).toMatchObject({ do: "await carried", mine: MINE, last: { etag: "e5" }, windowMs: 7 });
    const landed = after(RACING, [...READ, ev.merged("changes"), ev.listed(false), ev.landed()]).step;
    expect(landed).toMatchObject({ do: "land", how: "written", merged: CHANGED });
  });

  test("refusals carry their answer, in the table's words", () => {
    const answer = (events: Event[]) => {
      const { step } = after(RACING, events);
      if (step.do !== "refuse") throw new Error(`not refused: ${step.do}`);
      return step.error as DomainError;
    };
    const spent = answer([...SPENT(RACING), ev.merged("changes"), ev.listed(false), ev.lost()]);
    expect([spent.code, spent.reason, spent.message]).toEqual(["REMOTE_BUSY", "RETRIES_EXHAUSTED", expect.stringContaining("won the race 4 times in a row;")]);
    expect(answer([...LOST.slice(0, -1), ev.lost(true, true)]).message).toContain("won the race 1 times in a row until the call deadline");
    const conflict = answer([...READ, ev.merged("conflict"), ev.conflictsWritten()]);
    expect([conflict.reason, conflict.files]).toEqual(["MERGE_CONFLICT", CONFLICTS]);
    expect(answer([ev.current(2)]).reason).toBe("HISTORY_INVALID");
    const failure = storeFailure();
    expect(answer([...OFFERED, ev.failed(failure), ev.withdrawn("no")])).toBe(failure as unknown as DomainError);
    const unproven = answer([...OFFERED, ev.failed(failure), ev.withdrawn("unknown")]);
    expect([unproven.reason, unproven.cause]).toEqual(["PUBLICATION_UNPROVEN", failure]);
  });

  test("an event a state does not expect is a runner's bug: it throws", () => {
    expect(() => next(after(RACING, [...OFFERED_WRITE.slice(0, -1), ev.combined(false)]).state, ev.merged("changes"), RACING)).toThrow();
    expect(() => next(after(RACING, READ).state, ev.listed(true), RACING)).toThrow();
    expect(() => next(after(RACING, [...READ, ev.merged("nothing new")]).state, ev.current(), RACING)).toThrow();
  });
});

/** The answers a store (and the merge) may give to each step, chosen by the property test. */
interface Answers {
  calm: boolean[];
  remembered: boolean[];
  fate: Array<"landed" | "waiting" | "expired" | "unknown">;
  merged: Array<"conflict" | "nothing new" | "changes">;
  othersWaiting: boolean[];
  carries: boolean[];
  writeLands: boolean[];
  outOfTime: boolean[];
  withdrawn: Array<"yes" | "no" | "unknown">;
  carried: boolean[];
  /** A read, a history or a lost write's read-back shows a store behind the baseline. */
  backwards: boolean[];
  /** A lost write met one other publication only (its read-back one generation past the state it built on), not a crowd. */
  metOne: boolean[];
  /** A step fails at the store: with no proposal of ours out, and with one out. */
  fails: boolean[];
  failsOut: boolean[];
}

const some = <T>(values: fc.Arbitrary<T>) => fc.array(values, { minLength: 1, maxLength: 40 });
const rarely = some(fc.constantFrom(false, false, false, false, false, false, false, false, false, true));
const answers: fc.Arbitrary<Answers> = fc.record({
  calm: some(fc.boolean()),
  remembered: some(fc.boolean()),
  fate: some(fc.constantFrom("landed", "waiting", "expired", "unknown")),
  merged: some(fc.constantFrom("conflict", "nothing new", "changes", "changes", "changes")),
  othersWaiting: some(fc.boolean()),
  carries: some(fc.boolean()),
  writeLands: some(fc.boolean()),
  outOfTime: some(fc.boolean()),
  withdrawn: some(fc.constantFrom("yes", "no", "unknown")),
  carried: some(fc.boolean()),
  backwards: rarely,
  metOne: some(fc.boolean()),
  fails: rarely,
  failsOut: some(fc.constantFrom(false, false, false, true)),
});

interface Entry {
  state: AttemptState;
  step: Step;
  event?: Event;
  /** What the manifest an offered commit read said of its proposal. */
  fate?: Answers["fate"][number];
  backwards?: boolean;
}

/** One run of the machine against scripted answers: every step taken, with the state it was taken in, until an end. */
function drive(rules: AttemptRules, a: Answers, deadlineNever: boolean): Entry[] {
  const counters = new Map<string, number>();
  const nextOf = <K extends keyof Answers>(name: K): Answers[K][number] => {
    const i = counters.get(name) ?? 0;
    counters.set(name, i + 1);
    return a[name][i % a[name].length]!;
  };
  let { state, step } = start(rules);
  const trace: Entry[] = [];
  for (let n = 0; n < 10_000; n++) {
    if (step.do === "land" || step.do === "refuse") {
      trace.push({ state, step });
      return trace;
    }
    const entry: Entry = { state, step };
    const out = state.state === "offered" || state.state === "withdrawing";
    entry.event = nextOf(out ? "failsOut" : "fails") ? ev.failed() : answer(step, state, entry, nextOf, deadlineNever);
    trace.push(entry);
    ({ state, step } = next(state, entry.event, rules));
  }
  throw new Error("the machine did not end");
}

function answer(step: Step, state: AttemptState, entry: Entry, nextOf: <K extends keyof Answers>(name: K) => Answers[K][number], deadlineNever: boolean): Event {
  switch (step.do) {
    case "settle contention":
      return ev.contention(nextOf("calm") ? 0 : 1);
    case "recall":
      return ev.recalled(nextOf("remembered") ? accepted() : null);
    case "read": {
      entry.backwards = nextOf("backwards");
      const read = step.from === "proved" ? step.proved : current();
      return { got: "current", current: entry.backwards ? current(2) : read, started: 0, listing: step.list ? LISTING : null };
    }
    case "load":
      entry.backwards = nextOf("backwards");
      if (entry.backwards) return ev.accepted(accepted(5), "another");
      if (state.state !== "offered") return ev.accepted();
      entry.fate = nextOf("fate");
      return ev.accepted(fated(entry.fate));
    case "remember":
      return ev.remembered();
    case "merge":
      return ev.merged(nextOf("merged"));
    case "write conflicts":
      return ev.conflictsWritten();
    case "list":
      return ev.listed(nextOf("othersWaiting"));
    case "combine":
      return ev.combined(nextOf("carries"));
    case "write":
      if (nextOf("writeLands")) return ev.landed(step.own !== null ? OURS_AT : null);
      entry.backwards = nextOf("backwards");
      return ev.lost(step.merged !== null, !deadlineNever && nextOf("outOfTime"), entry.backwards ? 2 : lostAt(step, nextOf("metOne")));
    case "offer":
      return ev.offered();
    case "forget proposal":
      return ev.forgotten();
    case "withdraw":
      return ev.withdrawn(nextOf("withdrawn"));
    case "back off":
      return ev.waited();
    case "await carried":
      return ev.carried(nextOf("carried"));
    case "land":
    case "refuse":
      throw new Error("an end has no answer");
  }
}

/** The generation a lost write reads back: one past the state it built on (a meeting of two), or further (a crowd). */
function lostAt(step: Step & { do: "write" }, metOne: boolean): number {
  return metOne ? step.accepted.generation + 1 : step.accepted.generation + 2;
}

/** Whether our proposal is out before each entry's step, as the steps and their answers say. */
function outBefore(trace: Entry[]): boolean[] {
  let out = false;
  return trace.map((t) => {
    const was = out;
    if (t.event?.got === "offered") out = true;
    if (t.step.do === "forget proposal" || (t.event?.got === "withdrawn" && t.event.landed === "no")) out = false;
    return was;
  });
}

describe("invariants (docs/storage-protocol.md, The attempt, as a state machine)", () => {
  const runs = fc.record({
    guess: fc.boolean(),
    retries: fc.integer({ min: 0, max: 6 }),
    ordered: fc.boolean(),
    line: fc.boolean(),
    meetAtOnce: fc.boolean(),
    deadlineNever: fc.boolean(),
    a: answers,
  });
  const check = (property: (trace: Entry[], r: { rules: AttemptRules; deadlineNever: boolean }) => void) =>
    fc.assert(
      fc.property(runs, ({ guess, retries, ordered, line, meetAtOnce, deadlineNever, a }) => {
        const rules: AttemptRules = { retries, ordered, line: ordered && line, guess, meetAtOnce, baseline: BASELINE };
        property(drive(rules, a, deadlineNever), { rules, deadlineNever });
      }),
      { numRuns: 400 },
    );
  const ownLostWrites = (trace: Entry[]) =>
    trace.filter((t) => t.step.do === "write" && t.event?.got === "written" && !t.event.landed && t.state.state !== "guessing").length;

  test("1. every commit ends, within a number of steps bounded by its retries", () => {
    check((trace, { rules }) => {
      const last = trace[trace.length - 1]!;
      expect(["land", "refuse"]).toContain(last.step.do);
      expect(trace.length).toBeLessThanOrEqual(30 * (rules.retries + 2));
    });
  });

  test("2. OK only on proof: a write acknowledged, a manifest listing our proposal, or nothing new against a read", () => {
    check((trace) => {
      const last = trace[trace.length - 1]!;
      if (last.step.do !== "land") return;
      const before = trace[trace.length - 2]!;
      const e = before.event!;
      const listed = trace.findLast((t) => t.step.do === "load")?.fate === "landed";
      const proof =
        (e.got === "written" && e.landed) ||
        (e.got === "remembered" && before.state.state === "offered" && listed) ||
        (e.got === "carried" && e.landed) ||
        (e.got === "withdrawn" && e.landed === "yes") ||
        (e.got === "merged" && e.merge.conflicts.length === 0 && before.state.state !== "guessing");
      expect(proof).toBe(true);
      if (e.got === "merged") expect(last.step).toMatchObject({ how: "synchronised" });
    });
  });

  test("3. a guess costs nothing but its pack: no retry, no backoff, no offer, a read next (past the deadline, an answer); nothing new against it reads first", () => {
    check((trace) => {
      for (let i = 0; i < trace.length - 1; i++) {
        const t = trace[i]!;
        if (t.state.state !== "guessing" || t.event?.got !== "written" || t.event.landed || t.backwards) continue;
        const after = trace[i + 1]!;
        expect(after.state.lost).toBe(0);
        // Past the deadline it answers (invariant 8); else it reads.
        if (t.event.outOfTime) expect(after.step).toMatchObject({ do: "refuse", why: "RETRIES_EXHAUSTED" });
        else expect(after.step).toMatchObject({ do: "read", from: expect.stringMatching(/^(read|proved)$/) });
      }
      for (const t of trace) if (t.state.state === "guessing") expect(["read", "load", "merge", "write", "write conflicts"]).toContain(t.step.do);
    });
  });

  test("4. a turn is never raced: no guess; every read lists the proposals, to carry them; a commit offers only from the line, before it writes, never after a lost write in a turn", () => {
    check((trace, { rules }) => {
      if (!rules.ordered) return;
      for (const t of trace) expect(["settle contention", "recall"]).not.toContain(t.step.do);
      for (const t of trace) if (t.step.do === "read") expect(t.step.from === "guess" || !t.step.list).toBe(false);
      const offers = trace.filter((t) => t.step.do === "offer");
      if (!rules.line) expect(trace.filter((t) => ["offer", "await carried", "withdraw", "forget proposal"].includes(t.step.do))).toEqual([]);
      for (const t of offers) expect({ state: t.state.state, attempt: (t.step as Step & { do: "offer" }).attempt }).toEqual({ state: "lining", attempt: null });
      // Nothing is written before the offer.
      if (offers.length > 0) expect(trace.slice(0, trace.indexOf(offers[0]!)).filter((t) => t.step.do === "write")).toEqual([]);
    });
  });

  test("5. at most one proposal, offered only after a lost write of our own, with a retry left and time left — or from the line, first thing", () => {
    check((trace, { rules }) => {
      const out = outBefore(trace);
      for (let i = 0; i < trace.length; i++) {
        if (trace[i]!.step.do !== "offer") continue;
        expect(out[i]).toBe(false);
        if (trace[i]!.state.state === "lining") {
          expect(trace.slice(0, i).map((t) => t.step.do)).toEqual(["read", "load", "remember", "merge"]);
          continue;
        }
        const lostBefore = trace[i - 1]!;
        expect(lostBefore.event).toMatchObject({ got: "written", landed: false, attempt: LOST_ATTEMPT, outOfTime: false });
        expect(lostBefore.state.lost).toBeLessThan(rules.retries);
      }
    });
  });

  test("6. no refusal leaves a proposal out unless its fate is final or the store went backwards: RETRIES_EXHAUSTED and a store failure only after withdrawing it; a conflict only with none out", () => {
    check((trace) => {
      const out = outBefore(trace);
      for (let i = 0; i < trace.length; i++) {
        const { step } = trace[i]!;
        if (step.do !== "refuse" || !out[i]) continue;
        const withdrawnLast = trace[i - 1]?.step.do === "withdraw";
        if (step.why === "MERGE_CONFLICT") expect(out[i]).toBe(false);
        if (step.why === "RETRIES_EXHAUSTED") expect(withdrawnLast).toBe(true);
        if (step.why === "failed" && step.error instanceof StoreError) expect(withdrawnLast).toBe(true);
      }
    });
  });

  test("7. retries are counted: RETRIES_EXHAUSTED after exactly retries + 1 lost writes of our own, unless the deadline passed", () => {
    check((trace, { rules, deadlineNever }) => {
      const last = trace[trace.length - 1]!;
      if (last.step.do !== "refuse" || last.step.why !== "RETRIES_EXHAUSTED") {
        expect(ownLostWrites(trace)).toBeLessThanOrEqual(rules.retries + 1);
        return;
      }
      if (deadlineNever) expect(ownLostWrites(trace)).toBe(rules.retries + 1);
      else expect(ownLostWrites(trace)).toBeLessThanOrEqual(rules.retries + 1);
    });
  });

  test("8. nothing is written after the deadline", () => {
    check((trace) => {
      const passed = trace.findIndex((t) => t.event?.got === "written" && !t.event.landed && t.event.outOfTime);
      if (passed < 0) return;
      for (const t of trace.slice(passed + 1)) expect(["write", "offer"]).not.toContain(t.step.do);
    });
  });

  test("9. a store that went backwards is never built on: the commit refuses HISTORY_INVALID at once, and only then", () => {
    check((trace) => {
      for (let i = 0; i < trace.length - 1; i++) {
        const backwards = trace[i]!.backwards === true && trace[i]!.event?.got !== "failed";
        if (backwards) expect(trace[i + 1]!.step).toMatchObject({ do: "refuse", why: "HISTORY_INVALID" });
        if (trace[i + 1]!.step.do === "refuse" && (trace[i + 1]!.step as { why: string }).why === "HISTORY_INVALID") expect(backwards).toBe(true);
      }
    });
  });

  test("10. a store failure with our proposal out is answered only once taking it back proved its fate; any other failure is the answer", () => {
    check((trace) => {
      const out = outBefore(trace);
      for (let i = 0; i < trace.length - 1; i++) {
        const t = trace[i]!;
        if (t.event?.got !== "failed") continue;
        const proving = t.step.do === "withdraw" && t.step.failed;
        if (out[i] && !proving) expect(shape(trace[i + 1]!.step)).toEqual({ do: "withdraw", final: true, failed: true });
        else expect(trace[i + 1]!.step).toMatchObject({ do: "refuse", why: "failed", error: (t.event as { failure: unknown }).failure });
      }
    });
  });

  test("11. a guess only when the process lost no race lately, saw nobody waiting, and remembers a state; every state read is remembered before it is built on, a guess never", () => {
    check((trace, { rules }) => {
      const guessing = trace.findIndex((t) => t.state.state === "guessing");
      if (guessing >= 0) {
        expect(rules.guess && !rules.ordered).toBe(true);
        expect(trace[0]!.event).toEqual(ev.contention(0, false));
        expect(trace[guessing - 1]!.event).toMatchObject({ got: "recalled", guess: expect.anything() });
      }
      for (let i = 0; i < trace.length; i++) {
        const t = trace[i]!;
        if (t.step.do === "remember") expect(t.state.state).not.toBe("guessing");
        if (t.step.do !== "load" || t.event?.got !== "accepted" || t.backwards) continue;
        expect(trace[i + 1]!.step.do).toBe(t.state.state === "guessing" ? "merge" : "remember");
      }
    });
  });

  test("13. a meeting of two is answered in one more round: a first lost write of our own, carrying nobody, against one publication, builds on it at once — no offer, no backoff", () => {
    check((trace, { rules }) => {
      let met = 0;
      for (let i = 0; i < trace.length; i++) {
        const t = trace[i]!;
        const e = t.event;
        if (rules.ordered || t.step.do !== "write" || e?.got !== "written" || e.landed || t.state.state === "guessing" || t.state.state === "offered") continue;
        if (t.backwards || e.outOfTime || t.state.lost >= rules.retries || e.attempt === null) continue;
        const meeting = rules.meetAtOnce && t.state.lost === 0 && t.step.carried === null && e.current.manifest?.generation === t.step.accepted.generation + 1;
        const after = trace[i + 1]!.step;
        if (meeting) {
          met++;
          expect(after).toMatchObject({ do: "read", from: "proved", proved: e.current });
        } else expect(after.do).toBe("offer");
      }
      return met;
    });
  });

  test("12. a conflict ends the turn and is written into the files before it is answered", () => {
    check((trace) => {
      for (let i = 0; i < trace.length; i++) {
        const t = trace[i]!;
        if (t.step.do === "refuse" && t.step.why === "MERGE_CONFLICT") expect(trace[i - 1]!.step.do).toBe("write conflicts");
        if (t.step.do === "write conflicts") expect(trace[i - 1]!.event).toMatchObject({ got: "merged", merge: { conflicts: CONFLICTS } });
      }
    });
  });
});
