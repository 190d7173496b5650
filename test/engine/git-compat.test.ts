/**
 * What we publish is real git: every pack passes C git's `git verify-pack`,
 * the history imports into a C git repository that `git fsck --strict`
 * accepts, and commit messages survive byte for byte.
 */
import { afterAll, expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { commit } from "../../src/engine/commit.ts";
import { pull } from "../../src/engine/pull.ts";
import { makeWorld, write } from "../support/fixture.ts";

const world = makeWorld();
afterAll(() => world.close());

function git(cwd: string, ...args: string[]): { code: number; out: string; err: string } {
  const p = Bun.spawnSync(["git", ...args], { cwd, stdout: "pipe", stderr: "pipe" });
  return { code: p.exitCode, out: p.stdout.toString(), err: p.stderr.toString() };
}

test("every published pack passes git verify-pack, and the history passes git fsck --strict", async () => {
  const a = world.checkout("a");
  const b = world.checkout("b");
  await pull(world.deps(), a);
  await pull(world.deps(), b);
  const messages = ["first", "with\r\ncarriage returns and no final newline", "  leading and trailing spaces  \n\n", "ünïcødé ✓ 日本語"];
  write(a, "notes/one.md", "one\n");
  write(a, "z/deep/er/file.md", "deep\n");
  write(a, "a-b.md", "sorts before a/\n");
  write(a, "a/b.md", "inside a/\n");
  await commit(world.deps(), a, messages[0]!);
  write(b, "b.md", "from b\n");
  await commit(world.deps(), b, messages[1]!);
  write(a, "notes/one.md", "one, edited\n");
  await commit(world.deps(), a, messages[2]!);
  write(b, "notes/two.md", "two\n");
  await commit(world.deps(), b, messages[3]!);

  const packs = await world.store.list("packs/");
  expect(packs.length).toBe(4);
  const repo = mkdtempSync(join(tmpdir(), "slivingdoc-cgit-"));
  try {
    expect(git(repo, "init", "-q", "--bare", "--initial-branch=main").code).toBe(0);
    for (const p of packs) {
      const bytes = (await world.store.get(p.key))!.body;
      const file = join(repo, "objects", "pack", `incoming-${packs.indexOf(p)}.pack`);
      writeFileSync(file, bytes);
      const indexed = git(repo, "index-pack", file);
      expect(indexed.err).toBe("");
      expect(indexed.code).toBe(0);
      const verified = git(repo, "verify-pack", "-v", file.replace(/\.pack$/, ".idx"));
      expect(verified.code).toBe(0);
      expect(verified.out).toContain(": ok");
    }
    const manifest = JSON.parse(new TextDecoder().decode((await world.store.get("current"))!.body));
    expect(git(repo, "update-ref", "refs/heads/main", manifest.head).code).toBe(0);
    const fsck = git(repo, "fsck", "--strict", "--no-dangling");
    expect(fsck.err).toBe("");
    expect(fsck.code).toBe(0);
    // Messages round-trip byte for byte (git log -z separates commits by NUL).
    const log = Bun.spawnSync(["git", "log", "-z", "--format=%B", "--reverse", "main"], { cwd: repo, stdout: "pipe" });
    const bodies = log.stdout.toString("utf8").split("\0").slice(0, 4);
    // %B adds a newline to a message that lacks one; compare what git stored instead.
    const raw = Bun.spawnSync(["git", "rev-list", "--reverse", "main"], { cwd: repo, stdout: "pipe" }).stdout.toString().trim().split("\n");
    const stored = raw.map((oid) => {
      const obj = Bun.spawnSync(["git", "cat-file", "commit", oid], { cwd: repo, stdout: "pipe" }).stdout;
      return obj.subarray(obj.indexOf("\n\n") + 2).toString("utf8");
    });
    expect(stored).toEqual(messages);
    expect(bodies.length).toBe(4);
    // The tree C git sees is the notebook.
    const files = git(repo, "ls-tree", "-r", "--name-only", "main").out.trim().split("\n");
    expect(files).toEqual(["a-b.md", "a/b.md", "b.md", "notes/one.md", "notes/two.md", "z/deep/er/file.md"]);
  } finally {
    rmSync(repo, { recursive: true, force: true });
  }
});
