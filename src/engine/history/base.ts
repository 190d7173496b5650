/**
 * The base a checkout without its private state merges against: the
 * retained generation its visible files agree with most. A copy (`cp -r`),
 * a lost container volume or a damaged state leaves files that were pulled
 * or committed at some generation, plus the agent's edits; merged against
 * nothing, every one of them that differs from the notebook would be a
 * conflict. Merged against that generation, a file only one side changed
 * takes that side, as it would have with the state.
 *
 * One generation for the whole checkout, not the best one per file: a
 * checkout is at one generation, and mixing them could take a file another
 * publication changed for one this checkout never saw.
 */
import type { FlatTree, ObjectCache } from "../git/object-cache.ts";
import { MissingObjectError } from "../git/objects.ts";
import type { History } from "./read.ts";

/** A retained generation as a checkout's base: its files at the paths the checkout holds, and how many of them match exactly. */
export interface RetainedBase {
  generation: number;
  /** The generation's files at the paths `local` holds (the rest are left out: see closestGeneration). */
  files: FlatTree;
  /** How many of `local`'s files hold exactly what the generation holds at their path. */
  matched: number;
}

/**
 * The retained generation in which the most of `local`'s files are exactly
 * as they are here (the newest on a tie: the later state the files could be
 * at), or null when no file matches any. Its files are given only at the
 * paths `local` holds: a file missing here may be a deletion or a file never
 * pulled, and no state is left to tell them apart, so the merge must see it
 * as never pulled and bring it back, never publish it as deleted.
 */
export async function closestGeneration(history: History, local: FlatTree): Promise<RetainedBase | null> {
  let best: { generation: number; tree: FlatTree; matched: number } | null = null;
  for (const publication of history.publications) {
    const tree = await generationFiles(history.git, publication.tree);
    if (tree === null) continue;
    let matched = 0;
    for (const [path, oid] of local) if (tree.get(path) === oid) matched++;
    if (matched > (best?.matched ?? 0)) best = { generation: publication.generation, tree, matched };
  }
  if (best === null) return null;
  const files: FlatTree = new Map();
  for (const path of local.keys()) {
    const oid = best.tree.get(path);
    if (oid !== undefined) files.set(path, oid);
  }
  return { generation: best.generation, files, matched: best.matched };
}

/** A generation's files, or null when the history cache cannot produce its tree: that generation is no candidate, the others still are. */
async function generationFiles(git: ObjectCache, tree: string): Promise<FlatTree | null> {
  try {
    return (await git.readFlatTree(tree)).files;
  } catch (e) {
    if (e instanceof MissingObjectError) return null;
    throw e;
  }
}
