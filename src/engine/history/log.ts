/**
 * `slivingdoc log` and `slivingdoc show`, so an operator sees who changed
 * what (docs/history.md): the retained publications newest first, with what
 * each changed; and one publication's change with both sides' texts, which
 * the CLI writes as `git diff` does (engine/merge/xdiff/unified.ts,
 * surfaces/patch.ts), as it does for `slivingdoc diff`.
 *
 * The oldest retained publication names a parent the store no longer holds
 * (after compaction): what it changed is unknown, and it says so
 * (`files: null`) rather than listing its whole tree as added.
 *
 * Each entry also says where work crossed: the publications made between
 * the generation its agent had seen (its base generation, read.ts) and its
 * own, which the commit was merged onto unseen — by whom, while retained.
 */
import { DomainError } from "../../contract/errors.ts";
import { MissingObjectError } from "../git/objects.ts";
import { decodeText } from "../merge/text.ts";
import { diffStat } from "../merge/xdiff/index.ts";
import { type ChangeStatus, diffTrees, pathFilter, type TreeChange } from "../merge/tree-diff.ts";
import { type History, type HistoryDeps, type Publication, publicationAt, readHistoryBlob, withHistory } from "./read.ts";

export interface FileChange {
  path: string;
  status: ChangeStatus;
  insertions: number;
  deletions: number;
}

/** A publication another one crossed: made after the other's base generation and before it, so merged in unseen by its agent. */
export interface Crossed {
  generation: number;
  agent: string;
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
  /** The base generation (read.ts): the generation its agent had seen; null when its commit does not record it. */
  base: number | null;
  /** The retained publications it crossed, oldest first (empty: none); null when its base generation is unknown. */
  crossed: Crossed[] | null;
  /** How many it crossed that are older than the retained history: their agents are unknown. */
  crossedUnretained: number;
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
  /** Publications recorded at or after this instant only, wherever they are in the history (clocks can be skewed). */
  since?: Date;
  /** Only publications that changed a file at or below one of these paths; their files are filtered too. */
  paths?: readonly string[];
  /** Only generations below this one: paging, from the `next` of the page before (LogPage). */
  before?: number;
  /** Only this agent's publications. */
  agent?: string;
}

/** A page of the log: `next` is the `before` of the page after it, null when none follows. */
export interface LogPage extends LogResult {
  next: number | null;
}

function parentRetained(history: History, p: Publication): boolean {
  return p.parent !== null && p.parent !== history.boundary;
}

async function text(history: History, oid: string | null): Promise<string> {
  if (oid === null) return "";
  return decodeText(await readHistoryBlob(history, oid)) ?? "";
}

export async function changesOf(history: History, p: Publication, paths: readonly string[]): Promise<TreeChange[] | null> {
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

/**
 * What `p` crossed: the generations after its base and before its own, each
 * with its agent while retained. Generations are consecutive, so those
 * older than the oldest retained one are only counted: who made them is no
 * longer stored, and nothing is guessed.
 */
export function crossingsOf(history: History, p: Publication): Pick<LogEntry, "crossed" | "crossedUnretained"> {
  if (p.base === null) return { crossed: null, crossedUnretained: 0 };
  const oldest = history.publications[history.publications.length - 1]!.generation;
  const crossed: Crossed[] = [];
  for (let g = Math.max(p.base + 1, oldest); g < p.generation; g++) {
    crossed.push({ generation: g, agent: publicationAt(history, g).agent });
  }
  return { crossed, crossedUnretained: Math.max(0, oldest - p.base - 1) };
}

/** The entry of `p`, whose changes are `files`. */
function entryOf(history: History, p: Publication, files: FileChange[] | null): LogEntry {
  return { generation: p.generation, time: p.time, agent: p.agent, message: p.message, files, ...totals(files), base: p.base, ...crossingsOf(history, p) };
}

/** `slivingdoc log`: the retained publications, newest first, as `input` selects them. */
export async function historyLog(deps: HistoryDeps, input: LogOptions): Promise<LogResult> {
  const { next: _next, ...result } = await withHistory(deps, (history) => logPage(history, input));
  return result;
}

/**
 * One page of the log of an opened history. The walk starts at `before`
 * (the index of a generation is known: generations are consecutive), so a
 * page costs the diffs of its own entries, however long the history: the
 * rest is the commits openHistory read already.
 */
export async function logPage(history: History, options: LogOptions): Promise<LogPage> {
  const paths = options.paths ?? [];
  const entries: LogEntry[] = [];
  let next: number | null = null;
  for (let i = startIndex(history, options.before); i < history.publications.length; i++) {
    const p = history.publications[i]!;
    const changes = await selected(history, p, options, paths);
    if (changes === false) continue;
    // A publication the page has no room for: the next page starts below the last entry, and so at it.
    if (options.limit !== undefined && entries.length >= options.limit) {
      next = entries[entries.length - 1]?.generation ?? p.generation + 1;
      break;
    }
    entries.push(entryOf(history, p, changes === null ? null : await counted(history, changes)));
  }
  return {
    generation: history.manifest?.generation ?? 0,
    oldestRetained: history.publications[history.publications.length - 1]?.generation ?? 0,
    entries,
    next,
  };
}

/** The index of the newest publication below generation `before` (the whole history when absent). */
function startIndex(history: History, before: number | undefined): number {
  const newest = history.publications[0];
  if (before === undefined || newest === undefined) return 0;
  return Math.min(history.publications.length, Math.max(0, newest.generation - before + 1));
}

/** The changes of `p` when `options` select it (null: unknown), false when they leave it out. */
async function selected(history: History, p: Publication, options: LogOptions, paths: readonly string[]): Promise<TreeChange[] | null | false> {
  if (options.agent !== undefined && p.agent !== options.agent) return false;
  // Not the end of the walk: a commit made under a slow clock records a time older than those before it.
  if (options.since !== undefined && new Date(p.time).getTime() < options.since.getTime()) return false;
  const changes = await changesOf(history, p, paths);
  // With a path filter, a publication that changed none of them is left out; one whose changes are unknown stays.
  if (paths.length > 0 && changes !== null && changes.length === 0) return false;
  return changes;
}

/** One file a publication changed, with its two sides' texts ("" when absent). */
export interface ShownChange extends TreeChange {
  beforeText: string;
  afterText: string;
}

export interface ShowResult {
  entry: LogEntry;
  /** null when the change is unknown (the parent is older than the retained history). */
  changes: ShownChange[] | null;
}

export interface ShowInput {
  generation: number;
  /** Only these notebook paths (files or directories). */
  paths?: readonly string[];
}

/** `slivingdoc show`: what one retained publication changed. */
export async function showGeneration(deps: HistoryDeps, input: ShowInput): Promise<ShowResult> {
  return withHistory(deps, (history) => showOf(history, input));
}

/** Show in an opened history (showGeneration opens one for a call). */
export async function showOf(history: History, input: ShowInput): Promise<ShowResult> {
  const p = publicationAt(history, input.generation);
  const found = await changesOf(history, p, input.paths ?? []);
  let changes: ShownChange[] | null = null;
  if (found !== null) {
    changes = [];
    for (const c of found) changes.push({ ...c, beforeText: await text(history, c.before), afterText: await text(history, c.after) });
  }
  const files = changes === null ? null : changes.map((c) => ({ path: c.path, status: c.status, ...diffStat(c.beforeText, c.afterText) }));
  return { entry: entryOf(history, p, files), changes };
}
