/**
 * Writing a tree into the visible directory, crash-safely, and without
 * overwriting what someone else writes meanwhile.
 *
 * Before the first visible file changes, a journal in the private state
 * records every file to be rewritten with the blob ids of its content
 * before and after (both are in the object cache). If the process dies
 * before the baseline moves, `recoverInterrupted` puts back the previous
 * content of every file that holds what the interrupted operation wrote —
 * and leaves alone any file changed since — so the visible directory and
 * the baseline agree again and no unpublished edit is lost.
 *
 * The directory is shared: an editor, a script logging into a file, or a
 * second agent may write a file while a call is rewriting it. A file is
 * only ever replaced while it still holds the content the call computed
 * from (`before`, as scanned). It is linked to a second name, its bytes
 * are read there and compared, the new content is renamed over it, and the
 * second name shows whether anything was written to it between the
 * comparison and the rename — in which case the written file is put back.
 * A file that no longer holds what was scanned is merged again with what it
 * holds now, as the caller says (`remerge`: the new content is the local
 * side), and tried again; or, when that keeps failing or the caller says
 * so, left as it is for the next call, its baseline chosen so that the next
 * merge takes the writes for local edits (`skippedBase`). What a writer that still holds the old file open writes
 * after the rename goes into a file that no longer has a name: no tool can
 * keep that (docs/failures.md).
 *
 * A file that did not exist before is written in place, which spares a
 * rename per file on a cold pull: it is created exclusively (so it cannot
 * be someone else's file, and one that appeared since the scan is left
 * alone), and a crash can leave it only half written — a prefix of its new
 * content, which recovery recognises as ours and removes.
 *
 * Temporary files live beside their destination, as the rename needs, under
 * names (`.slivingdoc-partial-…`) that the journal records before they are
 * made: recovery removes exactly those, and the scan refuses the pattern by
 * name, so a user's file is never taken for one of ours.
 */
import { closeSync, linkSync, lstatSync, mkdirSync, openSync, readFileSync, renameSync, rmdirSync, rmSync, type Stats, writeSync } from "node:fs";
import { basename, dirname, join } from "node:path";
import { DomainError, type RecoveryReport } from "../../contract/errors.ts";
import type { FileClock, RandomSource } from "../../contract/clock.ts";
import type { Baseline, CheckoutState, JournalProgressLog, ProgressStep } from "./state.ts";
import type { FlatTree, ObjectCache } from "../git/object-cache.ts";
import { diskFullBeforeChange, diskFullWhileWriting, isDiskFull } from "./disk-full.ts";
import { blobId, MissingObjectError } from "../git/objects.ts";
import { type FileStamp, stampOf } from "./scan.ts";
import { racyWindow } from "./stat-cache.ts";

export interface FileWrite {
  path: string;
  before: string | null;
  after: string | null;
}

/** The visible files that differ between `from` (what is on disk) and `to`. */
export function plannedWrites(from: FlatTree, to: FlatTree): FileWrite[] {
  const writes: FileWrite[] = [];
  for (const [path, before] of from) {
    const after = to.get(path);
    if (after !== before) writes.push({ path, before, after: after ?? null });
  }
  for (const [path, after] of to) if (!from.has(path)) writes.push({ path, before: null, after });
  return writes.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
}

/** A visible file this call wrote (or removed: `stamp` null), stamped right after, for the stat cache. */
export interface WrittenFile {
  path: string;
  after: string | null;
  stamp: FileStamp | null;
  /** When the stamp was taken. */
  takenMs: number;
}

/** One file to bring from what it holds (`expected`, null: absent) to `target`. */
interface Change {
  path: string;
  expected: string | null;
  target: string | null;
}

/** A call's writing of visible files: where, on which side of the journal, and its records. */
interface Writer {
  root: string;
  git: ObjectCache;
  side: "after" | "before";
  progress: JournalProgressLog;
  /** Directories made (or known to exist) this call: one mkdir per directory, not per file. */
  made: Set<string>;
  /** Right before a checked file is replaced or removed: where tests write to it. */
  beforeReplace?: (path: string) => void;
  /** The clock that file times are compared with. */
  now: () => number;
  /** Names temporary files. */
  randomId: RandomSource["randomId"];
  /** Before each file: LOCAL_STATE once the checkout's lock is no longer this call's (CheckoutState.checkLock). */
  checkLock: () => void;
}

