/**
 * Flat trees for merge tests: text files written into an object cache as
 * blobs, and a tree read back as text, so a test states trees as plain
 * records.
 */
import type { FlatTree, ObjectCache } from "../../src/engine/git/object-cache.ts";
import { decodeText, encodeText } from "../../src/engine/merge/text.ts";

export function flatTrees(git: () => ObjectCache) {
  return {
    /** A flat tree of `files`, each written as a blob. */
    async tree(files: Record<string, string>): Promise<FlatTree> {
      const t: FlatTree = new Map();
      for (const [path, content] of Object.entries(files)) t.set(path, await git().writeBlob(encodeText(content)));
      return t;
    },
    /** Each file of `t` as text, by path. */
    async contents(t: FlatTree): Promise<Record<string, string>> {
      const out: Record<string, string> = {};
      for (const [path, oid] of [...t].sort()) out[path] = decodeText(await git().readBlob(oid))!;
      return out;
    },
  };
}
