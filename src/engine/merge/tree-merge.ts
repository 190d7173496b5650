/**
 * The three-tree merge (docs/decisions/0014-merging-as-git-merge-file.md) of
 * its three sides: the baseline (the checkout's), local (the visible files)
 * and accepted (the accepted state). Paths changed on one side take that
 * side; a file both sides changed is merged by its path's merge policy
 * (docs/decisions/0019-merge-policies.md), as the policy's entry in
 * policy.ts says: by its line merge (git's `git merge-file` by default,
 * with git's markers), or not at all: local's file stays and accepted's is
 * kept beside it as `name~accepted`, a PATH_CONFLICT.
 *
 * A file that one side deleted and the other changed is merged as text
 * against an empty side under every policy, so the conflict block shows the
 * surviving lines and nothing is dropped silently (git too reports a
 * modify/delete conflict whatever the attributes say). A
 * file-versus-directory clash keeps the directory and moves the file aside
 * (`name~local` or `name~accepted`).
 */
import type { ErrorFile } from "../../contract/errors.ts";
import type { FlatTree, ObjectCache } from "../git/object-cache.ts";
import { type MergePolicy, policyEntry, TEXT } from "./policy.ts";
import { isText } from "./text.ts";
import { policyOfTree } from "./tree-policy.ts";

export interface TreeMerge {
  result: FlatTree;
  conflicts: ErrorFile[];
}

/** Blob contents already in memory (the visible files just scanned), by id. */
export type KnownContents = Map<string, Uint8Array>;

const NOTHING = new Uint8Array(0);

async function contentOf(git: ObjectCache, oid: string | undefined, known: KnownContents): Promise<Uint8Array> {
  if (oid === undefined) return NOTHING;
  const bytes = known.get(oid) ?? (await git.readBlob(oid));
  // Accepted content was validated when it was committed; anything else is corrupt history.
  if (!isText(bytes)) throw new Error("stored blob is not UTF-8 text");
  return bytes;
}

/**
 * `policy`: each path's merge policy; by default the one the accepted
 * tree's `.gitattributes` give it (tree-policy.ts). `beside`: false where
 * only the merged paths themselves can be written (the remerge of one
 * visible file), so a policy that keeps the other side beside the file
 * line-merges it instead.
 */
export async function mergeTrees(
  git: ObjectCache,
  baseline: FlatTree,
  local: FlatTree,
  accepted: FlatTree,
  known: KnownContents = new Map(),
  policy?: (path: string) => MergePolicy,
  { beside = true }: { beside?: boolean } = {},
): Promise<TreeMerge> {
  // Nothing changed here since the baseline: the result is the accepted
  // state as it stands (a valid tree, so no clash to resolve either). The
  // common case of every pull, and of every commit when nothing changed.
  // (Trees are never changed once built, so the result may be that very map.)
  if (sameTree(local, baseline)) return { result: accepted, conflicts: [] };
  const result: FlatTree = new Map();
  const conflicts = new Map<string, ErrorFile>();
  const keptBeside = new Map<string, string>();
  const paths = new Set([...baseline.keys(), ...local.keys(), ...accepted.keys()]);
  for (const path of paths) {
    const b = baseline.get(path);
    const l = local.get(path);
    const a = accepted.get(path);
    let merged: string | undefined;
    if (l === a) merged = l;
    else if (l === b) merged = a;
    else if (a === b) merged = l;
    else {
      // Deleted against changed is a text merge under every policy (see above).
      const bothPresent = l !== undefined && a !== undefined;
      // Read only when a file both sides changed needs it: most merges have none.
      const how = policyEntry(bothPresent ? (policy ??= await policyOfTree(git, accepted))(path) : TEXT);
      if (how.onConflict === "beside" && beside && bothPresent) {
        merged = l;
        keptBeside.set(path, a);
      } else {
        const out = how.mergeText(await contentOf(git, b, known), await contentOf(git, l, known), await contentOf(git, a, known));
        if (out.conflicts.length > 0) {
          conflicts.set(path, { path, reason: "TEXT_CONFLICT", ranges: out.conflicts });
        }
        // A clean merge of a deletion with nothing left is a deletion.
        merged = out.bytes.length === 0 && !bothPresent && out.conflicts.length === 0 ? undefined : await git.writeBlob(out.bytes);
      }
    }
    if (merged !== undefined) result.set(path, merged);
  }
  resolveDirectoryClashes(result, local, accepted, conflicts);
  keepBeside(result, keptBeside, conflicts);
  const list = [...conflicts.values()].sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
  return { result, conflicts: list };
}

export function sameTree(a: FlatTree, b: FlatTree): boolean {
  if (a === b) return true;
  if (a.size !== b.size) return false;
  for (const [path, oid] of a) if (b.get(path) !== oid) return false;
  return true;
}

/**
 * A path cannot be a file and a directory at once. The directory wins, and
 * the file moves to `path~local` (the caller's) or `path~accepted` (the
 * accepted state's), so neither side's content is lost; the clash is reported as a
 * PATH_CONFLICT on the original path.
 */
function resolveDirectoryClashes(result: FlatTree, local: FlatTree, accepted: FlatTree, conflicts: Map<string, ErrorFile>): void {
  const dirs = directoriesOf(result);
  for (const path of [...result.keys()].sort()) {
    if (!dirs.has(path)) continue;
    const oid = result.get(path)!;
    result.delete(path);
    const side = accepted.get(path) === oid && local.get(path) !== oid ? "accepted" : "local";
    result.set(besideName(result, dirs, path, side), oid);
    conflicts.set(path, { path, reason: "PATH_CONFLICT", ranges: [] });
  }
}

/**
 * Files both sides changed whose policy keeps the other side beside them
 * ("beside" in policy.ts, as "binary" does): local's stays at
 * the path and accepted's goes beside it as `path~accepted`, named as a
 * directory clash names the file it moves, and reported the same way, as a
 * PATH_CONFLICT on the path.
 */
function keepBeside(result: FlatTree, accepted: Map<string, string>, conflicts: Map<string, ErrorFile>): void {
  if (accepted.size === 0) return;
  const dirs = directoriesOf(result);
  for (const [path, oid] of [...accepted].sort(([p], [q]) => (p < q ? -1 : p > q ? 1 : 0))) {
    result.set(besideName(result, dirs, path, "accepted"), oid);
    conflicts.set(path, { path, reason: "PATH_CONFLICT", ranges: [] });
  }
}

function directoriesOf(tree: FlatTree): Set<string> {
  const dirs = new Set<string>();
  for (const path of tree.keys()) {
    for (let i = path.indexOf("/"); i >= 0; i = path.indexOf("/", i + 1)) dirs.add(path.slice(0, i));
  }
  return dirs;
}

/* `path~side`, with one more `~` while that names a file or a directory already there. */
function besideName(result: FlatTree, dirs: Set<string>, path: string, side: "local" | "accepted"): string {
  let target = `${path}~${side}`;
  while (result.has(target) || dirs.has(target)) target += "~";
  return target;
}
