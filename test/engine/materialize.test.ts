/**
 * Writing files that did not exist before (materialize.ts): in place, and
 * through the usual rename when something turned up at the path meanwhile.
 */
import { afterEach, expect, test } from "bun:test";
import { readdirSync } from "node:fs";
import { join } from "node:path";
import { commit } from "../../src/engine/commit.ts";
import { pull } from "../../src/engine/pull.ts";
import { makeWorld, read, type World, write } from "../support/fixture.ts";

let world: World;
afterEach(async () => {
  await world?.close();
});

test("a file created at a new path after the scan is replaced like any other, without a partial file left", async () => {
  world = makeWorld();
  const a = world.checkout("a");
  const b = world.checkout("b");
  await pull(world.deps(), a);
  await pull(world.deps(), b);
  write(b, "notes/new.md", "from b\n");
  write(b, "notes/other.md", "also from b\n");
  await commit(world.deps(), b, "b");
  // Between a's scan and its writes, something creates one of the paths the pull adds.
  const onStage = (stage: string) => {
    if (stage === "materialize") write(a, "notes/new.md", "appeared meanwhile\n");
  };
  const pulled = await pull(world.deps({ onStage }), a);
  expect(pulled.generation).toBe(1);
  expect([read(a, "notes/new.md"), read(a, "notes/other.md")]).toEqual(["from b\n", "also from b\n"]);
  expect(readdirSync(join(a, "notes")).sort()).toEqual(["new.md", "other.md"]);
});
