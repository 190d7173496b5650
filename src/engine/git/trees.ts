/**
 * A notebook tree as the object cache reads and builds it: flat (every file
 * by its slash path), with the ids of the git tree objects it is made of.
 */

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
