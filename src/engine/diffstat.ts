/** Per-file line counts between two trees, as `git diff --numstat` would count them. */
import type { FileStat } from "../contract/results.ts";
import type { FlatTree, ObjectCache } from "./git/object-cache.ts";
import { decodeText } from "./text.ts";
import { diffStat } from "./xdiff/index.ts";

/** Lines of a text file as git counts them: its newlines, plus an unterminated last line. */
export function lineCount(bytes: Uint8Array): number {
  const buf = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  let n = 0;
  for (let nl = buf.indexOf(10); nl >= 0; nl = buf.indexOf(10, nl + 1)) n++;
  return buf.length > 0 && buf[buf.length - 1] !== 10 ? n + 1 : n;
}

/**
 * `lines`: line counts of blobs already known (a pull counts the files it
 * writes), so a file added on one side is not read back just to count them.
 */
export async function treeDiffStat(git: ObjectCache, from: FlatTree, to: FlatTree, lines: Map<string, number> = new Map()): Promise<FileStat[]> {
  const read = async (oid: string | undefined) => (oid === undefined ? "" : (decodeText(await git.readBlob(oid)) ?? ""));
  const stats: FileStat[] = [];
  // Only the paths that differ, sorted: most calls change a few files of many.
  const paths: string[] = [];
  for (const [path, oid] of from) if (to.get(path) !== oid) paths.push(path);
  for (const path of to.keys()) if (!from.has(path)) paths.push(path);
  paths.sort();
  for (const path of paths) {
    const a = from.get(path);
    const b = to.get(path);
    const added = a === undefined && b !== undefined ? lines.get(b) : undefined;
    if (added !== undefined) {
      stats.push({ path, insertions: added, deletions: 0 });
      continue;
    }
    const { insertions, deletions } = diffStat(await read(a), await read(b));
    stats.push({ path, insertions, deletions });
  }
  return stats;
}
