/**
 * Where work crossed (docs/history.md, "Where work crossed"): every
 * publication records its base generation — the generation its agent had
 * seen when it committed — in its commit, so `log` can name the
 * publications it was merged onto unseen, and by whom. The record must
 * survive a proposal carried by another writer (combining), compaction, the
 * history period and `export` (C git keeps it), and leave the message
 * byte for byte.
 */
import { afterEach, expect, test } from "bun:test";
import { mkdtempSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { commit } from "../../src/engine/commit.ts";
import type { EngineDeps } from "../../src/engine/engine.ts";
import { exportHistory } from "../../src/engine/history/export.ts";
import { historyLog, type LogEntry, showGeneration } from "../../src/engine/history/log.ts";
import { parseCommit } from "../../src/engine/history/read.ts";
import { encodeCommit } from "../../src/engine/git/objects.ts";
import { ProcessMemory } from "../../src/engine/process-memory.ts";
import { PROPOSALS_PREFIX } from "../../src/engine/publish/combine.ts";
import { pull } from "../../src/engine/pull.ts";
import type { ObjectStore } from "../../src/store/object-store.ts";
import { SYSTEM_RANDOM } from "../../src/surfaces/engine-deps.ts";
import { renderLog } from "../../src/surfaces/cli/render-history.ts";
import { git } from "../support/cgit.ts";
import { asAgent, pulledAtOne } from "../support/agents.ts";
import { makeWorld, readCurrent, type World, write } from "../support/fixture.ts";

let world: World;
afterEach(async () => {
  await world?.close();
});

const as = (agent: string, overrides: Partial<EngineDeps> = {}): EngineDeps => asAgent(world, agent, overrides);

/** Generation, base and crossings of each log entry, newest first. */
function crossings(entries: LogEntry[]) {
  return entries.map((e) => ({ generation: e.generation, base: e.base, crossed: e.crossed, crossedUnretained: e.crossedUnretained }));
}

test("two agents commit from the same base: log marks the second as crossing the first, by generation and agent", async () => {
  world = makeWorld();
  const [a, b] = (await pulledAtOne(world, "a", "b")) as [string, string];
  write(a, "a.md", "from ann\n");
  expect((await commit(as("ann"), { path: a, message: "ann's" })).generation).toBe(2);
  write(b, "b.md", "from bo\n");
  const message = "bo's\n\nwith a body\r\nand no final newline";
  expect((await commit(as("bo"), { path: b, message })).generation).toBe(3);

  const log = await historyLog(world.deps(), {});
  expect(crossings(log.entries)).toEqual([
    { generation: 3, base: 1, crossed: [{ generation: 2, agent: "ann" }], crossedUnretained: 0 },
    { generation: 2, base: 1, crossed: [], crossedUnretained: 0 },
    { generation: 1, base: 0, crossed: [], crossedUnretained: 0 },
  ]);
  // The record is a header of its own: the agent's message is the commit's, byte for byte.
  expect(log.entries[0]!.message).toBe(message);
  expect((await showGeneration(world.deps(), { generation: 3 })).entry).toMatchObject({ base: 1, crossed: [{ generation: 2, agent: "ann" }] });
  const human = renderLog(log);
  expect(human).toContain("generation 3 · ");
  expect(human).toContain("    built on generation 1; crossed generation 2 by ann (2)\n");
  expect(human.match(/crossed/g)).toHaveLength(1);
});

/** The world's store without its writer queue: writers race, as on S3. */
function racing(w: World): ObjectStore {
  const { queue: _queue, ...store } = w.store;
  return store as ObjectStore;
}

test("a proposal carried by another writer keeps its proposer's base: log shows what each of the combined publications crossed", async () => {
  world = makeWorld();
  const [a, b, c] = (await pulledAtOne(world, "a", "b", "c")) as [string, string, string];
  for (const [name, dir] of [["a", a], ["b", b], ["c", c]] as const) write(dir, `${name}.md`, `from ${name}\n`);
  // Racing processes of their own, as combine.test.ts drives them: ann
  // loses to bo inside its window, offers its commit (as a crowd's loser
  // does: a meeting of two would build on bo at once), and while it waits
  // cy publishes, carrying ann's commit before its own.
  const proc = (agent: string, overrides: Partial<EngineDeps> = {}) =>
    as(agent, { store: racing(world), memory: new ProcessMemory(SYSTEM_RANDOM), random: () => 0.5, meetAtOnce: false, ...overrides });
  let raced = false;
  let waited = false;
  const annOut = await commit(
    proc("ann", {
      onStage: async (stage) => {
        if (stage === "publish" && !raced) {
          raced = true;
          await commit(proc("bo"), { path: b, message: "bo's" });
        }
      },
      sleep: async () => {
        if (!waited) {
          waited = true;
          expect((await racing(world).list(PROPOSALS_PREFIX)).length).toBe(1);
          await commit(proc("cy"), { path: c, message: "cy's" });
        }
      },
    }),
    { path: a, message: "ann's" },
  );
  expect(annOut.generation).toBe(3);
  const { manifest } = await readCurrent(world.store);
  expect(manifest.combined?.map((x) => x.generation)).toEqual([3]);

  const log = await historyLog(world.deps(), { limit: 3 });
  expect(log.entries.map((e) => [e.generation, e.agent])).toEqual([[4, "cy"], [3, "ann"], [2, "bo"]]);
  expect(crossings(log.entries)).toEqual([
    { generation: 4, base: 1, crossed: [{ generation: 2, agent: "bo" }, { generation: 3, agent: "ann" }], crossedUnretained: 0 },
    { generation: 3, base: 1, crossed: [{ generation: 2, agent: "bo" }], crossedUnretained: 0 },
    { generation: 2, base: 1, crossed: [], crossedUnretained: 0 },
  ]);
  expect(renderLog(log)).toContain("    built on generation 1; crossed generations 2–3 by bo (2), ann (3)\n");
});

/** bo's checkout pulled at generation 1; ann publishes generations 2–6; bo publishes 7, crossing all five. */
async function crossingFive(overrides: Partial<EngineDeps>): Promise<{ a: string; b: string }> {
  const [a, b] = (await pulledAtOne(world, "a", "b")) as [string, string];
  for (let i = 2; i <= 6; i++) {
    write(a, "a.md", `${i}\n`);
    await commit(as("ann", overrides), { path: a, message: `ann ${i}` });
  }
  write(b, "b.md", "bo\n");
  expect((await commit(as("bo", overrides), { path: b, message: "bo's" })).generation).toBe(7);
  return { a, b };
}

const SMALL_PACK_LIST = { maxPacks: 4, keepRecent: 1, history: 3 };

test("the record survives compaction into history packs: log still names every generation crossed", async () => {
  world = makeWorld();
  const overrides = { compaction: SMALL_PACK_LIST };
  const { a } = await crossingFive(overrides);
  await pull(as("ann", overrides), { path: a });
  for (let i = 8; i <= 20; i++) {
    write(a, "a.md", `${i}\n`);
    await commit(as("ann", overrides), { path: a, message: `ann ${i}` });
  }
  const { manifest } = await readCurrent(world.store);
  // Generation 7 left the base: it is kept in a history pack, within the history period.
  expect(manifest.history?.length).toBeGreaterThan(0);
  const log = await historyLog(world.deps(), {});
  expect(log.oldestRetained).toBe(1);
  const ann = (g: number) => ({ generation: g, agent: "ann" });
  expect(crossings(log.entries.filter((e) => e.generation === 7))).toEqual([
    { generation: 7, base: 1, crossed: [ann(2), ann(3), ann(4), ann(5), ann(6)], crossedUnretained: 0 },
  ]);
  // Generation 8 was ann's, from a checkout pulled at 7.
  expect(log.entries.find((e) => e.generation === 8)).toMatchObject({ base: 7, crossed: [] });
  // And C git reads it from an export of the compacted store.
  const dir = join(mkdtempSync(join(world.root, "export-")), "repo");
  await exportHistory(world.deps(), { named: dir, dir });
  expect(git(dir, "log", "--format=%s", "-1", "main~13").out).toBe("bo's\n");
  expect(git(dir, "cat-file", "-p", "main~13").out).toContain("\nslivingdoc-base-generation 1\n\n");
  expect(git(dir, "fsck", "--strict", "--no-dangling")).toMatchObject({ code: 0, err: "" });
});

test("crossed generations older than the retained history are counted, their agents unknown, not guessed", async () => {
  world = makeWorld();
  // No history period: compaction keeps the newest three commits only.
  const overrides = { compaction: { ...SMALL_PACK_LIST, periodMs: 0 } };
  const { a } = await crossingFive(overrides);
  await pull(as("ann", overrides), { path: a });
  write(a, "a.md", "8\n");
  await commit(as("ann", overrides), { path: a, message: "ann 8" });
  const log = await historyLog(world.deps(), {});
  const oldest = log.oldestRetained;
  expect(oldest).toBeGreaterThan(2);
  expect(oldest).toBeLessThanOrEqual(7);
  const crossed: Array<{ generation: number; agent: string }> = [];
  for (let g = oldest; g <= 6; g++) crossed.push({ generation: g, agent: "ann" });
  expect(crossings(log.entries.filter((e) => e.generation === 7))).toEqual([{ generation: 7, base: 1, crossed, crossedUnretained: oldest - 2 }]);
  const span = (from: number, to: number) => (from === to ? `${from}` : `${from}–${to}`);
  const named = [...(crossed.length > 0 ? [`ann (${span(oldest, 6)})`] : []), `unknown agents (${span(2, oldest - 1)}: older than the retained history)`];
  expect(renderLog(log)).toContain(`    built on generation 1; crossed generations 2–6 by ${named.join(", ")}\n`);
});

test("export keeps the record: C git shows the header, the message byte for byte, and fsck and verify-pack pass", async () => {
  world = makeWorld();
  const [a, b] = (await pulledAtOne(world, "a", "b")) as [string, string];
  write(a, "a.md", "from ann\n");
  await commit(as("ann"), { path: a, message: "ann's" });
  write(b, "b.md", "from bo\n");
  const message = "bo's\n\nbody line\n";
  await commit(as("bo"), { path: b, message });
  const dir = join(mkdtempSync(join(world.root, "export-")), "repo");
  await exportHistory(world.deps(), { named: dir, dir });
  const shown = git(dir, "cat-file", "-p", "main");
  expect(shown.code).toBe(0);
  const [header, body] = [shown.out.slice(0, shown.out.indexOf("\n\n")), shown.out.slice(shown.out.indexOf("\n\n") + 2)];
  expect(header.split("\n")).toContain("slivingdoc-base-generation 1");
  expect(body).toBe(message);
  expect(git(dir, "cat-file", "-p", "main~1").out).toContain("\nslivingdoc-base-generation 1\n");
  expect(git(dir, "log", "--format=%an|%B", "-1", "main").out).toBe(`bo|${message}\n`);
  expect(git(dir, "fsck", "--strict", "--no-dangling")).toMatchObject({ code: 0, err: "" });
  for (const idx of readdirSync(join(dir, "objects", "pack")).filter((n) => n.endsWith(".idx"))) {
    const verified = git(dir, "verify-pack", "-v", join("objects", "pack", idx));
    expect(verified.code).toBe(0);
    expect(verified.out).toContain(": ok");
  }
});

test("a commit without the record (published before it was kept) reads fine: its crossings are unknown", async () => {
  const tree = "4b825dc642cb6eb9a060e54bf8d69288fbee4904";
  const when = new Date(Date.UTC(2026, 10, 30, 12));
  const old = parseCommit("0".repeat(40), 5, encodeCommit({ tree, parent: "1".repeat(40), message: "old", when, agent: "ann" }));
  expect(old).toMatchObject({ base: null, message: "old", agent: "ann" });
  // A record that cannot be one (not below its own generation, not a number) is unknown too, never an error.
  for (const bad of ["5", "9", "-1", "x", "01", ""]) {
    const object = Buffer.from(encodeCommit({ tree, parent: null, message: "m", when }).toString("latin1").replace("\n\n", `\nslivingdoc-base-generation ${bad}\n\n`), "latin1");
    expect(parseCommit("0".repeat(40), 5, object).base).toBeNull();
  }
  expect(parseCommit("0".repeat(40), 5, encodeCommit({ tree, parent: null, message: "m", when, base: 4 })).base).toBe(4);
  const entry: LogEntry = {
    generation: 5, time: "2026-11-30T12:00:00Z", agent: "ann", message: "old", files: [], filesChanged: 0, insertions: 0, deletions: 0,
    base: null, crossed: null, crossedUnretained: 0,
  };
  expect(renderLog({ generation: 5, oldestRetained: 5, entries: [entry] })).toContain("    crossed: unknown (its commit does not record the generation its agent had seen)\n");
});
