/**
 * `log --since` reads the times the commits record, and those come from the
 * clocks of the machines that published them: one running behind records a
 * time older than the publications before it. Filtering by time must not
 * take that one for the end of the history.
 */
import { afterEach, expect, test } from "bun:test";
import { commit } from "../../src/engine/commit.ts";
import { historyLog } from "../../src/engine/history/log.ts";
import { pull } from "../../src/engine/pull.ts";
import { makeWorld, type World, write } from "../support/fixture.ts";

let world: World;
afterEach(async () => {
  await world?.close();
});

const HOUR = 3_600_000;

test("--since keeps every publication at or after the instant, past one whose clock ran behind", async () => {
  world = makeWorld();
  const a = world.checkout("a");
  await pull(world.deps(), { path: a });
  const t0 = Date.UTC(2026, 10, 30, 12);
  // Generations 1–4; generation 3 was published from a machine a day behind.
  const clocks = [t0, t0 + HOUR, t0 - 24 * HOUR, t0 + 2 * HOUR];
  for (const [i, at] of clocks.entries()) {
    write(a, "n.md", `${i}\n`);
    await commit(world.deps({ now: () => new Date(at) }), { path: a, message: `c${i + 1}` });
  }
  const times = (await historyLog(world.deps(), {})).entries.map((e) => [e.generation, Date.parse(e.time)]);
  expect(times).toEqual([[4, t0 + 2 * HOUR], [3, t0 - 24 * HOUR], [2, t0 + HOUR], [1, t0]]);
  const since = async (ms: number) => (await historyLog(world.deps(), { since: new Date(ms) })).entries.map((e) => e.generation);
  expect(await since(t0 + HOUR / 2)).toEqual([4, 2]);
  expect(await since(t0)).toEqual([4, 2, 1]);
  expect(await since(t0 - 48 * HOUR)).toEqual([4, 3, 2, 1]);
  // --limit counts the entries shown, not those passed over.
  expect((await historyLog(world.deps(), { since: new Date(t0), limit: 2 })).entries.map((e) => e.generation)).toEqual([4, 2]);
});
