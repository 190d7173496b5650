/**
 * A notebook tree as the object cache reads and builds it: flat (every file
 * by its slash path), with the ids of the git tree objects it is made of,
 * and how the object cache builds those trees from a flat one.
 */
import { encodeTree, type TreeEntry } from "./objects.ts";

/** Notebook-relative slash path → blob id. */
export type FlatTree = Map<string, string>;

export interface BuiltTree {
  tree: string;
  /** Every tree object id of the tree, root included. */
  trees: Set<string>;
  /** The tree id of each directory by its prefix ("" for the root, "a/b/" below). */
  dirs: Map<string, string>;
}

export interface ReadTree extends BuiltTree {
  files: FlatTree;
}

/** A directory of a flat tree, as buildTrees builds it bottom-up. */
interface Dir {
  prefix: string;
  files: Map<string, string>;
  dirs: Map<string, Dir>;
}

function directories(files: FlatTree): Dir {
  const root: Dir = { prefix: "", files: new Map(), dirs: new Map() };
  for (const [path, oid] of files) {
    const parts = path.split("/");
    let dir = root;
    for (let i = 0; i < parts.length - 1; i++) {
      const part = parts[i]!;
      let next = dir.dirs.get(part);
      if (!next) {
        next = { prefix: `${dir.prefix}${part}/`, files: new Map(), dirs: new Map() };
        dir.dirs.set(part, next);
      }
      dir = next;
    }
    dir.files.set(parts[parts.length - 1]!, oid);
  }
  return root;
}

/** The directories on the path of any difference from the base ("" always). */
function changedDirectories(files: FlatTree, base: ReadTree | undefined): Set<string> {
  const changed = new Set<string>([""]);
  const touch = (path: string) => {
    for (let i = path.indexOf("/"); i >= 0; i = path.indexOf("/", i + 1)) changed.add(path.slice(0, i + 1));
  };
  if (base) {
    for (const [path, oid] of files) if (base.files.get(path) !== oid) touch(path);
    for (const path of base.files.keys()) if (!files.has(path)) touch(path);
  }
  return changed;
}

/**
 * The git trees of a flat notebook tree, bottom-up, each tree object handed
 * to `keep` (which stores it and returns its id). With `base` (a tree read
 * or built before), a directory in which no path differs from it keeps its
 * tree id and is not built again: a commit of one file rebuilds only the
 * directories on its path.
 */
export function buildTrees(files: FlatTree, base: ReadTree | undefined, keep: (content: Buffer) => string): BuiltTree {
  const changed = changedDirectories(files, base);
  const trees = new Set<string>();
  const dirs = new Map<string, string>();
  const build = (dir: Dir): string => {
    const kept = base && !changed.has(dir.prefix) ? base.dirs.get(dir.prefix) : undefined;
    if (kept !== undefined) {
      // Unchanged: the base's subtree, and its own subtrees, as they are.
      for (const [prefix, oid] of base!.dirs) {
        if (prefix.startsWith(dir.prefix)) {
          dirs.set(prefix, oid);
          trees.add(oid);
        }
      }
      return kept;
    }
    const entries: TreeEntry[] = [];
    for (const [name, oid] of dir.files) entries.push({ name, isTree: false, oid });
    for (const [name, sub] of dir.dirs) entries.push({ name, isTree: true, oid: build(sub) });
    const oid = keep(encodeTree(entries));
    trees.add(oid);
    dirs.set(dir.prefix, oid);
    return oid;
  };
  return { tree: build(directories(files)), trees, dirs };
}
