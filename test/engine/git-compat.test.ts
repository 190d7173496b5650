/**
 * What we publish is real git: every pack passes C git's `git verify-pack`,
 * the history imports into a C git repository that `git fsck --strict`
 * accepts, and commit messages survive byte for byte.
 */
import { afterAll, expect, test } from "bun:test";
import { commit } from "../../src/engine/commit.ts";
import { pull } from "../../src/engine/pull.ts";
import { git, withPacksInGit } from "../support/cgit.ts";
import { makeWorld, write } from "../support/fixture.ts";
import { SYSTEM_RANDOM } from "../../src/surfaces/engine-deps.ts";

const world = makeWorld();
afterAll(() => world.close());


test("every published pack passes git verify-pack, and the history passes git fsck --strict", async () => {
  const a = world.checkout("a");
  const b = world.checkout("b");
  await pull(world.deps(), { path: a });
  await pull(world.deps(), { path: b });
  const messages = ["first", "with\r\ncarriage returns and no final newline", "  leading and trailing spaces  \n\n", "ünïcødé ✓ 日本語"];
  write(a, "notes/one.md", "one\n");
  write(a, "z/deep/er/file.md", "deep\n");
  write(a, "a-b.md", "sorts before a/\n");
  write(a, "a/b.md", "inside a/\n");
  await commit(world.deps(), { path: a, message: messages[0]! });
  write(b, "b.md", "from b\n");
  await commit(world.deps(), { path: b, message: messages[1]! });
  write(a, "notes/one.md", "one, edited\n");
  await commit(world.deps(), { path: a, message: messages[2]! });
  write(b, "notes/two.md", "two\n");
  await commit(world.deps(), { path: b, message: messages[3]! });

  const packs = await world.store.list("packs/");
  expect(packs.length).toBe(4);
  await withPacksInGit(world.store, ({ repo }) => {
    // Messages round-trip byte for byte: compare what git stored, not `%B`, which adds a newline.
    const raw = Bun.spawnSync(["git", "rev-list", "--reverse", "main"], { cwd: repo, stdout: "pipe" }).stdout.toString().trim().split("\n");
    const stored = raw.map((oid) => {
      const obj = Bun.spawnSync(["git", "cat-file", "commit", oid], { cwd: repo, stdout: "pipe" }).stdout;
      return obj.subarray(obj.indexOf("\n\n") + 2).toString("utf8");
    });
    expect(stored).toEqual(messages);
    // The tree C git sees is the notebook.
    const files = git(repo, "ls-tree", "-r", "--name-only", "main").out.trim().split("\n");
    expect(files).toEqual(["a-b.md", "a/b.md", "b.md", "notes/one.md", "notes/two.md", "z/deep/er/file.md"]);
  });
});

