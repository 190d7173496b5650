/**
 * A checkout thrown away with its files only when they are exactly its
 * baseline (src/engine/discard-unchanged.ts): for `serve`'s session
 * directory. A write that comes after the check, before the checkout is
 * renamed aside, keeps it whole, with its state.
 */
import { afterEach, expect, test } from "bun:test";
import { existsSync, mkdirSync, readdirSync, readFileSync, realpathSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { discardIfUnchanged } from "../../src/engine/discard-unchanged.ts";
import { pull } from "../../src/engine/pull.ts";
import { makeWorld, seedNotebook, type World } from "../support/fixture.ts";

let world: World;
afterEach(async () => world?.close());

/** A checkout `name` pulled from a notebook of two files, one in a directory. */
async function pulledCheckout(name: string): Promise<string> {
  world = makeWorld();
  await seedNotebook(world.deps(), world.checkout("seed"), { "a.md": "a\n", "dir/b.md": "b\n" });
  const dir = world.checkout(name);
  mkdirSync(dir, { recursive: true });
  await pull(world.deps(), { path: dir });
  return realpathSync(dir);
}

const checkouts = () => readdirSync(join(world.privateRoot, "checkouts")).length;

test("files exactly the baseline: the directory and its private state go", async () => {
  const dir = await pulledCheckout("clean");
  const before = checkouts();
  expect(await discardIfUnchanged(world.deps(), dir)).toBe(true);
  expect(existsSync(dir)).toBe(false);
  expect(checkouts()).toBe(before - 1);
  expect(readdirSync(join(dir, ".."))).toEqual(["seed"]);
});

test("an edit, a new file, a deletion or an ignored file: kept as it is", async () => {
  const changes: Record<string, (dir: string) => void> = {
    edit: (dir) => writeFileSync(join(dir, "a.md"), "a, edited\n"),
    added: (dir) => writeFileSync(join(dir, "dir", "c.md"), "c\n"),
    deleted: (dir) => Bun.spawnSync(["rm", join(dir, "dir", "b.md")]),
    ignored: (dir) => writeFileSync(join(dir, ".DS_Store"), "\0"),
  };
  for (const [name, change] of Object.entries(changes)) {
    const dir = await pulledCheckout(name);
    change(dir);
    const files = readdirSync(dir, { recursive: true }).sort();
    expect({ name, discarded: await discardIfUnchanged(world.deps(), dir) }).toEqual({ name, discarded: false });
    expect({ name, files: readdirSync(dir, { recursive: true }).sort() }).toEqual({ name, files });
    await world.close();
  }
});

test("a write between the check and the rename: put back, kept with its state, the write in it", async () => {
  const dir = await pulledCheckout("raced");
  const before = checkouts();
  const onReplace = () => writeFileSync(join(dir, "a.md"), "a, written just now\n");
  expect(await discardIfUnchanged(world.deps({ onReplace }), dir)).toBe(false);
  expect(readFileSync(join(dir, "a.md"), "utf8")).toBe("a, written just now\n");
  expect(readdirSync(join(dir, "..")).sort()).toEqual(["raced", "seed"]);
  expect(checkouts()).toBe(before);
  // Still a checkout with its baseline: the write is an edit to publish.
  const { readLocalChanges } = await import("../../src/engine/local-changes.ts");
  expect((await readLocalChanges(world.deps(), { path: dir })).changes.map((c) => c.path)).toEqual(["a.md"]);
});
