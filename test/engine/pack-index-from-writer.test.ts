/**
 * A pack made here comes with its index, made from what the writer knew of
 * each entry as it wrote it (git/pack-file.ts): its id, offset and CRC-32.
 * The cache imports our own packs with that index instead of inflating
 * every entry again. It must be the index C git makes from the same pack,
 * byte for byte — for every source an entry is packed from (a blob this
 * call wrote, a loose object, an entry copied from a cached pack, a tree or
 * commit built in memory) and for every part of a split publication, each
 * with its nonce — and for a compaction's base, imported here with the
 * index made as it was written (publish/compact.ts).
 */
import { afterAll, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ObjectCache } from "../../src/engine/git/object-cache.ts";
import { compactPacks } from "../../src/engine/publish/compact.ts";
import { packDescriptor } from "../../src/engine/publish/manifest.ts";
import { openSqliteStore } from "../../src/store/sqlite.ts";
import { SYSTEM_CLOCK } from "../../src/surfaces/system-clock.ts";
import type { WrittenPack } from "../../src/engine/git/pack-file.ts";
import { ProcessMemory } from "../../src/engine/process-memory.ts";
import { SYSTEM_RANDOM } from "../../src/surfaces/engine-deps.ts";
import { git } from "../support/cgit.ts";
import { mulberry32 } from "../support/seeded.ts";

const root = mkdtempSync(join(tmpdir(), "slivingdoc-pack-index-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));

const open = (dir: string) => ObjectCache.open(dir, new ProcessMemory(SYSTEM_RANDOM).objects, SYSTEM_RANDOM.randomId);

function note(seed: number, bytes: number): Buffer {
  const rand = mulberry32(seed);
  let s = "";
  while (s.length < bytes) s += `${Math.floor(rand() * 2 ** 40).toString(36)}${rand() < 0.1 ? "\n" : " "}`;
  return Buffer.from(`${s.slice(0, bytes - 1)}\n`);
}

/** The index C git's `index-pack` makes of `pack`, in a bare repository of its own. */
function cGitIndex(name: string, pack: Uint8Array): Buffer {
  const repo = join(root, `repo-${name}`);
  expect(git(root, "init", "-q", "--bare", repo).code).toBe(0);
  const file = join(repo, "objects", "pack", "in.pack");
  writeFileSync(file, pack);
  const indexed = git(repo, "index-pack", file);
  expect(indexed.code).toBe(0);
  expect(git(repo, "verify-pack", file.replace(/\.pack$/, ".idx")).code).toBe(0);
  return readFileSync(file.replace(/\.pack$/, ".idx"));
}

test("every pack and part packObjects makes comes with the index C git makes of it", async () => {
  // Blobs in a pack of an earlier cache, imported here: packed again by copying their entries.
  const earlier = await open(join(root, "earlier"));
  const fromPack = await Promise.all(Array.from({ length: 12 }, (_, i) => earlier.writeBlob(note(i, 3000 + i * 97))));
  const { pack: old } = await earlier.packObjects(fromPack);
  earlier.close();

  const gitdir = join(root, "cache");
  mkdirSync(gitdir, { recursive: true });
  const cache = await open(gitdir);
  await cache.importPack("earlier", old);
  // Loose objects of a call before this one (a fresh open does not hold them).
  const loose = await Promise.all(Array.from({ length: 12 }, (_, i) => cache.writeBlob(note(100 + i, 2000 + i * 131))));
  cache.close();
  const now = await open(gitdir);
  // Blobs this call writes, and a tree and commit built in memory.
  const written = await Promise.all(Array.from({ length: 12 }, (_, i) => now.writeBlob(note(200 + i, 4000 + i * 53))));
  const files = new Map([...fromPack, ...loose, ...written].map((oid, i) => [`d${i % 4}/f${i}.md`, oid]));
  const { tree, trees } = await now.writeFlatTree(files);
  const head = await now.writeCommit({ tree, parent: null, message: "m", when: new Date(0), agent: "a", base: 0 });

  const blobs = [...written, ...loose, ...fromPack];
  const parts: WrittenPack[] = [];
  // Parts of about 10 KB: several of them, each closed by its nonce.
  const last = await now.packObjects([...blobs, ...trees, head], { leading: blobs.length, bytes: 10_000, part: async (p) => void parts.push(p) });
  expect(parts.length).toBeGreaterThan(3);
  for (const [i, p] of [...parts, last].entries()) expect(Buffer.compare(cGitIndex(`p${i}`, p.pack), p.idx!)).toBe(0);
  // Imported with its writer's index, the last pack reads back: the commit, and every file of its tree.
  await now.importPack("last", last.pack, last.idx);
  for (const [i, p] of parts.entries()) await now.importPack(`part-${i}`, p.pack, p.idx);
  now.close();
  const fresh = await open(gitdir);
  const back = await fresh.readFlatTree(await fresh.commitTree(head));
  expect([...back.files].sort()).toEqual([...files].sort());
  fresh.close();
});

test("a compaction's base is imported with the index C git makes of it, and reads back", async () => {
  const gitdir = join(root, "compacting");
  mkdirSync(gitdir, { recursive: true });
  const store = openSqliteStore(join(root, "compacting.db"), SYSTEM_CLOCK);
  const cache = await open(gitdir);
  try {
    // Two publications, each a pack imported as a commit's is: the second changes half the files.
    const packs = [];
    let parent: string | null = null;
    let files = new Map<string, string>();
    for (let c = 0; c < 2; c++) {
      const blobs = await Promise.all(Array.from({ length: 8 }, (_, i) => cache.writeBlob(note(300 + c * 10 + i, 1500 + i * 71))));
      files = new Map([...files, ...blobs.filter((_, i) => c === 0 || i % 2 === 0).map((oid, i) => [`n/${i}.md`, oid] as [string, string])]);
      const { tree, trees } = await cache.writeFlatTree(files);
      const head: string = await cache.writeCommit({ tree, parent, message: `c${c}`, when: new Date(c * 1000), agent: "a", base: c });
      const { pack, idx } = await cache.packObjects([...new Set(files.values()), ...trees, head]);
      const d = packDescriptor(pack);
      await cache.importPack(d.sha256, pack, idx);
      packs.push(d);
      parent = head;
    }
    const compacted = await compactPacks({ store, git: cache, head: parent!, packs, policy: { maxPacks: 1, keepRecent: 0, history: "all", periodMs: 0 }, now: new Date(), randomId: SYSTEM_RANDOM.randomId });
    const base = compacted!.base!;
    const bytes = (await store.get(base.key))!.body;
    const imported = readFileSync(join(gitdir, "objects", "pack", `pack-${base.sha256}.idx`));
    expect(Buffer.compare(cGitIndex("base", bytes), imported)).toBe(0);
    cache.close();
    const fresh = await open(gitdir);
    expect([...(await fresh.readFlatTree(await fresh.commitTree(parent!))).files].sort()).toEqual([...files].sort());
    fresh.close();
  } finally {
    await store.close();
  }
});