test("our pack index is byte for byte what git index-pack writes, and our packs are what git verify-pack accepts", async () => {
  const { indexUndeltifiedPack } = await import("../../src/engine/git/pack.ts");
  const { mkdtempSync, readFileSync, rmSync, writeFileSync } = await import("node:fs");
  const { tmpdir } = await import("node:os");
  const { join } = await import("node:path");
  const packs = await world.store.list("packs/");
  expect(packs.length).toBeGreaterThan(0);
  const dir = mkdtempSync(join(tmpdir(), "slivingdoc-idx-"));
  try {
    expect(git(dir, "init", "-q", "--bare").code).toBe(0);
    for (const [i, p] of packs.entries()) {
      const bytes = (await world.store.get(p.key))!.body;
      const file = join(dir, `p${i}.pack`);
      writeFileSync(file, bytes);
      expect(git(dir, "index-pack", file).code).toBe(0);
      const ours = indexUndeltifiedPack(bytes);
      expect(ours).not.toBeNull();
      expect(Buffer.compare(ours!, readFileSync(file.replace(/\.pack$/, ".idx")))).toBe(0);
    }
    // A corrupted pack is refused, not indexed.
    const bad = new Uint8Array((await world.store.get(packs[0]!.key))!.body);
    bad[20]! ^= 0xff;
    expect(() => indexUndeltifiedPack(bad)).toThrow();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test("deltified packs written by C git import and read correctly, and their objects can be packed again", async () => {
  // slivingdoc never writes deltas; a pack from elsewhere may have them, and
  // isomorphic-git (git/object-cache.ts) indexes it, reads its deltified
  // entries, and packs them.
  const { ObjectCache } = await import("../../src/engine/git/object-cache.ts");
  const { ProcessMemory } = await import("../../src/engine/process-memory.ts");
  const { indexUndeltifiedPack } = await import("../../src/engine/git/pack.ts");
  const { mkdtempSync, readFileSync, rmSync, writeFileSync, mkdirSync } = await import("node:fs");
  const { tmpdir } = await import("node:os");
  const { join } = await import("node:path");
  const dir = mkdtempSync(join(tmpdir(), "slivingdoc-delta-"));
  try {
    const repo = join(dir, "repo");
    mkdirSync(repo);
    expect(git(repo, "init", "-q", "--initial-branch=main").code).toBe(0);
    // Versions of one long file that differ by a line: what git deltifies.
    const lines = Array.from({ length: 400 }, (_, i) => `line ${i} of a note that changes a little each time\n`);
    for (let v = 0; v < 4; v++) {
      lines[v * 50] = `edited in version ${v}\n`;
      mkdirSync(join(repo, "notes"), { recursive: true });
      writeFileSync(join(repo, "notes", "long.md"), lines.join(""));
      writeFileSync(join(repo, `v${v}.md`), `version ${v}\n`);
      expect(git(repo, "add", "-A").code).toBe(0);
      expect(git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", `v${v}`).code).toBe(0);
    }
    const ids = git(repo, "rev-list", "--objects", "main").out.trim().split("\n").map((l) => l.split(" ")[0]!);
    const packed = Bun.spawnSync(["git", "pack-objects", "--stdout", "--window=10", "--depth=10"], {
      cwd: repo,
      stdin: Buffer.from(`${ids.join("\n")}\n`),
      stdout: "pipe",
      stderr: "pipe",
    });
    expect(packed.exitCode).toBe(0);
    const pack = new Uint8Array(packed.stdout);
    expect(indexUndeltifiedPack(pack)).toBeNull(); // it does hold deltas

    const cache = await ObjectCache.open(join(dir, "cache"), new ProcessMemory(SYSTEM_RANDOM).objects, SYSTEM_RANDOM.randomId);
    await cache.importPack("from-c-git", pack);
    const head = git(repo, "rev-parse", "main").out.trim();
    const tree = await cache.readFlatTree(await cache.commitTree(head));
    const listed = git(repo, "ls-tree", "-r", "main").out.trim().split("\n").map((l) => l.split(/\s+/));
    expect([...tree.files].sort()).toEqual(listed.map((l) => [l[3]!, l[2]!] as [string, string]).sort());
    for (const [path, oid] of tree.files) {
      expect(Buffer.from(await cache.readBlob(oid)).equals(readFileSync(join(repo, path)))).toBe(true);
    }
    // Every version of the long file, deltified or not, reads back.
    for (const oid of ids) expect(await cache.has(oid)).toBe(true);

    // Packing them again (as a commit or compaction would) makes a pack C git accepts, holding exactly them.
    const { pack: again } = await cache.packObjects(ids);
    const file = join(dir, "again.pack");
    writeFileSync(file, again);
    const bare = join(dir, "bare");
    expect(git(dir, "init", "-q", "--bare", bare).code).toBe(0);
    expect(git(bare, "index-pack", file).code).toBe(0);
    const verified = git(bare, "verify-pack", "-v", file.replace(/\.pack$/, ".idx"));
    expect(verified.code).toBe(0);
    const inPack = verified.out.split("\n").filter((l) => /^[0-9a-f]{40} /.test(l)).map((l) => l.slice(0, 40));
    expect(inPack.sort()).toEqual([...ids].sort());
    cache.close();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
