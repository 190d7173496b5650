/**
 * A pack put in the cache is indexed by the process's reader only at its
 * next read (git/pack-reader.ts). Damaged before that read, its index does
 * not parse: the reader must count that as a change of the packs, so the
 * trees the process remembers from the call that wrote them are forgotten
 * and the damage is found, not built on.
 */
import { afterAll, expect, test } from "bun:test";
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ObjectCache } from "../../src/engine/git/object-cache.ts";
import { MissingObjectError } from "../../src/engine/git/objects.ts";
import { ProcessMemory } from "../../src/engine/process-memory.ts";
import { SYSTEM_RANDOM } from "../../src/surfaces/engine-deps.ts";

const root = mkdtempSync(join(tmpdir(), "slivingdoc-damaged-pack-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));

test("trees remembered from a pack damaged before the reader indexed it are forgotten, and the damage is found", async () => {
  const gitdir = join(root, "cache");
  const memory = new ProcessMemory(SYSTEM_RANDOM).objects;
  const writer = await ObjectCache.open(gitdir, memory, SYSTEM_RANDOM.randomId);
  const { tree, trees } = await writer.writeFlatTree(new Map([["a.md", await writer.writeBlob(Buffer.from("a\n"))]]));
  const { pack, idx } = await writer.packObjects([...trees]);
  await writer.importPack("mine", pack, idx);
  // Written and imported, never read: the reader has not indexed this pack.
  writer.close();
  const packDir = join(gitdir, "objects", "pack");
  for (const name of readdirSync(packDir)) writeFileSync(join(packDir, name), "garbage");
  const after = await ObjectCache.open(gitdir, memory, SYSTEM_RANDOM.randomId);
  expect(after.readFlatTree(tree)).rejects.toBeInstanceOf(MissingObjectError);
  after.close();
});
