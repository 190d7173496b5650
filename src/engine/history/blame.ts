/**
 * `slivingdoc blame PATH`: for each line of a notebook file at a retained
 * generation, the publication that last wrote it (docs/history.md), as
 * `git blame` finds it. Walking back through the publications from that
 * generation, each version of the file is diffed against its parent's with
 * git's line diff (merge/xdiff): a line the parent already had inherits the
 * parent's attribution, a line it did not have is the publication's own.
 *
 * The walk ends at the first publication, or at the oldest retained one,
 * whose parent the store no longer holds (after compaction): a line that
 * reaches it may have been written by it or by any publication before, so
 * it is older than the retained history — never a guessed publication.
 *
 * A path is followed as named: a file renamed in a publication is new there.
 */
import { countLines, keptLines } from "../merge/xdiff/index.ts";
import { type History, type HistoryDeps, historyPath, notAFile, type Publication, publicationAt, readGenerationTree, readHistoryBlob, withHistory } from "./read.ts";

export interface BlameLine {
  /** One-based. */
  line: number;
  /** The line's text, without its "\n" (invalid UTF-8 decoded as U+FFFD). */
  text: string;
  /** The publication that last wrote the line; all four null when that is older than the retained history. */
  generation: number | null;
  agent: string | null;
  time: string | null;
  /** The first line of its message. */
  message: string | null;
}

export interface BlameResult {
  path: string;
  generation: number;
  /** The oldest generation retained: a line older than the history was written by it or before it. */
  oldestRetained: number;
  lines: BlameLine[];
}

export interface BlameInput {
  /** A notebook path, relative to the notebook directory. */
  path: string;
  /** The generation whose version is blamed; the accepted one when absent. */
  generation?: number;
}

/** `slivingdoc blame`: who last wrote each line of a notebook file, within the retained history. */
export async function historyBlame(deps: HistoryDeps, input: BlameInput): Promise<BlameResult> {
  return withHistory(deps, (history) => blameOf(history, input));
}

/** One version of the file: its blob id and bytes. */
interface Version {
  oid: string;
  bytes: Uint8Array;
}

/** Blame in an opened history (historyBlame opens one for a call). */
export async function blameOf(history: History, input: BlameInput): Promise<BlameResult> {
  const generation = input.generation ?? history.manifest?.generation ?? 0;
  // A generation not retained is refused as show refuses it.
  const publication = publicationAt(history, generation);
  const path = historyPath(input.path);
  const oid = path === "" ? undefined : (await readGenerationTree(history, generation)).get(path);
  if (oid === undefined) throw notAFile(input.path, generation);
  const version = { oid, bytes: await readHistoryBlob(history, oid) };
  const owners = await lastWriters(history, publication, path, version);
  const texts = new TextDecoder().decode(version.bytes).split("\n");
  return {
    path,
    generation,
    oldestRetained: history.publications[history.publications.length - 1]!.generation,
    lines: owners.map((p, i) => ({
      line: i + 1,
      text: texts[i]!,
      generation: p?.generation ?? null,
      agent: p?.agent ?? null,
      time: p?.time ?? null,
      message: p === null ? null : p.message.replace(/^\n+/, "").split("\n")[0]!,
    })),
  };
}

/**
 * The publication that last wrote each line of `version`, the file at
 * `from`; null for a line older than the retained history. `pending[k]` is
 * the line of `version` that line k of the version at hand is (-1: none),
 * as git blame passes blame from a commit to its parent.
 */
async function lastWriters(history: History, from: Publication, path: string, version: Version): Promise<(Publication | null)[]> {
  const owners: (Publication | null)[] = new Array(countLines(version.bytes)).fill(null);
  let pending = Int32Array.from(owners, (_, i) => i);
  let left = owners.length;
  let current = version;
  for (let index = history.publications.indexOf(from); left > 0; index++) {
    const p = history.publications[index]!;
    const parent = history.publications[index + 1];
    // Past the oldest retained publication, the lines left stay null: older than the history.
    if (p.parent !== null && parent === undefined) break;
    const parentOid = parent === undefined ? undefined : (await readGenerationTree(history, parent.generation)).get(path);
    if (parentOid === undefined) {
      // The first publication, or the one that added the file: every line left is its own.
      for (const line of pending) if (line >= 0) owners[line] = p;
      break;
    }
    if (parentOid === current.oid) continue;
    const before = { oid: parentOid, bytes: await readHistoryBlob(history, parentOid) };
    const kept = keptLines(before.bytes, current.bytes);
    const next = new Int32Array(countLines(before.bytes)).fill(-1);
    for (let k = 0; k < kept.length; k++) {
      const line = pending[k]!;
      if (line < 0) continue;
      if (kept[k]! >= 0) next[kept[k]!] = line;
      else (owners[line] = p), left--;
    }
    pending = next;
    current = before;
  }
  return owners;
}
