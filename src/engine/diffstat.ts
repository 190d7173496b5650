/** Per-file line counts between two trees, as `git diff --numstat` would count them. */
import type { FileStat } from "../contract/results.ts";
import type { FlatTree, GitStore } from "./git-store.ts";
import { decodeText } from "./text.ts";
import { diffStat } from "./xdiff/index.ts";

export async function treeDiffStat(git: GitStore, from: FlatTree, to: FlatTree): Promise<FileStat[]> {
  const read = async (oid: string | undefined) => (oid === undefined ? "" : (decodeText(await git.readBlob(oid)) ?? ""));
  const stats: FileStat[] = [];
  const paths = [...new Set([...from.keys(), ...to.keys()])].sort();
  for (const path of paths) {
    const a = from.get(path);
    const b = to.get(path);
    if (a === b) continue;
    const { insertions, deletions } = diffStat(await read(a), await read(b));
    stats.push({ path, insertions, deletions });
  }
  return stats;
}
