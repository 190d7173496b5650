/**
 * team's harness, tested: the team benchmark (team.bench.ts) is only worth
 * its numbers if its resolution keeps what the agents wrote and its loss
 * check sees when something is dropped. Runs the team small on the
 * embedded store, through the built binary's `serve` and its CLI; then a
 * resolver that drops a side, which the loss check must catch.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { requireBinary } from "../support/mcp.ts";
import * as A from "./team-agent.ts";
import * as L from "./lib.ts";
import { runTeam, type TeamOptions } from "./team.bench.ts";

const root = L.tempDir("team-test");
afterAll(() => L.removeDir(root));

const small: TeamOptions = { agents: 2, rounds: 3, tasks: 20, mode: "serve", attributes: false };
const none: A.Losses = { logMissing: 0, logExtra: 0, agentsStale: 0, boardWrong: 0 };

describe("an agent's resolution", () => {
  test("keeps both sides of a block, local first, and only the markers go", () => {
    const text = "# log\n\na\n<<<<<<< local\nb\n=======\nc\nd\n>>>>>>> accepted\ne\n";
    expect(A.keepBoth(text)).toBe("# log\n\na\nb\nc\nd\ne\n");
  });

  test("on the board keeps each task once, ticked if either side ticked it", () => {
    const text = "# tasks\n\n<<<<<<< local\n- [x] task 1\n- [ ] task 2\n=======\n- [ ] task 1\n- [x] task 2\n>>>>>>> accepted\n- [ ] task 3\n";
    expect(A.resolveBoard(text)).toBe("# tasks\n\n- [x] task 1\n- [x] task 2\n- [ ] task 3\n");
  });

  test("the loss check counts a missing and a doubled log line, a stale agent file and each board error", () => {
    const wrote = { logLines: ["x", "y"], lastNotes: new Map([[0, "new"]]), ticked: new Set([1]), tasks: 3 };
    const board = "# tasks\n\n- [ ] task 1\n- [ ] task 2\n- [ ] task 2\n";
    expect(A.losses({ log: "# log\n\nx\nx\n", board, agentFile: () => "old" }, wrote)).toEqual({
      logMissing: 1,
      logExtra: 1,
      agentsStale: 1,
      // task 1 open though ticked, task 2 twice, task 3 missing
      boardWrong: 3,
    });
  });
});

describe("team, small, embedded store", () => {
  requireBinary();

  for (const mode of ["serve", "cli"] as const) {
    test(`${mode}: every round lands, nothing is lost and the board is exact`, async () => {
      const r = await runTeam(L.sqliteLocation(root), { ...small, mode });
      expect(r.commits).toBe(6);
      expect(r.generations).toBe(6);
      expect(r.roundMs).toHaveLength(6);
      expect(r.losses).toEqual(none);
    });
  }

  test("after slivingdoc init, agents that cross every round never conflict on the log or the board", async () => {
    const r = await runTeam(L.sqliteLocation(root), { ...small, mode: "cli", lockstep: true, init: true });
    // The same crossing rounds as the test below, which conflicts on the log every round without the layout.
    expect(r.conflictsByFile.get(A.LOG) ?? 0).toBe(0);
    expect(r.conflictsByFile.get(A.BOARD) ?? 0).toBe(0);
    expect(r.commits).toBe(6);
    expect(r.losses).toEqual(none);
  });

  test("agents that cross every round conflict on the log, and the agent's resolution loses nothing", async () => {
    const r = await runTeam(L.sqliteLocation(root), { ...small, lockstep: true });
    // Both pull the same generation and append at the log's end: one of each round's two commits conflicts.
    expect(r.conflictsByFile.get(A.LOG) ?? 0).toBeGreaterThanOrEqual(small.rounds);
    expect(r.extraCalls).toBeGreaterThanOrEqual(r.conflicts);
    expect(r.losses).toEqual(none);
  });

  test("a resolver that drops the accepted side is caught by the loss check", async () => {
    const dropsAccepted: A.Resolver = (_path, text) => A.replaceBlocks(text, (b) => b.local);
    const r = await runTeam(L.sqliteLocation(root), { ...small, lockstep: true, resolver: dropsAccepted });
    expect(r.conflicts).toBeGreaterThanOrEqual(small.rounds);
    // Every conflicted round dropped the other agent's line from the log.
    expect(r.losses.logMissing).toBeGreaterThanOrEqual(small.rounds);
    expect(A.lostTotal(r.losses)).toBeGreaterThan(0);
  });
});