function writerClock(clock: FileClock): Pick<Writer, "now" | "randomId"> {
  return { now: () => clock.now().getTime(), randomId: clock.randomId };
}

function other(side: "after" | "before"): "after" | "before" {
  return side === "after" ? "before" : "after";
}

/** A fresh temporary name beside `path`, recorded in the journal before anything is made under it. */
function scratchFile(w: Writer, path: string): string {
  const name = `.slivingdoc-partial-${w.randomId(8)}`;
  w.progress.scratch(join(dirname(path), name));
  return join(w.root, dirname(path), name);
}

function errno(e: unknown): string | undefined {
  return (e as NodeJS.ErrnoException).code;
}

/** Create `file` with `bytes`, or return false when something already exists there. */
function writeNew(file: string, bytes: Uint8Array): boolean {
  let fd: number;
  try {
    fd = openSync(file, "wx");
  } catch (e) {
    if (errno(e) === "EEXIST") return false;
    throw e;
  }
  try {
    for (let done = 0; done < bytes.length; ) done += writeSync(fd, bytes, done, bytes.length - done);
  } finally {
    closeSync(fd);
  }
  return true;
}

/** The directories above `path` exist (made if needed); false when something else is in the way — a file written there since the scan. */
function ensureParent(w: Writer, path: string): boolean {
  const dir = dirname(join(w.root, path));
  if (w.made.has(dir)) return true;
  try {
    // Synchronous calls: a cold pull writes thousands, and thousands of small awaited ones cost more than the work.
    mkdirSync(dir, { recursive: true });
  } catch (e) {
    if (errno(e) === "EEXIST" || errno(e) === "ENOTDIR") return false;
    throw e;
  }
  w.made.add(dir);
  return true;
}

/** File systems without hard links answer link() with these. */
const NO_HARD_LINKS = new Set(["EPERM", "ENOTSUP", "EOPNOTSUPP", "ENOSYS"]);

/**
 * Give the file at `file` the second name `aside`: the same file, which
 * writers by its name keep writing into. "gone" when nothing is there;
 * "other" when it is no longer a regular file; "unlinked" on a file system
 * without hard links, where the file can only be compared where it is.
 */
function holdAside(file: string, aside: string): "linked" | "unlinked" | "gone" | "other" {
  let st: Stats;
  try {
    st = lstatSync(file);
  } catch (e) {
    if (errno(e) === "ENOENT" || errno(e) === "ENOTDIR") return "gone";
    throw e;
  }
  if (!st.isFile()) return "other";
  try {
    linkSync(file, aside);
    return "linked";
  } catch (e) {
    if (errno(e) === "ENOENT") return "gone";
    if (NO_HARD_LINKS.has(errno(e) ?? "")) return "unlinked";
    throw e;
  }
}

/** Whether the file held aside was written to since `seen` was taken (its content was `expected` then). */
function writtenSince(w: Writer, aside: string, seen: Stats, expected: string): boolean {
  const now = lstatSync(aside);
  if (now.size !== seen.size || now.mtimeMs !== seen.mtimeMs) return true;
  // Same size and time: unchanged, unless the time is so recent that a
  // second write in the same clock tick would have left it as it was.
  if (now.mtimeMs < w.now() - racyWindow(stampOf(now))) return false;
  return blobId(readFileSync(aside)) !== expected;
}

/** What is at `file` now, for the stat cache. */
function stamped(w: Writer, c: Change, file: string): WrittenFile {
  let stamp: FileStamp | null = null;
  if (c.target !== null) {
    try {
      stamp = stampOf(lstatSync(file));
    } catch {
      /* gone again already: the next scan reads what is there */
    }
  }
  return { path: c.path, after: c.target, stamp, takenMs: w.now() };
}

/**
 * Replace or remove the file at `c.path`, which holds `c.expected`: false,
 * leaving it as it is, when it no longer does (see the top of this file).
 */
