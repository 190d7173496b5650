/**
 * `slivingdoc log` and `slivingdoc show` (issue 15, items 2 and 3): the
 * retained publications newest first, with what each changed; and one
 * publication's change as git's unified diff.
 *
 * The oldest retained publication names a parent the store no longer holds
 * (after compaction): what it changed is unknown, and it says so
 * (`files: null`) rather than listing its whole tree as added.
 */
import { DomainError } from "../../contract/errors.ts";
import { MissingObjectError } from "../git/objects.ts";
import { decodeText } from "../text.ts";
import { diffStat } from "../xdiff/index.ts";
import { filePatch } from "./patch.ts";
import { type History, type Publication, publicationAt, readHistoryBlob } from "./read.ts";
import { type ChangeStatus, diffTrees, pathFilter, type TreeChange } from "../tree-diff.ts";

export interface FileChange {
  path: string;
  status: ChangeStatus;
  insertions: number;
  deletions: number;
}

export interface LogEntry {
  generation: number;
  time: string;
  agent: string;
  message: string;
  /** null when the parent is older than the retained history: what it changed is unknown. */
  files: FileChange[] | null;
  filesChanged: number;
  insertions: number;
  deletions: number;
}

export interface LogResult {
  /** The accepted generation (0: no notebook yet). */
  generation: number;
  /** The oldest generation retained (0: none). */
  oldestRetained: number;
  entries: LogEntry[];
}

export interface LogOptions {
  limit?: number;
  /** Publications at or after this instant only. */
  since?: Date;
  /** Only publications that changed a file at or below one of these paths; their files are filtered too. */
  paths?: readonly string[];
}

function parentRetained(history: History, p: Publication): boolean {
  return p.parent !== null && p.parent !== history.boundary;
}

async function text(history: History, oid: string | null): Promise<string> {
  if (oid === null) return "";
  return decodeText(await readHistoryBlob(history, oid)) ?? "";
}

async function changesOf(history: History, p: Publication, paths: readonly string[]): Promise<TreeChange[] | null> {
  if (p.parent !== null && !parentRetained(history, p)) return null;
  const parentTree = p.parent === null ? null : (await history.git.commitTree(p.parent).catch(wrap));
  return diffTrees(history.git, parentTree, p.tree, pathFilter(paths)).catch(wrap);
}

function wrap(cause: unknown): never {
  if (cause instanceof MissingObjectError) {
    throw new DomainError("HISTORY_INVALID", "The retained history is missing an object; an operator must inspect the store.", { cause });
  }
  throw cause;
}

async function counted(history: History, changes: TreeChange[]): Promise<FileChange[]> {
  const files: FileChange[] = [];
  for (const c of changes) {
    const { insertions, deletions } = diffStat(await text(history, c.before), await text(history, c.after));
    files.push({ path: c.path, status: c.status, insertions, deletions });
  }
  return files;
}

function totals(files: FileChange[] | null): { filesChanged: number; insertions: number; deletions: number } {
  return {
    filesChanged: files?.length ?? 0,
    insertions: files?.reduce((n, f) => n + f.insertions, 0) ?? 0,
    deletions: files?.reduce((n, f) => n + f.deletions, 0) ?? 0,
  };
}

export async function historyLog(history: History, options: LogOptions = {}): Promise<LogResult> {
  const paths = options.paths ?? [];
  const entries: LogEntry[] = [];
  for (const p of history.publications) {
    if (options.limit !== undefined && entries.length >= options.limit) break;
    if (options.since !== undefined && new Date(p.time).getTime() < options.since.getTime()) break;
    const changes = await changesOf(history, p, paths);
    // With a path filter, a publication that changed none of them is left out; one whose changes are unknown stays.
    if (paths.length > 0 && changes !== null && changes.length === 0) continue;
    const files = changes === null ? null : await counted(history, changes);
    entries.push({ generation: p.generation, time: p.time, agent: p.agent, message: p.message, files, ...totals(files) });
  }
  return {
    generation: history.manifest?.generation ?? 0,
    oldestRetained: history.publications[history.publications.length - 1]?.generation ?? 0,
    entries,
  };
}

export interface ShowResult extends LogEntry {
  /** git's unified diff of the change; absent with --stat, and when the change is unknown. */
  patch?: string;
}

export async function showGeneration(history: History, generation: number, options: { stat?: boolean; paths?: readonly string[] } = {}): Promise<ShowResult> {
  const p = publicationAt(history, generation);
  const changes = await changesOf(history, p, options.paths ?? []);
  const files = changes === null ? null : await counted(history, changes);
  const result: ShowResult = { generation: p.generation, time: p.time, agent: p.agent, message: p.message, files, ...totals(files) };
  if (options.stat !== true && changes !== null) {
    const parts: string[] = [];
    for (const c of changes) parts.push(filePatch({ path: c.path, before: c.before, after: c.after, a: await text(history, c.before), b: await text(history, c.after) }));
    result.patch = parts.join("");
  }
  return result;
}
