/**
 * Building a commit's trees from the accepted tree (only the directories on
 * the path of a change are built again) must give exactly the trees a full
 * build gives — ids, every subtree id, every directory — whatever changed:
 * files added, removed, edited, directories appearing, emptying, nesting,
 * and names that sort around "/" (`a`, `a.b`, `a-b`, `a/`).
 */
import { afterAll, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type FlatTree, ObjectCache } from "../../src/engine/git/object-cache.ts";
import { ProcessMemory } from "../../src/engine/process-memory.ts";
import { mulberry32 } from "../support/seeded.ts";
import { SYSTEM_RANDOM } from "../../src/surfaces/engine-deps.ts";

const SEED = Number(process.env.TREE_SEED ?? 0x7ee5);
const root = mkdtempSync(join(tmpdir(), "slivingdoc-trees-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));

const NAMES = ["a", "a.b", "a-b", "b", "notes.md", "x", "日本"];

function randomTree(rnd: () => number, size: number): FlatTree {
  const files: FlatTree = new Map();
  const pick = () => NAMES[Math.floor(rnd() * NAMES.length)]!;
  while (files.size < size) {
    const depth = Math.floor(rnd() * 3);
    const path = [...Array.from({ length: depth }, pick), `${pick()}.txt`].join("/");
    files.set(path, Math.floor(rnd() * 0xffffffff).toString(16).padStart(40, "0"));
  }
  return files;
}

/** A few edits of every kind to `base`: still a valid tree (no path is both a file and a directory). */
function mutate(rnd: () => number, base: FlatTree): FlatTree {
  const next = new Map(base);
  const paths = [...base.keys()];
  for (let k = 1 + Math.floor(rnd() * 4); k > 0; k--) {
    const op = Math.floor(rnd() * 3);
    const path = paths[Math.floor(rnd() * paths.length)]!;
    if (op === 0) next.delete(path);
    else if (op === 1) next.set(path, "e".repeat(40));
    else for (const [p, oid] of randomTree(rnd, 2)) next.set(p, oid);
  }
  return next;
}

test(`an incremental build equals a full build (seed ${SEED})`, async () => {
  const git = await ObjectCache.open(join(root, "git"), new ProcessMemory(SYSTEM_RANDOM).objects, SYSTEM_RANDOM.randomId);
  const rnd = mulberry32(SEED);
  for (let round = 0; round < 200; round++) {
    const before = randomTree(rnd, 1 + Math.floor(rnd() * 30));
    const after = mutate(rnd, before);
    const base = await git.writeFlatTree(before);
    const full = await git.writeFlatTree(after);
    const incremental = await git.writeFlatTree(after, { ...base, files: before });
    expect({ round, tree: incremental.tree }).toEqual({ round, tree: full.tree });
    expect([...incremental.dirs].sort()).toEqual([...full.dirs].sort());
    expect([...incremental.trees].sort()).toEqual([...full.trees].sort());
  }
  git.close();
});
