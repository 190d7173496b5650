/**
 * A checkout's private state follows its directory (checkout/registry.ts,
 * checkout/state.ts): set aside when the directory leaves its path, taken
 * over where it turns up again, bounded; and damaged state counts as lost.
 */
import { afterEach, describe, expect, test } from "bun:test";
import { mkdirSync, readdirSync, readFileSync, realpathSync, renameSync, rmSync, statSync, utimesSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { DIRECTORY_MARK, type DirectoryStat } from "../../src/engine/checkout/directory-identity.ts";
import { checkoutStateDir } from "../../src/engine/checkout/registry.ts";
import { commit } from "../../src/engine/commit.ts";
import { type Baseline, CheckoutState } from "../../src/engine/checkout/state.ts";
import { readLocalChanges } from "../../src/engine/local-changes.ts";
import { pull } from "../../src/engine/pull.ts";
import { restore } from "../../src/engine/restore.ts";
import { makeWorld, read, refusal, seedNotebook, type World } from "../support/fixture.ts";

let world: World;
afterEach(async () => {
  await world?.close();
});

/** A checkout with gone.md and keep.md published, then gone.md deleted, unpublished. */
async function withUnpublishedDeletion(name: string): Promise<string> {
  world ??= makeWorld();
  const a = world.checkout(name);
  await seedNotebook(world.deps(), a, { "gone.md": "to be deleted\n", "keep.md": "kept\n" });
  rmSync(join(a, "gone.md"));
  return a;
}

const setAside = () => join(world.privateRoot, "set-aside");

test("a takeover killed part-way (the state claimed, its object cache moved, nothing else) is finished by the next call", async () => {
  world = makeWorld();
  const a = await withUnpublishedDeletion("a");
  const moved = world.checkout("moved");
  renameSync(a, moved);
  // Any call lists the checkouts, and sets a's state aside.
  await pull(world.deps(), { path: world.checkout("other") });
  const [id] = readdirSync(setAside());
  // What a call on `moved` killed after its first two steps leaves.
  const stateDir = checkoutStateDir(world.privateRoot, world.deps().storeId, moved);
  mkdirSync(stateDir, { recursive: true });
  renameSync(join(setAside(), id!), join(stateDir, "adopting"));
  renameSync(join(stateDir, "adopting", "git"), join(stateDir, "git"));

  expect((await readLocalChanges(world.deps(), { path: moved })).changes.map((c) => [c.path, c.change])).toEqual([["gone.md", "deleted"]]);
  expect((await pull(world.deps(), { path: moved })).files).toEqual([]);
  expect(read(moved, "gone.md")).toBeNull();
  expect(readdirSync(stateDir)).not.toContain("adopting");
});

test("a state set aside longer than 30 days is removed when the next one is set aside", async () => {
  world = makeWorld();
  const old = await withUnpublishedDeletion("old");
  rmSync(old, { recursive: true });
  await pull(world.deps(), { path: world.checkout("other") });
  const [oldId] = readdirSync(setAside());
  const longAgo = new Date(Date.now() - 31 * 24 * 3600 * 1000);
  utimesSync(join(setAside(), oldId!), longAgo, longAgo);
  const recent = world.checkout("recent");
  await pull(world.deps(), { path: recent });
  rmSync(recent, { recursive: true });
  await pull(world.deps(), { path: world.checkout("other") });
  const left = readdirSync(setAside());
  expect(left).toHaveLength(1);
  expect(left).not.toContain(oldId);
});

test("on a damaged state, restore asks for a pull too, saying the state is damaged", async () => {
  world = makeWorld();
  const a = await withUnpublishedDeletion("a");
  const stateDir = checkoutStateDir(world.privateRoot, world.deps().storeId, a);
  writeFileSync(join(stateDir, "state.json"), '{"version":1,"checkout":');
  const e = await refusal(() => restore(world.deps(), { path: a, from: 1, paths: ["gone.md"], force: false }));
  expect([e.code, e.reason, e.action, e.retryable]).toEqual(["INVALID_REQUEST", "PULL_REQUIRED", "PULL", false]);
  expect(e.message).toContain("damaged");
  expect(e.message).not.toMatch(/JSON|Parse/);
  // Nothing was dropped by the refusals: the pull that follows rebuilds the state.
  await pull(world.deps(), { path: a });
  expect(read(a, "keep.md")).toBe("kept\n");
});

test("a call reads its state and journal once, when it settles them under the lock; what it writes is what it reads after", async () => {
  world = makeWorld();
  const deps = world.deps();
  const a = world.checkout("once");
  await seedNotebook(deps, a, { "a.md": "one\n" });
  const dir = realpathSync(a);
  const state = await CheckoutState.open({ privateRoot: deps.privateRoot, storeId: deps.storeId, dir, self: deps.self, memory: deps.memory, clock: deps });
  try {
    const stateFile = join(state.stateDir, "state.json");
    const settled = JSON.parse(readFileSync(stateFile, "utf8")) as { baseline: Baseline };
    expect(settled.baseline.generation).toBe(1);
    // Only the lock's holder writes these files; were they read again, a
    // process per call would pay for every read and parse. Taken away
    // behind the holder's back, they are not looked at again.
    rmSync(stateFile);
    writeFileSync(join(state.stateDir, "journal.json"), "not json");
    expect(state.readBaseline()).toEqual(settled.baseline);
    expect(state.readPublication()).toBeNull();
    expect(state.readJournal()).toBeNull();
    // What the call writes, it reads back as a read of the file would give it.
    const moved = { ...settled.baseline, generation: 2 };
    state.writeBaseline(moved);
    expect(state.readBaseline()).toEqual(JSON.parse(readFileSync(stateFile, "utf8")).baseline);
    const journal = { version: 1 as const, target: moved, writes: [{ path: "a.md", before: null, after: null }] };
    state.writeJournal(journal);
    expect(state.readJournal()).toEqual(JSON.parse(readFileSync(join(state.stateDir, "journal.json"), "utf8")));
    state.clearJournal();
    expect(state.readJournal()).toBeNull();
  } finally {
    state.release();
  }
});

/**
 * Where the file system records no birth time (tmpfs on older kernels, some
 * network file systems), a directory is known by its device, inode and the
 * mark slivingdoc writes into it (directory-identity.ts). The stat is
 * injected to report no birth time on any machine, and, for the harshest
 * case, to give every directory one device and inode, as a directory made
 * again at once may be given the inode of the one removed.
 */
describe("without birth times", () => {
  const noBirthTime: DirectoryStat = (dir) => {
    const st = statSync(dir);
    return { dev: st.dev, ino: st.ino, birthtimeMs: 0 };
  };
  const oneInode: DirectoryStat = (dir) => ({ dev: statSync(dir).dev, ino: 42, birthtimeMs: 0 });

  test("a directory replaced at its path, with the same device and inode, is a new checkout; the old state is set aside and its directory takes it back", async () => {
    world = makeWorld();
    const deps = world.deps({ directoryStat: oneInode });
    const a = world.checkout("a");
    await seedNotebook(deps, a, { "gone.md": "to be deleted\n", "keep.md": "kept\n" });
    rmSync(join(a, "gone.md"));
    const away = world.checkout("away");
    renameSync(a, away);
    mkdirSync(a);
    // A commit from the new, empty directory would publish the deletion of every file: refused.
    const e = await refusal(() => commit(deps, { path: a, message: "wipe" }));
    expect([e.reason, e.message]).toEqual(["PULL_REQUIRED", "This directory is not the one that was pulled here (it was removed or replaced); call pull for it once, then commit. No remote state was touched."]);
    expect(readdirSync(setAside())).toHaveLength(1);
    await pull(deps, { path: a });
    expect([read(a, "gone.md"), read(a, "keep.md")]).toEqual(["to be deleted\n", "kept\n"]);
    // The original, back at the path: its unpublished deletion is still a local edit.
    rmSync(a, { recursive: true });
    renameSync(away, a);
    expect((await readLocalChanges(deps, { path: a })).changes.map((c) => [c.path, c.change])).toEqual([["gone.md", "deleted"]]);
    await commit(deps, { path: a, message: "delete" });
    const other = world.checkout("other");
    await pull(deps, { path: other });
    expect([read(other, "gone.md"), read(other, "keep.md")]).toEqual([null, "kept\n"]);
  });

  test("a moved checkout keeps its state, and the mark is never published nor listed", async () => {
    world = makeWorld();
    const deps = world.deps({ directoryStat: noBirthTime });
    const a = await (async () => {
      const dir = world.checkout("a");
      await seedNotebook(deps, dir, { "gone.md": "to be deleted\n", "keep.md": "kept\n" });
      rmSync(join(dir, "gone.md"));
      return dir;
    })();
    const moved = world.checkout("moved");
    renameSync(a, moved);
    expect((await readLocalChanges(deps, { path: moved })).changes.map((c) => [c.path, c.change])).toEqual([["gone.md", "deleted"]]);
    expect(readdirSync(moved).sort()).toEqual([DIRECTORY_MARK, "keep.md"]);
    expect((await commit(deps, { path: moved, message: "delete" })).files.map((f) => f.path)).toEqual(["gone.md"]);
    const other = world.checkout("other");
    await pull(deps, { path: other });
    expect(readdirSync(other).sort()).toEqual([DIRECTORY_MARK, "keep.md"]);
    expect(readFileSync(join(other, DIRECTORY_MARK), "utf8")).not.toBe(readFileSync(join(moved, DIRECTORY_MARK), "utf8"));
  });

  test("a state recorded before the mark (device and inode alone) stays the directory's", async () => {
    world = makeWorld();
    const deps = world.deps({ directoryStat: noBirthTime });
    const a = world.checkout("a");
    await seedNotebook(deps, a, { "gone.md": "to be deleted\n", "keep.md": "kept\n" });
    rmSync(join(a, "gone.md"));
    // What an earlier version left: no mark, the identity without one.
    rmSync(join(a, DIRECTORY_MARK));
    const stateFile = join(checkoutStateDir(world.privateRoot, deps.storeId, a), "state.json");
    const state = JSON.parse(readFileSync(stateFile, "utf8"));
    const st = statSync(a);
    writeFileSync(stateFile, JSON.stringify({ ...state, directory: `${st.dev}:${st.ino}:0` }));
    expect((await commit(deps, { path: a, message: "delete" })).files.map((f) => f.path)).toEqual(["gone.md"]);
    expect(JSON.parse(readFileSync(stateFile, "utf8")).directory).toBe(`${st.dev}:${st.ino}:m${readFileSync(join(a, DIRECTORY_MARK), "utf8").trim()}`);
  });
});
