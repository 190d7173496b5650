/**
 * `slivingdoc agents` (docs/history.md): each agent of the retained
 * history with its count of publications, its first and last, and the files
 * they touched — the same publications `log` lists.
 */
import { afterEach, expect, test } from "bun:test";
import { commit } from "../../src/engine/commit.ts";
import type { EngineDeps } from "../../src/engine/engine.ts";
import { historyAgents } from "../../src/engine/history/agents.ts";
import { historyLog } from "../../src/engine/history/log.ts";
import { pull } from "../../src/engine/pull.ts";
import { asAgent, pulledAtOne } from "../support/agents.ts";
import { makeWorld, type World, write } from "../support/fixture.ts";

let world: World;
afterEach(async () => {
  await world?.close();
});

const as = (agent: string, overrides: Partial<EngineDeps> = {}): EngineDeps => asAgent(world, agent, overrides);

test("agents: each agent's count, first and last publication, and the files they touched", async () => {
  world = makeWorld();
  const [a, b] = (await pulledAtOne(world, "a", "b")) as [string, string];
  write(a, "a.md", "1\n");
  await commit(as("ann"), { path: a, message: "2" });
  write(b, "notes/b.md", "1\n");
  await commit(as("bo"), { path: b, message: "3" });
  write(a, "a.md", "2\n");
  write(a, "shared.md", "two\n");
  await commit(as("ann"), { path: a, message: "4" });
  const result = await historyAgents(world.deps(), {});
  const log = await historyLog(world.deps(), {});
  const time = (g: number) => log.entries.find((e) => e.generation === g)!.time;
  expect(result).toEqual({
    generation: 4,
    oldestRetained: 1,
    agents: [
      { agent: "ann", publications: 3, first: { generation: 1, time: time(1) }, last: { generation: 4, time: time(4) }, files: ["a.md", "shared.md"], changesUnknown: [] },
      { agent: "bo", publications: 1, first: { generation: 3, time: time(3) }, last: { generation: 3, time: time(3) }, files: ["notes/b.md"], changesUnknown: [] },
    ],
  });
  // The counts are the log's.
  for (const s of result.agents) expect(s.publications).toBe(log.entries.filter((e) => e.agent === s.agent).length);
  expect((await historyAgents(world.deps(), { since: new Date(Date.parse(time(4)) + 1000) })).agents).toEqual([]);
});

test("agents: an empty store has none; past compaction without a history period, the oldest retained publication's files are unknown", async () => {
  world = makeWorld();
  expect(await historyAgents(world.deps(), {})).toEqual({ generation: 0, oldestRetained: 0, agents: [] });
  const overrides = { compaction: { maxPacks: 4, keepRecent: 1, history: 3, periodMs: 0 } };
  const [a] = (await pulledAtOne(world, "a")) as [string];
  for (let i = 2; i <= 8; i++) {
    write(a, `f${i}.md`, `${i}\n`);
    await commit(as(i % 2 === 0 ? "ann" : "bo", overrides), { path: a, message: `${i}` });
  }
  const result = await historyAgents(world.deps(), {});
  const oldest = result.oldestRetained;
  expect(oldest).toBeGreaterThan(1);
  const retained = Array.from({ length: 8 - oldest + 1 }, (_, k) => oldest + k);
  const by = (agent: string) => retained.filter((g) => (g % 2 === 0 ? "ann" : "bo") === agent);
  for (const s of result.agents) {
    const mine = by(s.agent);
    expect([s.publications, s.first.generation, s.last.generation]).toEqual([mine.length, mine[0]!, mine.at(-1)!]);
    expect(s.changesUnknown).toEqual(mine.includes(oldest) ? [oldest] : []);
    expect(s.files).toEqual(mine.filter((g) => g !== oldest).map((g) => `f${g}.md`).sort());
  }
  expect(result.agents.map((s) => s.agent).sort()).toEqual(["ann", "bo"]);
});
