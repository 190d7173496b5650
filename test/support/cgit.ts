/**
 * C git as the judge of what we publish: every pack in a store is indexed
 * and verified by `git index-pack` / `git verify-pack`, the accepted head
 * becomes `main` of a bare repository, and `git fsck --strict` must pass.
 */
import { expect } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { MANIFEST_KEY, type Manifest, parseManifest } from "../../src/engine/publish/manifest.ts";
import type { ObjectStore } from "../../src/store/object-store.ts";

export function git(cwd: string, ...args: string[]): { code: number; out: string; err: string } {
  const p = Bun.spawnSync(["git", ...args], { cwd, stdout: "pipe", stderr: "pipe" });
  return { code: p.exitCode, out: p.stdout.toString(), err: p.stderr.toString() };
}

export interface VerifiedRepo {
  repo: string;
  packs: number;
  manifest: Manifest;
}

/** Verify every pack of `store` with C git, then hand the repository to `inspect` for more checks. */
export async function withPacksInGit<T>(store: ObjectStore, inspect: (r: VerifiedRepo) => T | Promise<T>): Promise<T> {
  const packs = await store.list("packs/");
  expect(packs.length).toBeGreaterThan(0);
  const repo = mkdtempSync(join(tmpdir(), "slivingdoc-cgit-"));
  try {
    expect(git(repo, "init", "-q", "--bare", "--initial-branch=main").code).toBe(0);
    for (const [i, p] of packs.entries()) {
      const file = join(repo, "objects", "pack", `incoming-${i}.pack`);
      writeFileSync(file, (await store.get(p.key))!.body);
      const indexed = git(repo, "index-pack", file);
      expect(indexed.err).toBe("");
      expect(indexed.code).toBe(0);
      const verified = git(repo, "verify-pack", "-v", file.replace(/\.pack$/, ".idx"));
      expect(verified.code).toBe(0);
      expect(verified.out).toContain(": ok");
    }
    const manifest = parseManifest((await store.get(MANIFEST_KEY))!.body);
    expect(git(repo, "update-ref", "refs/heads/main", manifest.head).code).toBe(0);
    const fsck = git(repo, "fsck", "--strict", "--no-dangling");
    expect(fsck.err).toBe("");
    expect(fsck.code).toBe(0);
    return await inspect({ repo, packs: packs.length, manifest });
  } finally {
    rmSync(repo, { recursive: true, force: true });
  }
}
