/**
 * The attempt's state machine (src/engine/publish/attempt.ts), without a
 * store: a table of its transitions, and a property test that drives
 * random store answers through it and checks the invariants of
 * docs/storage-protocol.md, "The attempt, as a state machine", one by one.
 */
import { describe, expect, test } from "bun:test";
import fc from "fast-check";
import { type AttemptRules, type AttemptState, type Event, next, start, type Step } from "../../src/engine/publish/attempt.ts";

const RACING: AttemptRules = { retries: 3, ordered: false };
const TURN: AttemptRules = { retries: 3, ordered: true };
const lostWrite = (ours = true, outOfTime = false): Event => ({ got: "written", landed: false, ours, outOfTime });

describe("transitions", () => {
  const rows: Array<[string, AttemptState, Event, AttemptRules, { state: AttemptState["state"]; step: Step }]> = [
    ["a guess merges what it found", { state: "guessing", lost: 0 }, { got: "accepted" }, RACING, { state: "guessing", step: { do: "merge" } }],
    ["a guess with nothing new reads before answering", { state: "guessing", lost: 0 }, { got: "merged", result: "nothing new" }, RACING, { state: "reading", step: { do: "read", from: "read" } }],
    ["a read with nothing new is a synchronisation", { state: "reading", lost: 0 }, { got: "merged", result: "nothing new" }, RACING, { state: "landed", step: { do: "land", how: "synchronised" } }],
    ["a conflict is refused", { state: "proved", lost: 2 }, { got: "merged", result: "conflict" }, RACING, { state: "refused", step: { do: "refuse", why: "MERGE_CONFLICT" } }],
    ["a guess writes without waiting for its listing", { state: "guessing", lost: 0 }, { got: "merged", result: "changes" }, RACING, { state: "guessing", step: { do: "write" } }],
    ["a racing read waits for the listing", { state: "reading", lost: 0 }, { got: "merged", result: "changes" }, RACING, { state: "reading", step: { do: "list" } }],
    ["a turn writes at once", { state: "reading", lost: 0 }, { got: "merged", result: "changes" }, TURN, { state: "reading", step: { do: "write" } }],
    ["others waiting are combined", { state: "reading", lost: 0 }, { got: "listed", othersWaiting: true }, RACING, { state: "reading", step: { do: "combine", own: false } }],
    ["nobody waiting: write alone", { state: "reading", lost: 0 }, { got: "listed", othersWaiting: false }, RACING, { state: "reading", step: { do: "write" } }],
    ["a write that landed lands", { state: "reading", lost: 1 }, { got: "written", landed: true }, RACING, { state: "landed", step: { do: "land", how: "written" } }],
    ["a stale guess reads the proved state, no retry spent", { state: "guessing", lost: 0 }, lostWrite(), RACING, { state: "proved", step: { do: "read", from: "proved" } }],
    ["a racing loser offers its attempt", { state: "reading", lost: 0 }, lostWrite(), RACING, { state: "reading", step: { do: "offer" } }],
    ["a loser in a turn backs off", { state: "reading", lost: 0 }, lostWrite(), TURN, { state: "reading", step: { do: "back off", lost: 1 } }],
    ["a loser whose write carried only others backs off", { state: "proved", lost: 1 }, lostWrite(false), RACING, { state: "proved", step: { do: "back off", lost: 2 } }],
    ["retries spent: refused", { state: "proved", lost: 3 }, lostWrite(), RACING, { state: "refused", step: { do: "refuse", why: "RETRIES_EXHAUSTED" } }],
    ["deadline passed: refused", { state: "reading", lost: 0 }, lostWrite(true, true), RACING, { state: "refused", step: { do: "refuse", why: "RETRIES_EXHAUSTED" } }],
    ["offered: watch for being carried", { state: "reading", lost: 1 }, { got: "offered" }, RACING, { state: "offered", step: { do: "await carried" } }],
    ["carried", { state: "offered", lost: 1, source: "proved" }, { got: "carried", landed: true }, RACING, { state: "landed", step: { do: "land", how: "carried" } }],
    ["not carried: build on what was seen", { state: "offered", lost: 1, source: "proved" }, { got: "carried", landed: false }, RACING, { state: "offered", step: { do: "read", from: "proved" } }],
    ["a manifest lists our proposal", { state: "offered", lost: 1, source: "proved" }, { got: "accepted", fate: "landed" }, RACING, { state: "landed", step: { do: "land", how: "carried" } }],
    ["our proposal's fate cannot be told", { state: "offered", lost: 1, source: "proved" }, { got: "accepted", fate: "unknown" }, RACING, { state: "refused", step: { do: "refuse", why: "PUBLICATION_UNPROVEN" } }],
    ["our proposal expired: forget it", { state: "offered", lost: 1, source: "proved" }, { got: "accepted", fate: "expired" }, RACING, { state: "offered", step: { do: "forget proposal" } }],
    ["forgotten: merge afresh", { state: "offered", lost: 1, source: "proved" }, { got: "forgotten" }, RACING, { state: "reading", step: { do: "merge" } }],
    ["waiting: list, to carry ours with the others", { state: "offered", lost: 1, source: "proved" }, { got: "accepted", fate: "waiting" }, RACING, { state: "offered", step: { do: "list" } }],
    ["listed: combine ours", { state: "offered", lost: 1, source: "proved" }, { got: "listed", othersWaiting: false }, RACING, { state: "offered", step: { do: "combine", own: true } }],
    ["ours no longer moves cleanly: withdraw it", { state: "offered", lost: 1, source: "proved" }, { got: "combined", carries: false }, RACING, { state: "withdrawing", step: { do: "withdraw", final: false } }],
    ["our write of our proposal landed", { state: "offered", lost: 1, source: "proved" }, { got: "written", landed: true }, RACING, { state: "landed", step: { do: "land", how: "carried" } }],
    ["our write of our proposal lost: watch again", { state: "offered", lost: 1, source: "proved" }, lostWrite(false), RACING, { state: "offered", step: { do: "await carried" } }],
    ["offered, retries spent: withdraw before answering", { state: "offered", lost: 3, source: "proved" }, lostWrite(false), RACING, { state: "withdrawing", step: { do: "withdraw", final: true } }],
    ["withdrawn, it had landed", { state: "withdrawing", lost: 3, then: "give up" }, { got: "withdrawn", landed: "yes" }, RACING, { state: "landed", step: { do: "land", how: "carried" } }],
    ["withdrawn when giving up", { state: "withdrawing", lost: 3, then: "give up" }, { got: "withdrawn", landed: "no" }, RACING, { state: "refused", step: { do: "refuse", why: "RETRIES_EXHAUSTED" } }],
    ["giving up, the withdrawal unproved: refused, its record kept", { state: "withdrawing", lost: 3, then: "give up" }, { got: "withdrawn", landed: "unknown" }, RACING, { state: "refused", step: { do: "refuse", why: "RETRIES_EXHAUSTED" } }],
    ["withdrawn afresh: read and merge again", { state: "withdrawing", lost: 1, then: "afresh" }, { got: "withdrawn", landed: "no" }, RACING, { state: "reading", step: { do: "read", from: "read" } }],
    ["withdrawn afresh, unproved", { state: "withdrawing", lost: 1, then: "afresh" }, { got: "withdrawn", landed: "unknown" }, RACING, { state: "refused", step: { do: "refuse", why: "PUBLICATION_UNPROVEN" } }],
    ["a backoff ends in a read of the proved state", { state: "proved", lost: 1 }, { got: "waited" }, RACING, { state: "proved", step: { do: "read", from: "proved" } }],
    ["in a turn, the next read is a read", { state: "reading", lost: 1 }, { got: "waited" }, TURN, { state: "reading", step: { do: "read", from: "read" } }],
  ];
  for (const [name, state, event, rules, expected] of rows) {
    test(name, () => {
      const got = next(state, event, rules);
      expect({ state: got.state.state, step: got.step }).toEqual(expected);
    });
  }

  test("the start: a guess, or a read", () => {
    expect(start(true)).toEqual({ state: { state: "guessing", lost: 0 }, step: { do: "read", from: "guess" } });
    expect(start(false)).toEqual({ state: { state: "reading", lost: 0 }, step: { do: "read", from: "read" } });
  });

  test("an event a state does not expect is a runner's bug: it throws", () => {
    expect(() => next({ state: "withdrawing", lost: 0, then: "afresh" }, { got: "merged", result: "changes" }, RACING)).toThrow();
    expect(() => next({ state: "landed", lost: 0, how: "written" }, { got: "accepted" }, RACING)).toThrow();
  });
});