function replaceIfUnchanged(w: Writer, c: Change, bytes: Uint8Array | null): boolean {
  const file = join(w.root, c.path);
  const tmp = bytes === null ? null : scratchFile(w, c.path);
  const aside = scratchFile(w, c.path);
  try {
    if (tmp !== null && bytes !== null && !writeNew(tmp, bytes)) throw new Error("a fresh temporary name was taken");
    const held = holdAside(file, aside);
    // Removed since the scan: for a removal that is the same; for a rewrite, an edit to keep.
    if (held === "gone") return tmp === null;
    if (held === "other") return false;
    // Without hard links the comparison is made at the path itself, a moment before the rename (docs/failures.md).
    const subject = held === "linked" ? aside : file;
    const seen = lstatSync(subject);
    if (blobId(readFileSync(subject)) !== c.expected) return false;
    w.beforeReplace?.(c.path);
    if (tmp === null) {
      w.progress.log({ path: c.path, side: w.side });
      rmSync(file, { force: true });
    } else {
      w.progress.log({ path: c.path, side: w.side, tmp: basename(tmp) });
      renameSync(tmp, file);
    }
    w.progress.log({ path: c.path, side: w.side, done: true });
    if (held === "linked" && writtenSince(w, aside, seen, c.expected)) {
      // Written to between the comparison and the rename, while it still had
      // its name: that write is someone's, and the new content was computed
      // without it. The file goes back as they left it.
      w.progress.log({ path: c.path, side: other(w.side), tmp: basename(aside) });
      renameSync(aside, file);
      w.progress.log({ path: c.path, side: other(w.side), done: true });
      return false;
    }
    if (tmp === null) {
      // The second name goes first: the directory must be empty to go too.
      rmSync(aside, { force: true });
      removeEmptyParents(w.root, c.path);
    }
    return true;
  } finally {
    if (tmp !== null) rmSync(tmp, { force: true });
    rmSync(aside, { force: true });
  }
}

/**
 * Create the file at `c.path`, absent when the call looked: false when
 * something is there now. In place for a call's own writes (see the top of
 * this file); whole, through a temporary file linked into place, for
 * recovery's, which no journal describes as partial.
 */
function createIfAbsent(w: Writer, c: Change, bytes: Uint8Array): boolean {
  if (!ensureParent(w, c.path)) return false;
  const file = join(w.root, c.path);
  if (w.side === "after") {
    w.progress.log({ path: c.path, side: w.side });
    const made = writeNew(file, bytes);
    w.progress.log({ path: c.path, side: w.side, done: made });
    return made;
  }
  const tmp = scratchFile(w, c.path);
  try {
    if (!writeNew(tmp, bytes)) throw new Error("a fresh temporary name was taken");
    w.progress.log({ path: c.path, side: w.side, tmp: basename(tmp) });
    try {
      linkSync(tmp, file);
    } catch (e) {
      if (errno(e) === "EEXIST") return false;
      if (!NO_HARD_LINKS.has(errno(e) ?? "")) throw e;
      // No hard links: only a rename, after a look that nothing is there.
      if (lstatOrNull(file) !== null) return false;
      renameSync(tmp, file);
    }
    w.progress.log({ path: c.path, side: w.side, done: true });
    return true;
  } finally {
    rmSync(tmp, { force: true });
  }
}

function lstatOrNull(file: string): Stats | null {
  try {
    return lstatSync(file);
  } catch {
    return null;
  }
}

function removeEmptyParents(root: string, path: string): void {
  // Directories exist only through their files
  // (docs/decisions/0005-the-notebook-contract.md).
  for (let dir = dirname(path); dir !== "." && dir !== ""; dir = dirname(dir)) {
    try {
      rmdirSync(join(root, dir));
    } catch {
      break; // Not empty, or already gone.
    }
  }
}

/**
 * What a file found written to since it was scanned becomes: merged again,
 * with its content now (null: absent) as the local side, into a new target
 * (null: absent) — or null to leave it as it is, for the next call.
 */
