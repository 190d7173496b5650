/**
 * What changed between two notebook trees, the one place that decides it:
 * - `diffTrees` walks two git trees at once and skips every subtree whose id
 *   is the same on both sides, so a publication that changed one file of ten
 *   thousand reads the trees on that file's path only (log, show). Paths
 *   come out in git's order (the bytes of the full path), as `git diff`
 *   lists them.
 * - `diffFlatTrees` compares two trees already flattened into path → blob
 *   maps (the baseline and a scan: status and diff; the diffstat of pull,
 *   commit and restore).
 */
import { isAtOrBelowEntry } from "../../contract/path-sets.ts";
import type { FlatTree, ObjectCache } from "../git/object-cache.ts";
import { decodeTree, FILE_MODE, MissingObjectError, TREE_MODE } from "../git/objects.ts";

export type ChangeStatus = "added" | "modified" | "deleted";

export interface TreeChange {
  path: string;
  status: ChangeStatus;
  /** The blob before; null when added. */
  before: string | null;
  /** The blob after; null when deleted. */
  after: string | null;
}

function statusOf(before: string | null, after: string | null): ChangeStatus {
  return before === null ? "added" : after === null ? "deleted" : "modified";
}

/**
 * The files that differ between two flat trees, sorted by path (UTF-16 code
 * units, as the pull and commit summaries always listed them).
 */
export function diffFlatTrees(from: FlatTree, to: FlatTree): TreeChange[] {
  const paths: string[] = [];
  for (const [path, oid] of from) if (to.get(path) !== oid) paths.push(path);
  for (const path of to.keys()) if (!from.has(path)) paths.push(path);
  return paths.sort().map((path) => {
    const before = from.get(path) ?? null;
    const after = to.get(path) ?? null;
    return { path, status: statusOf(before, after), before, after };
  });
}

async function entries(git: ObjectCache, tree: string | null): Promise<Map<string, { oid: string; isTree: boolean }>> {
  const out = new Map<string, { oid: string; isTree: boolean }>();
  if (tree === null) return out;
  const object = await git.find(tree);
  if (object === null || object.type !== "tree") throw new MissingObjectError(`tree ${tree} missing`);
  for (const e of decodeTree(object.object)) {
    if (e.mode !== TREE_MODE && e.mode !== FILE_MODE) throw new MissingObjectError("unexpected tree entry mode");
    out.set(e.name, { oid: e.oid, isTree: e.mode === TREE_MODE });
  }
  return out;
}

/**
 * The files that differ between tree `from` and tree `to` (either null: the
 * empty notebook), sorted by the bytes of their paths. `filter`, when given,
 * keeps only paths it accepts; it is also asked about directory prefixes
 * ("a/b/") and a false answer skips the directory.
 */
export async function diffTrees(
  git: ObjectCache,
  from: string | null,
  to: string | null,
  filter?: { file(path: string): boolean; dir(prefix: string): boolean },
): Promise<TreeChange[]> {
  const changes: TreeChange[] = [];
  const walk = async (a: string | null, b: string | null, prefix: string): Promise<void> => {
    if (a === b) return;
    if (prefix !== "" && filter && !filter.dir(prefix)) return;
    const [left, right] = await Promise.all([entries(git, a), entries(git, b)]);
    for (const name of new Set([...left.keys(), ...right.keys()])) {
      const l = left.get(name);
      const r = right.get(name);
      if (l && r && l.oid === r.oid && l.isTree === r.isTree) continue;
      // A file on one side and a directory on the other: a deletion and an addition.
      if (l?.isTree || r?.isTree) await walk(l?.isTree ? l.oid : null, r?.isTree ? r.oid : null, `${prefix}${name}/`);
      const lf = l && !l.isTree ? l.oid : null;
      const rf = r && !r.isTree ? r.oid : null;
      if (lf === rf) continue;
      const path = prefix + name;
      if (filter && !filter.file(path)) continue;
      changes.push({ path, status: statusOf(lf, rf), before: lf, after: rf });
    }
  };
  await walk(from, to, "");
  return changes.sort((x, y) => Buffer.compare(Buffer.from(x.path), Buffer.from(y.path)));
}

/** A filter for `diffTrees` keeping the paths at or below any of `paths` (notebook-relative, normalised). */
export function pathFilter(paths: readonly string[]): { file(path: string): boolean; dir(prefix: string): boolean } | undefined {
  if (paths.length === 0) return undefined;
  return {
    file: (path) => paths.some((p) => isAtOrBelowEntry(p, path)),
    // A directory matters when it is below an entry, or an entry is below it.
    dir: (prefix) => paths.some((p) => prefix.startsWith(`${p}/`) || `${p}/`.startsWith(prefix)),
  };
}