/** The answers a store (and the merge) may give to each step, chosen by the property test. */
interface Answers {
  fate: Array<"landed" | "waiting" | "expired" | "unknown">;
  merged: Array<"conflict" | "nothing new" | "changes">;
  othersWaiting: boolean[];
  carries: boolean[];
  writeLands: boolean[];
  outOfTime: boolean[];
  withdrawn: Array<"yes" | "no" | "unknown">;
  carried: boolean[];
}

const answers: fc.Arbitrary<Answers> = fc.record({
  fate: fc.array(fc.constantFrom("landed", "waiting", "expired", "unknown"), { minLength: 1, maxLength: 40 }),
  merged: fc.array(fc.constantFrom("conflict", "nothing new", "changes", "changes", "changes"), { minLength: 1, maxLength: 40 }),
  othersWaiting: fc.array(fc.boolean(), { minLength: 1, maxLength: 40 }),
  carries: fc.array(fc.boolean(), { minLength: 1, maxLength: 40 }),
  writeLands: fc.array(fc.boolean(), { minLength: 1, maxLength: 40 }),
  outOfTime: fc.array(fc.boolean(), { minLength: 1, maxLength: 40 }),
  withdrawn: fc.array(fc.constantFrom("yes", "no", "unknown"), { minLength: 1, maxLength: 40 }),
  carried: fc.array(fc.boolean(), { minLength: 1, maxLength: 40 }),
});

