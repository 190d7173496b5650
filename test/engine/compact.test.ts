/**
 * Compaction on the real embedded store: the pack list is bounded, every
 * file survives, the newest 32 commits (by default; every commit with
 * `history: "all"`) survive, C git accepts the compacted pack, and a
 * shorter history keeps only the newest commits.
 *
 * These tests publish the compacted list as gc would: the same head and
 * generation, a fresh publication id, one conditional write
 * (compaction-in-commits.test.ts covers commits that compact).
 */
import { afterEach, describe, expect, test } from "bun:test";
import { spawnSync } from "node:child_process";
import { mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { loadAcceptedState } from "../../src/engine/publish/accepted-state.ts";
import { commit } from "../../src/engine/commit.ts";
import { type CompactionPolicy, compactPacks, needsCompaction } from "../../src/engine/publish/compact.ts";
import { ObjectCache } from "../../src/engine/git/object-cache.ts";
import { MANIFEST_KEY, type Manifest, newPublicationId, parseManifest, serializeManifest } from "../../src/engine/publish/manifest.ts";
import { pull } from "../../src/engine/pull.ts";
import type { ObjectStore } from "../../src/store/object-store.ts";
import { makeWorld, read, readCurrent, seedNotebook, type World, write } from "../support/fixture.ts";
import { isolatedGitEnv } from "../support/seeded.ts";
import { SYSTEM_RANDOM } from "../../src/surfaces/engine-deps.ts";

let world: World;
afterEach(async () => {
  await world?.close();
});

const current = readCurrent;

/** A maintenance cache holding every listed pack, as `slivingdoc gc` would open one. */
async function maintenanceCache(name: string): Promise<ObjectCache> {
  const git = await ObjectCache.open(join(world.root, "maintenance", name), world.memory.objects, SYSTEM_RANDOM.randomId);
  await loadAcceptedState(world.store, git);
  return git;
}

/** Compact the accepted state and publish it (same head and generation). */
async function compactAndPublish(policy: Partial<CompactionPolicy>, name = "m") {
  const { manifest, etag } = await current(world.store);
  const git = await maintenanceCache(name);
  const result = await compactPacks({ now: new Date(), randomId: SYSTEM_RANDOM.randomId, store: world.store, git, head: manifest.head, packs: manifest.packs, policy });
  if (result === null) return null;
  const next: Manifest = { ...manifest, publication: newPublicationId(SYSTEM_RANDOM.randomId), packs: result.packs };
  const swapped = await world.store.putIfMatch(MANIFEST_KEY, serializeManifest(next), etag);
  expect(swapped.ok).toBe(true);
  return result;
}

/** A notebook with `commits` small commits after the seed, each appending a line to one of 5 files. */
async function history(commits: number): Promise<string> {
  world = makeWorld();
  const a = world.checkout("a");
  const files = Object.fromEntries(Array.from({ length: 5 }, (_, f) => [`dir${f % 2}/file${f}.md`, `file ${f}\n`]));
  await seedNotebook(world.deps({ compaction: false }), a, files);
  for (let i = 0; i < commits; i++) {
    const path = `dir${i % 2}/file${i % 5}.md`;
    write(a, path, `${read(a, path)}change ${i}\n`);
    await commit(world.deps({ compaction: false }), { path: a, message: `change ${i}` });
  }
  return a;
}

function gitIn(dir: string, ...args: string[]): string {
  const r = spawnSync("git", args, { cwd: dir, env: isolatedGitEnv(dir), encoding: "utf8" });
  if (r.status !== 0) throw new Error(`git ${args.join(" ")}: ${r.stderr}`);
  return r.stdout;
}

/** A bare C git repository holding exactly the listed packs, with `main` at the head. */
async function cGitRepo(manifest: Manifest): Promise<string> {
  const dir = mkdtempSync(join(tmpdir(), "slivingdoc-compact-git-"));
  gitIn(dir, "init", "-q", "--bare");
  for (const p of manifest.packs) {
    const body = (await world.store.get(p.key))!.body;
    const r = spawnSync("git", ["index-pack", "--stdin"], { cwd: dir, env: isolatedGitEnv(dir), input: body });
    if (r.status !== 0) throw new Error(`git index-pack: ${r.stderr}`);
  }
  gitIn(dir, "update-ref", "refs/heads/main", manifest.head);
  return dir;
}

describe("compaction", () => {
  test("within the bound it does nothing", async () => {
    await history(3);
    const { manifest } = await current(world.store);
    expect(needsCompaction(manifest.packs)).toBe(false);
    const git = await maintenanceCache("m");
    expect(await compactPacks({ now: new Date(), randomId: SYSTEM_RANDOM.randomId, store: world.store, git, head: manifest.head, packs: manifest.packs })).toBeNull();
  });

  test("40 commits, history \"all\": one base plus the newest packs, every file and every commit kept, C git agrees", async () => {
    const a = await history(40);
    const before = await current(world.store);
    expect(before.manifest.packs).toHaveLength(41);
    const result = await compactAndPublish({ maxPacks: 32, keepRecent: 8, history: "all" });
    expect(result).not.toBeNull();
    const after = await current(world.store);
    expect(after.manifest.packs).toHaveLength(9);
    expect(after.manifest.packs.slice(1)).toEqual(before.manifest.packs.slice(-8));
    expect(result!.replaced).toEqual(before.manifest.packs.slice(0, 33));
    expect(after.manifest.head).toBe(before.manifest.head);

    // A cold pull of the compacted state equals the writer's files.
    const b = world.checkout("b");
    const pulled = await pull(world.deps({ compaction: false }), { path: b });
    expect(pulled.generation).toBe(41);
    for (let f = 0; f < 5; f++) expect(read(b, `dir${f % 2}/file${f}.md`)).toBe(read(a, `dir${f % 2}/file${f}.md`));

    // The kept packs' objects are not repeated in the base.
    const git = await maintenanceCache("check");
    const baseIds = new Set(git.packObjectIds(after.manifest.packs[0]!.sha256));
    for (const p of after.manifest.packs.slice(1)) for (const oid of git.packObjectIds(p.sha256)) expect(baseIds.has(oid)).toBe(false);

    // C git reads the compacted store: the full history, and nothing dangling but the nonce.
    const repo = await cGitRepo(after.manifest);
    try {
      expect(gitIn(repo, "rev-list", "--count", "main").trim()).toBe("41");
      gitIn(repo, "fsck", "--no-dangling", "--strict");
    } finally {
      rmSync(repo, { recursive: true, force: true });
    }
  });

  test("a warm checkout keeps merging after compaction and commits on top of it", async () => {
    const a = await history(35);
    const b = world.checkout("b");
    await pull(world.deps({ compaction: false }), { path: b });
    await compactAndPublish({ maxPacks: 32, keepRecent: 4 });
    write(b, "dir0/file0.md", `${read(b, "dir0/file0.md")}from b\n`);
    const out = await commit(world.deps({ compaction: false }), { path: b, message: "b after compaction" });
    expect(out.generation).toBe(37);
    await pull(world.deps({ compaction: false }), { path: a });
    expect(read(a, "dir0/file0.md")).toContain("from b\n");
    const c = world.checkout("c");
    await pull(world.deps({ compaction: false }), { path: c });
    expect(read(c, "dir0/file0.md")).toBe(read(a, "dir0/file0.md"));
  });

  test("by default the newest 32 commits are kept: in the base and the kept packs together", async () => {
    await history(40);
    await compactAndPublish({});
    const after = await current(world.store);
    expect(after.manifest.packs).toHaveLength(9);
    const git = await maintenanceCache("check");
    const ids = after.manifest.packs.flatMap((p) => git.packObjectIds(p.sha256));
    const repo = await cGitRepo(after.manifest);
    try {
      const types = spawnSync("git", ["cat-file", "--batch-check=%(objecttype)"], { cwd: repo, encoding: "utf8", env: isolatedGitEnv(repo), input: `${ids.join("\n")}\n` });
      expect(types.stdout.split("\n").filter((t) => t === "commit")).toHaveLength(32);
    } finally {
      rmSync(repo, { recursive: true, force: true });
    }
  });

  test("with history: N the base keeps the newest N commits; a cold pull still works", async () => {
    const a = await history(40);
    await compactAndPublish({ maxPacks: 32, keepRecent: 0, history: 5 });
    const after = await current(world.store);
    expect(after.manifest.packs).toHaveLength(1);
    const git = await maintenanceCache("check");
    const ids = git.packObjectIds(after.manifest.packs[0]!.sha256);
    const repo = await cGitRepo(after.manifest);
    let commits = 0;
    try {
      const types = spawnSync("git", ["cat-file", "--batch-check=%(objecttype)"], { cwd: repo, encoding: "utf8", env: isolatedGitEnv(repo), input: `${ids.join("\n")}\n` });
      commits = types.stdout.split("\n").filter((t) => t === "commit").length;
    } finally {
      rmSync(repo, { recursive: true, force: true });
    }
    expect(commits).toBe(5);
    const b = world.checkout("b");
    await pull(world.deps({ compaction: false }), { path: b });
    for (let f = 0; f < 5; f++) expect(read(b, `dir${f % 2}/file${f}.md`)).toBe(read(a, `dir${f % 2}/file${f}.md`));
  });

  test("from a committer's own cache (loose objects beside packs), as a commit would call it", async () => {
    const a = await history(34);
    const { manifest, etag } = await current(world.store);
    const [id] = readdirSync(join(world.privateRoot, "checkouts"));
    const git = await ObjectCache.open(join(world.privateRoot, "checkouts", id!, "git"), world.memory.objects, SYSTEM_RANDOM.randomId);
    const result = await compactPacks({ now: new Date(), randomId: SYSTEM_RANDOM.randomId, store: world.store, git, head: manifest.head, packs: manifest.packs, policy: { history: "all" } });
    expect(result!.packs).toHaveLength(9);
    const next: Manifest = { ...manifest, publication: newPublicationId(SYSTEM_RANDOM.randomId), packs: result!.packs };
    expect((await world.store.putIfMatch(MANIFEST_KEY, serializeManifest(next), etag)).ok).toBe(true);
    const b = world.checkout("b");
    await pull(world.deps({ compaction: false }), { path: b });
    for (let f = 0; f < 5; f++) expect(read(b, `dir${f % 2}/file${f}.md`)).toBe(read(a, `dir${f % 2}/file${f}.md`));
    const repo = await cGitRepo(next);
    try {
      expect(gitIn(repo, "rev-list", "--count", "main").trim()).toBe("35");
    } finally {
      rmSync(repo, { recursive: true, force: true });
    }
  });

  test("two compactions of the same state upload different keys (the nonce)", async () => {
    await history(33);
    const { manifest } = await current(world.store);
    const git = await maintenanceCache("m");
    const one = await compactPacks({ now: new Date(), randomId: SYSTEM_RANDOM.randomId, store: world.store, git, head: manifest.head, packs: manifest.packs });
    const two = await compactPacks({ now: new Date(), randomId: SYSTEM_RANDOM.randomId, store: world.store, git, head: manifest.head, packs: manifest.packs });
    expect(one!.base!.key).not.toBe(two!.base!.key);
    expect(one!.objects).toBe(two!.objects);
  });

  test("compacting whenever the bound is passed keeps the pack count bounded over a long history", async () => {
    world = makeWorld();
    const a = world.checkout("a");
    await seedNotebook(world.deps({ compaction: false }), a, { "log.md": "start\n" });
    const policy = { maxPacks: 6, keepRecent: 2 };
    let most = 0;
    for (let i = 0; i < 30; i++) {
      write(a, "log.md", `${read(a, "log.md")}entry ${i}\n`);
      await commit(world.deps({ compaction: false }), { path: a, message: `entry ${i}` });
      const { manifest } = await current(world.store);
      most = Math.max(most, manifest.packs.length);
      if (needsCompaction(manifest.packs, { ...policy, history: "all" })) await compactAndPublish(policy, `m${i}`);
    }
    expect(most).toBeLessThanOrEqual(7);
    expect((await current(world.store)).manifest.packs.length).toBeLessThanOrEqual(6);
    const b = world.checkout("b");
    await pull(world.deps({ compaction: false }), { path: b });
    expect(read(b, "log.md")).toBe(read(a, "log.md"));
  });
});
