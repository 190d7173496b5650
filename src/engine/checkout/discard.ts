/**
 * Whether a checkout may be thrown away, and throwing it away: for `serve`'s
 * session directory, made fresh for each server
 * (docs/decisions/0004-checkouts-and-the-private-root.md), which would
 * otherwise pile up, with its private state, for every server ever started.
 *
 * A checkout may go only when nothing unpublished can be in it: its visible
 * directory is empty, and either it was never pulled or its baseline has no
 * files either. An empty directory over a baseline with files holds the
 * deletion of every file — unpublished work that must stay where the next
 * commit from that directory can publish it. An interrupted operation
 * (a journal, or a publication not yet settled) or one still running (its
 * lock) also keeps it.
 */
import { createHash } from "../git/hash.ts";
import { existsSync, readdirSync, readFileSync, rmdirSync, rmSync } from "node:fs";
import { isDirectoryMark } from "./directory-identity.ts";
import { join } from "node:path";
import type { RandomSource } from "../../contract/clock.ts";
import { checkoutStateDir, forgetCheckoutState } from "./registry.ts";

/** git's id of the empty tree: the baseline of a notebook whose every file was deleted and published. */
const EMPTY_TREE = createHash("sha1").update("tree 0\0").digest("hex");

export interface DiscardTarget {
  privateRoot: string;
  storeId: string;
  /** The checkout's real path. */
  dir: string;
  /** Names the state's temporary name on its way out (EngineDeps.randomId). */
  randomId: RandomSource["randomId"];
}

/** Empty but for the directory's mark (directory-identity.ts), which is slivingdoc's. */
function isEmptyDir(dir: string): boolean {
  try {
    return readdirSync(dir).every(isDirectoryMark);
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === "ENOENT";
  }
}

/**
 * Whether a state file may stand for something unpublished: a baseline with
 * files, or a publication in flight not yet settled (publication.ts); true
 * when it cannot be read, so such a checkout is kept.
 */
function stateHoldsWork(stateFile: string): boolean {
  let raw: unknown;
  try {
    raw = JSON.parse(readFileSync(stateFile, "utf8"));
  } catch (e) {
    return (e as NodeJS.ErrnoException).code !== "ENOENT";
  }
  const state = raw as { baseline?: { tree?: unknown }; publishing?: unknown } | null;
  if (state?.publishing !== undefined) return true;
  const tree = state?.baseline?.tree;
  if (tree === null) return false;
  return tree !== EMPTY_TREE;
}

/**
 * Remove the checkout at `dir` (the directory itself) and its private state,
 * if it holds nothing unpublished (see above). Returns whether it did; a
 * checkout it keeps is left exactly as it was.
 */
export function discardIfNothingUnpublished(target: DiscardTarget): boolean {
  const stateDir = checkoutStateDir(target.privateRoot, target.storeId, target.dir);
  if (!isEmptyDir(target.dir)) return false;
  if (existsSync(join(stateDir, "journal.json")) || existsSync(join(stateDir, "lock"))) return false;
  if (stateHoldsWork(join(stateDir, "state.json"))) return false;
  // The directory first, and only while empty: a file written into it meanwhile keeps both.
  try {
    for (const name of readdirSync(target.dir).filter(isDirectoryMark)) rmSync(join(target.dir, name), { force: true });
    rmdirSync(target.dir);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== "ENOENT") return false;
  }
  // The state as the registry removes a gone checkout's: renamed aside first, so it is never read half-removed.
  forgetCheckoutState(target.privateRoot, target.storeId, target.dir, target.randomId);
  return true;
}