/** One run of the machine against scripted answers: every step taken, with the state it was taken in, until an end. */
function drive(guess: boolean, rules: AttemptRules, a: Answers, deadlineNever: boolean): Array<{ state: AttemptState; step: Step; event?: Event }> {
  const pick = <T>(list: T[], i: number) => list[i % list.length]!;
  const counters = new Map<string, number>();
  const nextOf = <T>(name: string, list: T[]) => {
    const i = counters.get(name) ?? 0;
    counters.set(name, i + 1);
    return pick(list, i);
  };
  let { state, step } = start(guess);
  let offered = false;
  const trace: Array<{ state: AttemptState; step: Step; event?: Event }> = [];
  for (let n = 0; n < 10_000; n++) {
    if (step.do === "land" || step.do === "refuse") {
      trace.push({ state, step });
      return trace;
    }
    let event: Event;
    switch (step.do) {
      case "read":
        event = offered ? { got: "accepted", fate: nextOf("fate", a.fate) } : { got: "accepted" };
        break;
      case "merge":
        event = { got: "merged", result: nextOf("merged", a.merged) };
        break;
      case "list":
        event = { got: "listed", othersWaiting: nextOf("othersWaiting", a.othersWaiting) };
        break;
      case "combine":
        event = { got: "combined", carries: nextOf("carries", a.carries) };
        break;
      case "write":
        event = nextOf("writeLands", a.writeLands)
          ? { got: "written", landed: true }
          : { got: "written", landed: false, ours: !offered, outOfTime: !deadlineNever && nextOf("outOfTime", a.outOfTime) };
        break;
      case "offer":
        offered = true;
        event = { got: "offered" };
        break;
      case "forget proposal":
        offered = false;
        event = { got: "forgotten" };
        break;
      case "withdraw": {
        const landed = nextOf("withdrawn", a.withdrawn);
        if (landed === "no") offered = false;
        event = { got: "withdrawn", landed };
        break;
      }
      case "back off":
        event = { got: "waited" };
        break;
      case "await carried":
        event = { got: "carried", landed: nextOf("carried", a.carried) };
        break;
    }
    trace.push({ state, step, event });
    ({ state, step } = next(state, event, rules));
  }
  throw new Error("the machine did not end");
}