export type Remerge = (path: string, now: Uint8Array | null) => Promise<{ target: string | null } | null>;

/** How many times one file is merged again while someone keeps writing it, before it is left for the next call. */
const REMERGES = 5;

/** Bring one file to `c.target`, whose content is `bytes`; false when it no longer holds `c.expected`. */
function applyOne(w: Writer, c: Change, bytes: Uint8Array | null): boolean {
  if (bytes === null) return c.expected === null || replaceIfUnchanged(w, c, null);
  if (c.expected === null) return createIfAbsent(w, c, bytes);
  return ensureParent(w, c.path) && replaceIfUnchanged(w, c, bytes);
}

/**
 * Bring each file to its target, removals first so a file can give way to a
 * directory of the same name. A file that no longer holds what was expected
 * — someone wrote it since the scan — is merged again with what it holds
 * now (`remerge`) and tried again, up to REMERGES times; without `remerge`,
 * or after that, it is left as it is. The files written (with the content
 * they were given), and the paths left.
 */
async function apply(
  w: Writer,
  changes: Change[],
  hooks: { afterWrite?: () => Promise<void> | void; written?: (oid: string, bytes: Uint8Array) => void; remerge?: Remerge } = {},
): Promise<{ written: WrittenFile[]; left: string[] }> {
  const done: WrittenFile[] = [];
  const left: string[] = [];
  const removals = changes.filter((c) => c.target === null);
  for (const first of [...removals, ...changes.filter((c) => c.target !== null)]) {
    let c = first;
    for (let tries = 0; ; tries++) {
      const bytes = c.target === null ? null : await w.git.readBlob(c.target);
      w.checkLock();
      if (applyOne(w, c, bytes)) {
        done.push(stamped(w, c, join(w.root, c.path)));
        if (c.target !== null && bytes !== null) hooks.written?.(c.target, bytes);
        break;
      }
      const now = current(w.root, c.path);
      // Something else than a file there now (a directory, a link): not ours to merge.
      const again = now === undefined || tries >= REMERGES || !hooks.remerge ? null : await hooks.remerge(c.path, now);
      if (again === null || now === undefined) {
        left.push(c.path);
        break;
      }
      c = { path: c.path, expected: now === null ? null : blobId(now), target: again.target };
    }
    await hooks.afterWrite?.();
  }
  return { written: done, left };
}

export interface MaterializeHooks extends FileClock {
  onStage: (stage: string) => Promise<void> | void;
  /** After each visible file is written or removed; crash tests stop the process here. */
  afterWrite?: () => Promise<void> | void;
  /** Each blob written, with its bytes, while they are at hand (the diffstat counts their lines). */
  written?: (oid: string, bytes: Uint8Array) => void;
  /** Right before a file, checked to hold what was scanned, is replaced or removed: where tests write to it. */
  beforeReplace?: (path: string) => void;
  /** How a file written to since the scan is merged again (see apply); without it, such a file is left as it is. */
  remerge?: Remerge;
}

/** Where a failure after local mutation began is reported (errors.md RECOVERY_FAILURE). */
export interface RecoveryContext {
  /** The operation's prefix of the stage name: "pull", "commit". */
  operation: string;
  /** A fixed stage name instead, when the whole step is one stage ("commit.readonly"). */
  stage?: string;
  /** Whether the store accepted this call's publication before the failure. */
  remoteAccepted: RecoveryReport["remoteAccepted"];
}

/** What materialize did: the files it wrote, those it left as someone else had written them, and the baseline it recorded. */
export interface Materialized {
  written: WrittenFile[];
  left: string[];
  baseline: Baseline;
}

/**
 * Make the visible directory equal `to` (given that it holds `from`, as
 * scanned) and move the baseline to `target`, journaled as described above.
 * A file written to since the scan is left as it is, and its baseline is
 * `skippedBase(path)` instead of the target's: the version its writes were
 * made over, as far as the target already holds it (the old baseline when
 * the target does not hold the checkout's edits; the scanned file when it
 * does, as a publication of them), so that the next merge takes exactly
 * those writes for local edits. A file merged again with what was written
 * (`hooks.remerge`) holds the target's changes and those writes: its
 * baseline is the target's.
 *
 * A failure once files began to change runs the generic recovery — the
 * same one a crash gets on the next call — and reports it as
 * RECOVERY_FAILURE; a successful repair never turns the call into OK.
 */
