/**
 * What `slivingdoc web` reads from an opened history (docs/web.md): the
 * log by pages (`before`, `next`) and by agent, the files of a retained
 * generation and one file's text, and the publications the agents' chart
 * draws, with what each crossed.
 */
import { afterEach, expect, test } from "bun:test";
import { agentsChart, historyAgents } from "../../src/engine/history/agents.ts";
import { generationFile, generationListing } from "../../src/engine/history/files.ts";
import { historyLog, logPage } from "../../src/engine/history/log.ts";
import { type History, withHistory } from "../../src/engine/history/read.ts";
import { commit } from "../../src/engine/commit.ts";
import { asAgent, pulledAtOne } from "../support/agents.ts";
import { makeWorld, type World, write } from "../support/fixture.ts";

let world: World;
afterEach(async () => {
  await world?.close();
});

const opened = <T>(fn: (history: History) => Promise<T>) => withHistory(world.deps(), fn);

/** Generations 1–7: ann's first, then ann and bo in turns, bo's b.md at 3, 5 and 7; ann's c.md at 6. */
async function sevenGenerations(): Promise<void> {
  const [a, b] = (await pulledAtOne(world, "a", "b")) as [string, string];
  for (let g = 2; g <= 7; g++) {
    const [dir, agent] = g % 2 === 0 ? [a, "ann"] : [b, "bo"];
    if (agent === "bo") write(dir, "notes/b.md", `bo ${g}\n`);
    else if (g === 6) write(dir, "c.md", "see\n");
    else write(dir, "a.md", `ann ${g}\n`);
    await commit(asAgent(world, agent), { path: dir, message: `g${g}` });
  }
}

test("the log by pages: each page starts below `before`, and `next` leads to the following page until it is null", async () => {
  world = makeWorld();
  await sevenGenerations();
  const pages: number[][] = [];
  let before: number | undefined;
  for (;;) {
    const page = await opened((h) => logPage(h, { limit: 3, ...(before !== undefined ? { before } : {}) }));
    expect(page.generation).toBe(7);
    pages.push(page.entries.map((e) => e.generation));
    if (page.next === null) break;
    before = page.next;
  }
  expect(pages).toEqual([[7, 6, 5], [4, 3, 2], [1]]);
  // A page that ends exactly at the oldest publication says so: nothing follows.
  expect((await opened((h) => logPage(h, { limit: 2, before: 3 }))).next).toBeNull();
  // A `before` past the newest is the whole log; one at or below the oldest, nothing.
  expect((await opened((h) => logPage(h, { before: 100 }))).entries.length).toBe(7);
  expect((await opened((h) => logPage(h, { before: 1 }))).entries).toEqual([]);
  // The CLI's log is the same entries, without the cursor.
  expect(await historyLog(world.deps(), { limit: 3 })).toEqual({ generation: 7, oldestRetained: 1, entries: (await opened((h) => logPage(h, { limit: 3 }))).entries });
});

test("the log of one agent, by pages, and with a path", async () => {
  world = makeWorld();
  await sevenGenerations();
  const bo = await opened((h) => logPage(h, { agent: "bo", limit: 2 }));
  expect(bo.entries.map((e) => [e.generation, e.agent])).toEqual([[7, "bo"], [5, "bo"]]);
  expect(bo.next).toBe(5);
  const rest = await opened((h) => logPage(h, { agent: "bo", limit: 2, before: bo.next! }));
  expect(rest.entries.map((e) => e.generation)).toEqual([3]);
  expect(rest.next).toBeNull();
  expect((await opened((h) => logPage(h, { agent: "ann", paths: ["notes"] }))).entries).toEqual([]);
  expect((await opened((h) => logPage(h, { agent: "nobody" }))).entries).toEqual([]);
});

test("the files of a retained generation with their sizes, and one file's text", async () => {
  world = makeWorld();
  await sevenGenerations();
  expect(await opened((h) => generationListing(h, 3))).toEqual({
    generation: 3,
    files: [
      { path: "a.md", size: 6 },
      { path: "notes/b.md", size: 5 },
      { path: "shared.md", size: 4 },
    ],
  });
  // Without a generation: the accepted one.
  expect((await opened((h) => generationListing(h))).files.map((f) => f.path)).toEqual(["a.md", "c.md", "notes/b.md", "shared.md"]);
  expect(await opened((h) => generationFile(h, "notes/b.md", 5))).toEqual({ generation: 5, path: "notes/b.md", text: "bo 5\n", size: 5 });
  expect(await opened((h) => generationFile(h, "./notes//b.md"))).toEqual({ generation: 7, path: "notes/b.md", text: "bo 7\n", size: 5 });
  expect(await opened((h) => generationFile(h, "c.md", 6))).toEqual({ generation: 6, path: "c.md", text: "see\n", size: 4 });
  // Not in that generation, a directory, a generation not retained: refused as blame and show refuse them.
  await expect(opened((h) => generationFile(h, "c.md", 5))).rejects.toMatchObject({ reason: "MALFORMED_INPUT", message: '"c.md" is not a file of the notebook at generation 5.' });
  await expect(opened((h) => generationFile(h, "notes", 5))).rejects.toMatchObject({ reason: "MALFORMED_INPUT" });
  await expect(opened((h) => generationListing(h, 8))).rejects.toMatchObject({ reason: "MALFORMED_INPUT", message: "Generation 8 does not exist yet; the newest is 7." });
});

test("the chart's publications: newest first, each with its agent, files changed, base and the publications it crossed", async () => {
  world = makeWorld();
  const [a, b] = (await pulledAtOne(world, "a", "b")) as [string, string];
  write(a, "a.md", "1\n");
  await commit(asAgent(world, "ann"), { path: a, message: "2" });
  // bo had seen generation 1: his commit crosses ann's generation 2.
  write(b, "b.md", "1\n");
  write(b, "c.md", "1\n");
  await commit(asAgent(world, "bo"), { path: b, message: "3" });
  const chart = await opened((h) => agentsChart(h, {}));
  expect(chart.publications).toEqual([
    { generation: 3, time: expect.any(String), agent: "bo", filesChanged: 2, base: 1, crossed: [{ generation: 2, agent: "ann" }] },
    { generation: 2, time: expect.any(String), agent: "ann", filesChanged: 1, base: 1, crossed: [] },
    { generation: 1, time: expect.any(String), agent: "ann", filesChanged: 1, base: 0, crossed: [] },
  ]);
  // The agents beside them are `slivingdoc agents`'s.
  const { publications: _p, ...agents } = chart;
  expect(agents).toEqual(await historyAgents(world.deps(), {}));
  const since = new Date(Date.parse(chart.publications[0]!.time));
  expect((await opened((h) => agentsChart(h, { since }))).publications.every((p) => Date.parse(p.time) >= since.getTime())).toBe(true);
});
