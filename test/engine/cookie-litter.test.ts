/**
 * A server writes a cookie file at its checkout's root and removes it at
 * once (checkout/watcher.ts); one killed between the two leaves it there.
 * It was never a notebook file, and the next call that scans the checkout
 * removes it, so the agent's directory is left as the agent left it.
 */
import { afterEach, expect, test } from "bun:test";
import { existsSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { commit } from "../../src/engine/commit.ts";
import { pull } from "../../src/engine/pull.ts";
import { makeWorld, readCurrent, type World, write } from "../support/fixture.ts";

let world: World;
afterEach(async () => {
  await world?.close();
});

test("a cookie left by a killed server is removed by the next scan, and never published", async () => {
  world = makeWorld();
  const a = world.checkout("a");
  await pull(world.deps(), { path: a });
  const cookie = join(a, ".slivingdoc-cookie-0123456789abcdef");
  writeFileSync(cookie, "");
  // Not a cookie's name: a notebook file like any other.
  write(a, ".slivingdoc-cookie-notes.md", "kept\n");
  write(a, "notes.md", "one\n");
  await commit(world.deps(), { path: a, message: "one" });
  expect(existsSync(cookie)).toBe(false);
  expect(existsSync(join(a, ".slivingdoc-cookie-notes.md"))).toBe(true);
  writeFileSync(cookie, "");
  await pull(world.deps(), { path: a });
  expect(existsSync(cookie)).toBe(false);
  const { manifest } = await readCurrent(world.store);
  expect(manifest.generation).toBe(1);
});