export async function materialize(
  state: CheckoutState,
  from: FlatTree,
  to: FlatTree,
  target: Baseline,
  hooks: MaterializeHooks,
  recovery: RecoveryContext,
  skippedBase: (path: string) => string | null,
): Promise<Materialized> {
  const writes = plannedWrites(from, to);
  let stage = "journal";
  try {
    let done: { written: WrittenFile[]; left: string[] } = { written: [], left: [] };
    if (writes.length > 0) {
      state.writeJournal({ version: 1, target, writes });
      stage = "materialize";
      await hooks.onStage("materialize");
      const progress = state.openJournalProgress(false);
      const writer: Writer = { ...writerClock(hooks), root: state.dir, git: state.git, side: "after", progress, made: new Set(), beforeReplace: hooks.beforeReplace, checkLock: () => state.checkLock() };
      try {
        const changes = writes.map((w) => ({ path: w.path, expected: w.before, target: w.after }));
        done = await apply(writer, changes, hooks);
      } finally {
        progress.close();
      }
    }
    stage = "baseline";
    await hooks.onStage("baseline");
    const { left } = done;
    const baseline = left.length === 0 ? target : { ...target, tree: await treeWithOverrides(state.git, target.tree, left.map((path) => ({ path, oid: skippedBase(path) }))) };
    state.writeBaseline(baseline);
    state.clearJournal();
    return { ...done, baseline };
  } catch (cause) {
    if (cause instanceof DomainError) throw cause;
    const places = { notebook: state.dir, privateState: state.stateDir };
    if (stage === "journal") {
      // Nothing visible changed yet: a plain local-state failure.
      if (isDiskFull(cause)) throw diskFullBeforeChange(cause, places);
      throw new DomainError("LOCAL_STATE", "The private state could not be written; no file was changed.", { cause });
    }
    let resynchronized = false;
    try {
      // The journal was written above: finding none means the private state itself is gone.
      const recovered = await recoverInterrupted(state, undefined, hooks);
      recovered?.finish();
      resynchronized = recovered !== null;
    } catch {
      /* the journal stays; the next call tries the same recovery again */
    }
    throw new DomainError(
      "LOCAL_MUTATION_FAILED",
      isDiskFull(cause)
        ? diskFullWhileWriting(places, resynchronized)
        : resynchronized
          ? "Writing the notebook files failed part-way; the files were put back as they were before this call."
          : "Writing the notebook files failed part-way, and putting them back failed too; the next call retries the repair.",
      {
        recovery: { stage: recovery.stage ?? `${recovery.operation}.${stage}`, remoteAccepted: recovery.remoteAccepted, resynchronized },
        cause,
      },
    );
  }
}

/** `tree`'s files with some paths' blobs replaced (null: removed), stored as a tree (loose: no pack holds it). */
async function treeWithOverrides(git: ObjectCache, tree: string | null, overrides: BaselineOverride[]): Promise<string> {
  const files = tree === null ? new Map<string, string>() : (await git.readFlatTree(tree)).files;
  for (const { path, oid } of overrides) {
    if (oid === null) files.delete(path);
    else files.set(path, oid);
  }
  return await git.storeFlatTree(files);
}

/** What is on disk at `path` now: null if nothing, undefined if not a regular file. */
function current(root: string, path: string): Uint8Array | null | undefined {
  const file = join(root, path);
  try {
    const st = lstatSync(file);
    if (!st.isFile()) return undefined; // Something else now: not ours to touch.
  } catch {
    return null;
  }
  return readFileSync(file);
}

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
 * call's own writes do (see the top of this file).
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
  const overrides: BaselineOverride[] = [];
  // Settled: a recovery (or the call itself) got as far as its clean-up, and only that is left to do.
  if (!completed && !progress.settled) {
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
  }
  return {
    overrides,
    finish() {
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
    },
  };
}
