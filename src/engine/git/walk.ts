/**
 * Walking a git tree: the one place that descends through subtrees, for
 * reading a notebook tree (object-cache.ts) and for collecting what a
 * compaction must keep (compact.ts).
 */
import { decodeTree, type GitObject, MissingObjectError, TREE_MODE } from "./objects.ts";

export interface TreeVisitor {
  /** A tree about to be read, at `prefix` ("" for the root, "a/b/" below); false skips it and its subtrees. */
  tree(oid: string, prefix: string): boolean;
  /** An entry that is not a tree, by its full slash path. */
  entry(path: string, oid: string, mode: string): void;
}

/**
 * Visit `root` and everything below it, depth first in tree order. `read`
 * returns null for an absent object; an absent or malformed tree throws
 * MissingObjectError.
 */
export async function walkTree(read: (oid: string) => Promise<GitObject | null>, root: string, visit: TreeVisitor): Promise<void> {
  const walk = async (oid: string, prefix: string): Promise<void> => {
    if (!visit.tree(oid, prefix)) return;
    const tree = await read(oid);
    if (tree === null || tree.type !== "tree") throw new MissingObjectError(`tree ${oid} missing or not a tree`);
    for (const e of decodeTree(tree.object)) {
      if (e.mode === TREE_MODE) await walk(e.oid, `${prefix}${e.name}/`);
      else visit.entry(prefix + e.name, e.oid, e.mode);
    }
  };
  await walk(root, "");
}
