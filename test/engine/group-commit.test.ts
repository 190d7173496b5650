/**
 * Group commit on the embedded store (docs/storage-protocol.md,
 * "Contention", group commit): a writer that waits in the store's line
 * behind others offers its commit from there, and the writer in its turn
 * carries the offers in one publication — each commit keeping its own
 * commit object, author and message, each caller its own generation.
 * Driven on the real store and its real writer queue, the writers' turns
 * ordered by hand through the stage hooks.
 */
import { afterEach, expect, test } from "bun:test";
import { commit } from "../../src/engine/commit.ts";
import type { EngineDeps } from "../../src/engine/engine.ts";
import { openHistory } from "../../src/engine/history/read.ts";
import { ProcessMemory } from "../../src/engine/process-memory.ts";
import { PROPOSALS_PREFIX } from "../../src/engine/publish/combine.ts";
import { pull } from "../../src/engine/pull.ts";
import type { ObjectStore } from "../../src/store/object-store.ts";
import { SYSTEM_RANDOM } from "../../src/surfaces/engine-deps.ts";
import { makeWorld, read, readCurrent, type World, write } from "../support/fixture.ts";
import { waitFor } from "../support/wait.ts";

let world: World;
afterEach(async () => {
  await world?.close();
});

/** A process of its own (its own memory), publishing as `agent`, with hooks. */
function proc(agent: string, overrides: Partial<EngineDeps> = {}): EngineDeps {
  return world.deps({ memory: new ProcessMemory(SYSTEM_RANDOM), agent: () => agent, ...overrides });
}

/** Checkouts pulled at generation 1 (a first commit of `shared.md`). */
async function writers(...names: string[]): Promise<string[]> {
  world = makeWorld();
  const first = world.checkout("first");
  await pull(proc("first"), { path: first });
  write(first, "shared.md", "one\n");
  await commit(proc("first"), { path: first, message: "first" });
  const dirs = names.map((n) => world.checkout(n));
  for (const d of dirs) await pull(proc("x"), { path: d });
  return dirs;
}

/** A promise and its resolver. */
function gate(): { open: () => void; opened: Promise<void> } {
  let open!: () => void;
  const opened = new Promise<void>((r) => (open = r));
  return { open, opened };
}

/** Once `stage` is reported, `seen` resolves; the hook waits for `hold` when given. */
function at(stage: string, hold?: Promise<void>): { seen: Promise<void>; onStage: (s: string) => Promise<void> } {
  const { open, opened } = gate();
  let done = false;
  return {
    seen: opened,
    onStage: async (s) => {
      if (s !== stage || done) return;
      done = true;
      open();
      if (hold) await hold;
    },
  };
}

const proposals = (store: ObjectStore) => store.list(PROPOSALS_PREFIX);

test("writers behind others in the line offer their commits, and the next turn publishes them with its own in one publication", async () => {
  const [a, b, c, d] = (await writers("a", "b", "c", "d")) as [string, string, string, string];
  for (const [name, dir] of [["a", a], ["b", b], ["c", c], ["d", d]] as const) write(dir, `${name}.md`, `from ${name}\n`);
  const writes: string[] = [];
  const store = world.store;
  const counted: ObjectStore = { ...store, putWith: (creates, key, ...rest) => (writes.push(key), store.putWith!(creates, key, ...rest)) };

  // A holds its turn until C and D have offered theirs from the line.
  const release = gate();
  const aHook = at("publish", release.opened);
  const aOut = commit(proc("ann", { store: counted, onStage: aHook.onStage }), { path: a, message: "ann's" });
  await aHook.seen;
  // B takes its place next (one ahead: it waits for its turn), then C and D (two and three ahead: they offer).
  const bHook = at("queue");
  const bOut = commit(proc("bo", { store: counted, onStage: bHook.onStage }), { path: b, message: "bo's" });
  await bHook.seen;
  await Bun.sleep(0);
  const cOut = commit(proc("cy", { store: counted }), { path: c, message: "cy's" });
  await waitFor(async () => (await proposals(store)).length === 1, "C's offer");
  const dOut = commit(proc("di", { store: counted }), { path: d, message: "di's" });
  await waitFor(async () => (await proposals(store)).length === 2, "D's offer");
  release.open();

  const [ann, bo, cy, di] = await Promise.all([aOut, bOut, cOut, dOut]);
  // A alone (2); then B's turn carried C (3) and D (4) under its own (5), in one write.
  expect([ann.generation, cy.generation, di.generation, bo.generation]).toEqual([2, 3, 4, 5]);
  expect(writes.filter((k) => k === "current")).toHaveLength(2);
  for (const [out, name] of [[ann, "a"], [bo, "b"], [cy, "c"], [di, "d"]] as const) expect(out.files).toEqual([{ path: `${name}.md`, insertions: 1, deletions: 0 }]);
  const { manifest } = await readCurrent(store);
  expect(manifest.combined?.map((x) => x.generation)).toEqual([3, 4]);
  expect(await proposals(store)).toEqual([]);
  // Each its own commit, author and message.
  const history = await openHistory(proc("x"));
  expect(history.publications.map((h) => [h.generation, h.agent, h.message])).toEqual([
    [5, "bo", "bo's"],
    [4, "di", "di's"],
    [3, "cy", "cy's"],
    [2, "ann", "ann's"],
    [1, "first", "first"],
  ]);
  // Every file in a fresh pull; a carried writer carries on from where it landed.
  const fresh = world.checkout("fresh");
  await pull(proc("x"), { path: fresh });
  for (const name of ["a", "b", "c", "d"]) expect(read(fresh, `${name}.md`)).toBe(`from ${name}\n`);
  expect(read(c, "c.md")).toBe("from c\n");
  write(c, "c.md", "from c, again\n");
  expect((await commit(proc("cy"), { path: c, message: "cy again" })).generation).toBe(6);
});
