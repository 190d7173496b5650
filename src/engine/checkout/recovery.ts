/**
 * The recovery of a call that died while writing visible files. Before the
 * first visible file changes, a journal in the private state records every
 * file to be rewritten with the blob ids of its content before and after
 * (both are in the object cache; materialize.ts). If the process dies
 * before the baseline moves, the next call, under the checkout's lock,
 * puts back the previous content of every file that holds what the dead
 * call wrote — and leaves alone any file changed since — so the visible
 * directory and the baseline agree again and no unpublished edit is lost.
 * It writes as a call does (visible-writes.ts): journaled itself, and only
 * over a file that still holds what it expects.
 */
import type { FileClock } from "../../contract/clock.ts";
import { rmSync } from "node:fs";
import { dirname, join } from "node:path";
import type { Baseline, CheckoutState, Journal, JournalProgress, ProgressStep } from "./state.ts";
import type { FlatTree, ObjectCache } from "../git/object-cache.ts";
import { blobId, MissingObjectError } from "../git/objects.ts";
import { lstatOrNull } from "./file-writes.ts";
import { apply, type Change, current, type FileWrite, type Writer, writerClock } from "./visible-writes.ts";

function exists(file: string): boolean {
  return lstatOrNull(file) !== null;
}

/**
 * Whether a recorded step happened: its second record says so, or the disk
 * does, for a kill between the change and that record. A rename happened
 * when its temporary file is gone (only the rename takes it away while the
 * journal exists: leftovers are removed only once every step is settled).
 * A removal happened when nothing is at the path; a write in place, when
 * something is.
 */
function stepTaken(root: string, step: ProgressStep, w: FileWrite): boolean {
  if (step.done === true) return true;
  if (step.tmp !== undefined) return !exists(join(dirname(join(root, step.path)), step.tmp));
  const oid = step.side === "after" ? w.after : w.before;
  return exists(join(root, step.path)) === (oid !== null);
}

/**
 * Which side of `w` the visible file was last set to by a call that died:
 * the last recorded step that happened. "before" when none did — then the
 * file holds what it held before that call, or an edit of it.
 */
function lastSide(root: string, w: FileWrite, steps: ProgressStep[]): "after" | "before" {
  for (let i = steps.length - 1; i >= 0; i--) if (stepTaken(root, steps[i]!, w)) return steps[i]!.side;
  return "before";
}

/**
 * What the file at `w.path`, last set to the dead call's new content, holds
 * when it still holds that (so it must be put back): the blob id of that
 * content, or — for a file that did not exist before and was written in
 * place — of a proper prefix of it, which is what a crash in the middle of
 * that write leaves (an empty file included); null when both are absence.
 * Undefined for anything else there: an edit of it, which is kept.
 */
async function writtenContent(state: CheckoutState, w: FileWrite): Promise<string | null | undefined> {
  const now = current(state.dir, w.path);
  if (now === undefined) return undefined;
  if (now === null || w.after === null) return now === null && w.after === null ? null : undefined;
  const oid = blobId(now);
  if (oid === w.after) return oid;
  if (w.before !== null) return undefined;
  const after = await state.git.readBlob(w.after);
  return now.length < after.length && Buffer.from(after.buffer, after.byteOffset, now.length).equals(now) ? oid : undefined;
}

async function targetFiles(state: CheckoutState, tree: string | null): Promise<FlatTree | null> {
  if (tree === null) return new Map();
  try {
    return (await state.git.readFlatTree(tree)).files;
  } catch (e) {
    if (e instanceof MissingObjectError) return null;
    throw e;
  }
}

/** `tree`'s files with some paths' blobs replaced (null: removed), stored as a tree (loose: no pack holds it). */
export async function treeWithOverrides(git: ObjectCache, tree: string | null, overrides: BaselineOverride[]): Promise<string> {
  const files = tree === null ? new Map<string, string>() : (await git.readFlatTree(tree)).files;
  for (const { path, oid } of overrides) {
    if (oid === null) files.delete(path);
    else files.set(path, oid);
  }
  return await git.storeFlatTree(files);
}

/** A path whose baseline is, for now, the content the interrupted call was bringing it to (null: none). */
export interface BaselineOverride {
  path: string;
  oid: string | null;
}

/** What recovering a journal did; `finish` removes the journal, once the caller is done with what it needed. */
export interface Recovered {
  overrides: BaselineOverride[];
  finish(): void;
}

