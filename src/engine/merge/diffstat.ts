/** Per-file line counts between two trees, as `git diff --numstat` would count them. */
import type { FileStat } from "../../contract/results.ts";
import type { FlatTree, ObjectCache } from "../git/object-cache.ts";
import { droppedBytes } from "../memory/garbage.ts";
import { diffFlatTrees } from "./tree-diff.ts";
import { diffStat } from "./xdiff/index.ts";

/** Lines of a text file as git counts them: its newlines, plus an unterminated last line. */
export function lineCount(bytes: Uint8Array): number {
  const buf = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  let n = 0;
  for (let nl = buf.indexOf(10); nl >= 0; nl = buf.indexOf(10, nl + 1)) n++;
  return buf.length > 0 && buf[buf.length - 1] !== 10 ? n + 1 : n;
}

const NOTHING = new Uint8Array(0);

/**
 * `lines`: line counts of blobs already known (a pull counts the files it
 * writes), so a file added on one side is not read back just to count them.
 */
export async function treeDiffStat(git: ObjectCache, from: FlatTree, to: FlatTree, lines: Map<string, number> = new Map()): Promise<FileStat[]> {
  const read = async (oid: string | null) => (oid === null ? NOTHING : await git.readBlob(oid));
  const stats: FileStat[] = [];
  // Only the paths that differ: most calls change a few files of many.
  for (const { path, before, after } of diffFlatTrees(from, to)) {
    const added = before === null && after !== null ? lines.get(after) : undefined;
    if (added !== undefined) {
      stats.push({ path, insertions: added, deletions: 0 });
      continue;
    }
    const [old, now] = [await read(before), await read(after)];
    const { insertions, deletions } = diffStat(old, now);
    stats.push({ path, insertions, deletions });
    // Both sides were read to be counted alone.
    droppedBytes(old.byteLength + now.byteLength);
  }
  return stats;
}
