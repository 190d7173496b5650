/**
 * A checkout without its private state (pull.ts, lostBase; history/base.ts):
 * merged against the retained generation its files match best, the newest
 * on a tie; and a directory of files that match nothing, refused when the
 * caller asks (engine/foreign.ts).
 */
import { afterEach, expect, test } from "bun:test";
import { rmSync } from "node:fs";
import { commit } from "../../src/engine/commit.ts";
import { ForeignFiles } from "../../src/engine/foreign.ts";
import { pull } from "../../src/engine/pull.ts";
import { makeWorld, read, seedNotebook, type World, write } from "../support/fixture.ts";

let world: World;
afterEach(async () => {
  await world?.close();
});

test("on a tie the newest generation is the base: a file changed in between is no conflict when only this side changed it since", async () => {
  world = makeWorld();
  const a = world.checkout("a");
  // Generation 1: same.md and b.md "b1"; generation 2: b.md "b2". same.md matches both.
  await seedNotebook(world.deps(), a, { "same.md": "same\n", "b.md": "b1\n" });
  write(a, "b.md", "b2\n");
  await commit(world.deps(), { path: a, message: "b2" });
  // The agent edits b.md, then the private state is lost.
  write(a, "b.md", "b2\nmine\n");
  rmSync(world.privateRoot, { recursive: true });
  // Against generation 1, b.md would conflict (b1 → b2 there, b1 → mine here); against 2 it merges.
  const pulled = await pull(world.deps(), { path: a });
  expect(pulled).toMatchObject({ generation: 2 });
  expect(read(a, "b.md")).toBe("b2\nmine\n");
  const committed = await commit(world.deps(), { path: a, message: "mine" });
  expect(committed).toMatchObject({ generation: 3, files: [{ path: "b.md", insertions: 1, deletions: 0 }] });
});

test("refuseForeign: a directory of files in no generation is refused before anything is written; matching files are a former checkout", async () => {
  world = makeWorld();
  const a = world.checkout("a");
  await seedNotebook(world.deps(), a, { "n.md": "n\n" });
  const foreign = world.checkout("foreign");
  write(foreign, "secret.txt", "s\n");
  const refused = await pull(world.deps(), { path: foreign, refuseForeign: true }).catch((e: unknown) => e);
  expect(refused).toBeInstanceOf(ForeignFiles);
  expect(refused).toMatchObject({ count: 1, notebookEmpty: false });
  expect(read(foreign, "n.md")).toBe(null);
  // A file the notebook holds, exactly: a copy of a checkout, pulled as one.
  const former = world.checkout("former");
  write(former, "n.md", "n\n");
  write(former, "extra.md", "mine\n");
  expect(await pull(world.deps(), { path: former, refuseForeign: true })).toMatchObject({ generation: 1 });
  expect(read(former, "extra.md")).toBe("mine\n");
});