/**
 * Run before every operation, under the checkout lock: undo what an
 * interrupted materialisation wrote. Returns null when there was nothing to
 * repair, else the baseline overrides it applied and `finish`, which the
 * caller runs once it has settled a publication the same dead call left
 * (publication.ts): until then the journal must stay, for a kill in between
 * to find the same repair to make.
 *
 * A file the dead call had written and that was changed since is kept, not
 * put back: it holds an edit. But the edit was made over what the dead call
 * wrote — someone else's change merged in — so for that file the baseline
 * becomes the content of the call's target (the accepted or published
 * state); else the next merge takes the other writer's change for a local
 * edit, and a later deletion of it by that writer would be undone by ours.
 * Which content a file was last set to is read from the journal's progress
 * and the disk (lastSide); a file recovery already put back is like one the
 * dead call never wrote. Recovery is itself journaled the same way, so a
 * kill in the middle of it leaves a state the next recovery reads right;
 * and it puts a file back only while it still holds what was written, as a
 * call's own writes do (visible-writes.ts).
 */
export async function recoverInterrupted(
  state: CheckoutState,
  afterWrite: (() => Promise<void> | void) | undefined,
  clock: FileClock,
): Promise<Recovered | null> {
  const journal = state.readJournal();
  if (journal === null) return null;
  const baseline = state.readBaseline();
  const completed =
    baseline !== null && baseline.head === journal.target.head && baseline.generation === journal.target.generation;
  const progress = state.readJournalProgress();
  // Settled: a recovery (or the call itself) got as far as its clean-up, and only that is left to do.
  const overrides = !completed && !progress.settled ? await putBack(state, journal, baseline, progress, afterWrite, clock) : [];
  return { overrides, finish: () => finish(state) };
}

/**
 * Put back each file the dead call last set to its new content and that
 * still holds it; the others it wrote were edited since, and get the
 * baseline overrides returned (see recoverInterrupted).
 */
async function putBack(
  state: CheckoutState,
  journal: Journal,
  baseline: Baseline | null,
  progress: JournalProgress,
  afterWrite: (() => Promise<void> | void) | undefined,
  clock: FileClock,
): Promise<BaselineOverride[]> {
  const overrides: BaselineOverride[] = [];
  const rollback: Change[] = [];
  const edited: string[] = [];
  for (const w of journal.writes) {
    if (w.after === w.before) continue;
    if (lastSide(state.dir, w, progress.steps.get(w.path) ?? []) === "before") continue;
    const held = await writtenContent(state, w);
    if (held === undefined) edited.push(w.path);
    else rollback.push({ path: w.path, expected: held, target: w.before });
  }
  const log = state.openJournalProgress(true);
  try {
    const writer: Writer = { ...writerClock(clock), root: state.dir, git: state.git, side: "before", progress: log, made: new Set(), checkLock: () => state.checkLock() };
    const { left } = await apply(writer, rollback, { afterWrite });
    // Written to since the look above: an edit, like the others.
    edited.push(...left);
  } finally {
    log.close();
  }
  if (edited.length > 0) {
    // The baseline such a file gets is the target's content, not what was
    // written: a pull writes the merge, which holds the checkout's
    // unpublished edits too, and those must stay local edits.
    const target = await targetFiles(state, journal.target.tree);
    // Unreadable (the cache lost it): the baseline's own content stays, the side that loses nothing.
    if (target !== null) for (const path of edited) overrides.push({ path, oid: target.get(path) ?? null });
  }
  if (baseline !== null && overrides.length > 0) {
    // Keeps a recorded publication: it is settled next, with these overrides.
    state.replaceBaselineTree(await treeWithOverrides(state.git, baseline.tree, overrides));
  }
  return overrides;
}

/** Recovered.finish: the journal's temporary files and the journal itself removed, once every step is settled. */
function finish(state: CheckoutState): void {
  // Recorded first: from here on, a missing temporary file no longer means its rename happened (stepTaken).
  // (Opening the progress checks the lock is still this call's: a call stopped and taken over removes nothing.)
  const log = state.openJournalProgress(true);
  try {
    log.settled();
  } finally {
    log.close();
  }
  for (const name of state.readJournalProgress().scratch) {
    try {
      rmSync(join(state.dir, name), { force: true });
    } catch {
      /* not a file of ours after all (a directory made under that name): left alone */
    }
  }
  state.clearJournal();
}