describe("invariants (docs/storage-protocol.md, The attempt, as a state machine)", () => {
  const runs = fc.record({
    guess: fc.boolean(),
    retries: fc.integer({ min: 0, max: 6 }),
    ordered: fc.boolean(),
    deadlineNever: fc.boolean(),
    a: answers,
  });
  const check = (property: (trace: ReturnType<typeof drive>, r: { guess: boolean; rules: AttemptRules; deadlineNever: boolean }) => void) =>
    fc.assert(
      fc.property(runs, ({ guess, retries, ordered, deadlineNever, a }) => {
        // A turn never guesses: the runner does not start it so (and invariant 4 checks the machine never asks).
        const rules = { retries, ordered };
        property(drive(guess && !ordered, rules, a, deadlineNever), { guess: guess && !ordered, rules, deadlineNever });
      }),
      { numRuns: 400 },
    );
  const ownLostWrites = (trace: ReturnType<typeof drive>) =>
    trace.filter((t) => t.step.do === "write" && t.event?.got === "written" && !t.event.landed && t.state.state !== "guessing").length;

  test("1. every commit ends, within a number of steps bounded by its retries", () => {
    check((trace, { rules }) => {
      const last = trace[trace.length - 1]!;
      expect(["land", "refuse"]).toContain(last.step.do);
      expect(trace.length).toBeLessThanOrEqual(20 * (rules.retries + 2));
    });
  });

  test("2. OK only on proof: a write acknowledged, a manifest listing our proposal, or nothing new against a read", () => {
    check((trace) => {
      const last = trace[trace.length - 1]!;
      if (last.step.do !== "land") return;
      const before = trace[trace.length - 2]!;
      const e = before.event!;
      const proof =
        (e.got === "written" && e.landed) ||
        (e.got === "accepted" && e.fate === "landed") ||
        (e.got === "carried" && e.landed) ||
        (e.got === "withdrawn" && e.landed === "yes") ||
        (e.got === "merged" && e.result === "nothing new" && before.state.state !== "guessing");
      expect(proof).toBe(true);
    });
  });

  test("3. a guess costs nothing but its pack: no retry, no backoff, no offer, a read next (past the deadline, an answer); nothing new against it reads first", () => {
    check((trace) => {
      for (let i = 0; i < trace.length - 1; i++) {
        const t = trace[i]!;
        if (t.state.state !== "guessing" || t.event?.got !== "written" || t.event.landed) continue;
        const after = trace[i + 1]!;
        expect("lost" in after.state ? after.state.lost : -1).toBe(0);
        // Past the deadline it answers (invariant 8); else it reads.
        if (t.event.outOfTime) expect(after.step).toEqual({ do: "refuse", why: "RETRIES_EXHAUSTED" });
        else expect(after.step).toEqual({ do: "read", from: expect.stringMatching(/^(read|proved)$/) });
      }
      for (const t of trace) if (t.state.state === "guessing") expect(["read", "merge", "write"]).toContain(t.step.do);
    });
  });

  test("4. a turn is never raced: no guess, no listing, no combining, no offer, no waiting to be carried", () => {
    check((trace, { rules }) => {
      if (!rules.ordered) return;
      for (const t of trace) expect(["list", "combine", "offer", "await carried", "withdraw", "forget proposal"]).not.toContain(t.step.do);
      for (const t of trace) if (t.step.do === "read") expect(t.step.from).toBe("read");
    });
  });

  test("5. at most one proposal, offered only after a lost write of our own, with a retry left and time left", () => {
    check((trace, { rules }) => {
      let out = false;
      for (let i = 0; i < trace.length; i++) {
        const t = trace[i]!;
        if (t.step.do === "offer") {
          expect(out).toBe(false);
          const lostBefore = trace[i - 1]!;
          expect(lostBefore.event).toMatchObject({ got: "written", landed: false, ours: true, outOfTime: false });
          expect("lost" in lostBefore.state ? lostBefore.state.lost : Infinity).toBeLessThan(rules.retries);
          out = true;
        }
        if (t.step.do === "forget proposal" || (t.event?.got === "withdrawn" && t.event.landed === "no")) out = false;
      }
    });
  });

  test("6. no refusal leaves a proposal out: RETRIES_EXHAUSTED only after withdrawing it; a conflict only with none out", () => {
    check((trace) => {
      let out = false;
      let withdrawnLast = false;
      for (const t of trace) {
        if (t.step.do === "refuse") {
          if (t.step.why === "MERGE_CONFLICT") expect(out).toBe(false);
          if (t.step.why === "RETRIES_EXHAUSTED" && out) expect(withdrawnLast).toBe(true);
        }
        withdrawnLast = t.step.do === "withdraw";
        if (t.step.do === "offer") out = true;
        if (t.step.do === "forget proposal" || (t.event?.got === "withdrawn" && t.event.landed === "no")) out = false;
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
});
