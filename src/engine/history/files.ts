/**
 * The notebook as it was at a retained generation: its files with their
 * sizes, and one file's text, for a reader that browses the history
 * (`slivingdoc web`, docs/web.md) rather than diffing it.
 */
import { decodeText } from "../merge/text.ts";
import { type History, historyPath, notAFile, publicationAt, readGenerationTree, readHistoryBlob } from "./read.ts";

export interface TreeListing {
  generation: number;
  /** Sorted by path (by its UTF-16 code units, as JavaScript compares strings). */
  files: { path: string; size: number }[];
}

export interface FileAtGeneration {
  generation: number;
  path: string;
  /** null when the file is not UTF-8 text. */
  text: string | null;
  /** Bytes. */
  size: number;
}

/** The accepted generation when none is named; refused as `show` refuses one not retained (publicationAt). */
function generationOf(history: History, generation: number | undefined): number {
  const g = generation ?? history.manifest?.generation ?? 0;
  publicationAt(history, g);
  return g;
}

/** Every file of the notebook at `generation` (default: the accepted one), with its size. */
export async function generationListing(history: History, generation?: number): Promise<TreeListing> {
  const g = generationOf(history, generation);
  const files: TreeListing["files"] = [];
  for (const [path, oid] of await readGenerationTree(history, g)) {
    files.push({ path, size: (await readHistoryBlob(history, oid)).byteLength });
  }
  files.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
  return { generation: g, files };
}

/** One file of the notebook at `generation` (default: the accepted one); MALFORMED_INPUT when it has no such file. */
export async function generationFile(history: History, path: string, generation?: number): Promise<FileAtGeneration> {
  const g = generationOf(history, generation);
  const name = historyPath(path);
  const oid = name === "" ? undefined : (await readGenerationTree(history, g)).get(name);
  if (oid === undefined) throw notAFile(path, g);
  const bytes = await readHistoryBlob(history, oid);
  return { generation: g, path: name, text: decodeText(bytes), size: bytes.byteLength };
}
