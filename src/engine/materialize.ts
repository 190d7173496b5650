/**
 * Writing a tree into the visible directory, crash-safely.
 *
 * Before the first visible file changes, a journal in the private state
 * records every file to be rewritten with the blob ids of its content
 * before and after (both are in the object cache). If the process dies
 * before the baseline moves, `recoverInterrupted` puts back the previous
 * content of every file that holds what the interrupted operation wrote —
 * and leaves alone any file changed since — so the visible directory and
 * the baseline agree again and no unpublished edit is lost.
 *
 * A file that replaces another is written beside it and renamed over it, so
 * the old content survives a crash. A file that did not exist before is
 * written in place, which spares a rename per file on a cold pull: it is
 * created exclusively (so it cannot be someone else's file), and a crash
 * can leave it only half written — a prefix of its new content, which
 * recovery recognises as ours and removes.
 */
import {
  closeSync,
  existsSync,
  lstatSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmdirSync,
  rmSync,
  writeFileSync,
  writeSync,
} from "node:fs";
import { dirname, join } from "node:path";
import { DomainError, type RecoveryReport } from "../contract/errors.ts";
import { randomHex } from "../contract/random-hex.ts";
import type { Baseline, CheckoutState, ProgressStep } from "./checkout-state.ts";
import type { FlatTree, ObjectCache } from "./git/object-cache.ts";
import { blobId, MissingObjectError } from "./git/objects.ts";
import { PARTIAL_FILE } from "./scan.ts";

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

function partialName(): string {
  return `.slivingdoc-partial-${randomHex(8)}`;
}

/** Create `file` with `bytes`, or return false when something already exists there. */
function writeNew(file: string, bytes: Uint8Array): boolean {
  let fd: number;
  try {
    fd = openSync(file, "wx");
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === "EEXIST") return false;
    throw e;
  }
  try {
    for (let done = 0; done < bytes.length; ) done += writeSync(fd, bytes, done, bytes.length - done);
  } finally {
    closeSync(fd);
  }
  return true;
}

/**
 * Write one visible file. `fresh`: the journal records it as absent before,
 * so it may be written in place (see the top of this file). Recovery's writes
 * never are: no journal records what they put back.
 */
function writeVisible(root: string, path: string, bytes: Uint8Array, made: Set<string>, fresh: boolean, log: (tmp?: string) => void): void {
  const file = join(root, path);
  const dir = dirname(file);
  // One mkdir per directory, not per file: a cold pull writes thousands.
  // Synchronous calls: thousands of small awaited ones cost more than the work.
  if (!made.has(dir)) {
    mkdirSync(dir, { recursive: true });
    made.add(dir);
  }
  // In place when nothing is there; something that appeared since the scan
  // is replaced like any other file.
  if (fresh) {
    log();
    if (writeNew(file, bytes)) return;
  }
  // Write beside the destination and rename: a reader never sees half a file.
  const tmp = partialName();
  writeFileSync(join(dir, tmp), bytes);
  log(tmp);
  renameSync(join(dir, tmp), file);
}

function removeVisible(root: string, path: string): void {
  rmSync(join(root, path), { force: true });
  // Directories exist only through their files (docs/design.md, The notebook
  // contract).
  for (let dir = dirname(path); dir !== "." && dir !== ""; dir = dirname(dir)) {
    try {
      rmdirSync(join(root, dir));
    } catch {
      break; // Not empty, or already gone.
    }
  }
}

/** Deletions first, so a file can give way to a directory of the same name. */
async function apply(
  root: string,
  git: ObjectCache,
  writes: FileWrite[],
  side: "after" | "before",
  log: (step: ProgressStep) => void,
  afterWrite: () => Promise<void> | void = () => {},
  written: (oid: string, bytes: Uint8Array) => void = () => {},
): Promise<void> {
  const pick = (w: FileWrite) => (side === "after" ? w.after : w.before);
  for (const w of writes) {
    if (pick(w) === null) {
      log({ path: w.path, side });
      removeVisible(root, w.path);
      log({ path: w.path, side, done: true });
      await afterWrite();
    }
  }
  const made = new Set<string>();
  for (const w of writes) {
    const oid = pick(w);
    if (oid !== null) {
      const bytes = await git.readBlob(oid);
      writeVisible(root, w.path, bytes, made, side === "after" && w.before === null, (tmp) => log(tmp === undefined ? { path: w.path, side } : { path: w.path, side, tmp }));
      log({ path: w.path, side, done: true });
      written(oid, bytes);
      await afterWrite();
    }
  }
}

export interface MaterializeHooks {
  onStage: (stage: string) => Promise<void> | void;
  /** After each visible file is written or removed; crash tests stop the process here. */
  afterWrite?: () => Promise<void> | void;
  /** Each blob written, with its bytes, while they are at hand (the diffstat counts their lines). */
  written?: (oid: string, bytes: Uint8Array) => void;
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

/**
 * Make the visible directory equal `to` (given that it holds `from`) and move
 * the baseline to `target`, journaled as described above. A failure once
 * files began to change runs the generic recovery — the same one a crash
 * gets on the next call — and reports it as RECOVERY_FAILURE; a successful
 * repair never turns the call into OK.
 */
export async function materialize(
  state: CheckoutState,
  from: FlatTree,
  to: FlatTree,
  target: Baseline,
  hooks: MaterializeHooks,
  recovery: RecoveryContext,
): Promise<FileWrite[]> {
  const writes = plannedWrites(from, to);
  let stage = "journal";
  try {
    if (writes.length > 0) {
      state.writeJournal({ version: 1, target, writes });
      stage = "materialize";
      await hooks.onStage("materialize");
      const progress = state.openJournalProgress(false);
      try {
        await apply(state.dir, state.git, writes, "after", progress.log, hooks.afterWrite, hooks.written);
      } finally {
        progress.close();
      }
    }
    stage = "baseline";
    await hooks.onStage("baseline");
    state.writeBaseline(target);
    state.clearJournal();
  } catch (cause) {
    if (cause instanceof DomainError) throw cause;
    if (stage === "journal") {
      // Nothing visible changed yet: a plain local-state failure.
      throw new DomainError("LOCAL_STATE", "The private state could not be written; no file was changed.", { cause });
    }
    let resynchronized = false;
    try {
      // The journal was written above: finding none means the private state itself is gone.
      const recovered = await recoverInterrupted(state);
      recovered?.finish();
      resynchronized = recovered !== null;
    } catch {
      /* the journal stays; the next call tries the same recovery again */
    }
    throw new DomainError(
      "LOCAL_MUTATION_FAILED",
      resynchronized
        ? "Writing the notebook files failed part-way; the files were put back as they were before this call."
        : "Writing the notebook files failed part-way, and putting them back failed too; the next call retries the repair.",
      {
        recovery: { stage: recovery.stage ?? `${recovery.operation}.${stage}`, remoteAccepted: recovery.remoteAccepted, resynchronized },
        cause,
      },
    );
  }
  return writes;
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
  try {
    lstatSync(file);
    return true;
  } catch {
    return false;
  }
}

/**
 * Whether a recorded step happened: its second record says so, or the disk
 * does, for a kill between the change and that record. A rename happened
 * when its temporary file is gone (only the rename takes it away while the
 * journal exists: leftovers are removed after the journal is). A removal
 * happened when nothing is at the path; a write in place, when something is.
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
 * Whether the file at `w.path`, last set to the dead call's new content,
 * still holds it (so it must be put back): that content, or — for a file
 * that did not exist before and was written in place — a proper prefix of
 * it, which is what a crash in the middle of that write leaves (an empty
 * file included). Anything else there is an edit of it, and is kept.
 */
async function holdsWhatWasWritten(state: CheckoutState, w: FileWrite): Promise<boolean> {
  const now = current(state.dir, w.path);
  if (now === undefined) return false;
  if (now === null || w.after === null) return now === null && w.after === null;
  if (blobId(now) === w.after) return true;
  if (w.before !== null) return false;
  const after = await state.git.readBlob(w.after);
  return now.length < after.length && Buffer.from(after.buffer, after.byteOffset, now.length).equals(now);
}

function removePartials(root: string, dir: string): void {
  let entries;
  try {
    entries = readdirSync(join(root, dir), { withFileTypes: true });
  } catch {
    return;
  }
  for (const e of entries) if (e.isFile() && PARTIAL_FILE.test(e.name)) rmSync(join(root, dir, e.name), { force: true });
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
 * kill in the middle of it leaves a state the next recovery reads right.
 */
export async function recoverInterrupted(state: CheckoutState, afterWrite?: () => Promise<void> | void): Promise<Recovered | null> {
  const journal = state.readJournal();
  if (journal === null) return null;
  const baseline = state.readBaseline();
  const completed =
    baseline !== null && baseline.head === journal.target.head && baseline.generation === journal.target.generation;
  const overrides: BaselineOverride[] = [];
  if (!completed) {
    const progress = state.readJournalProgress();
    const rollback: FileWrite[] = [];
    const edited: FileWrite[] = [];
    for (const w of journal.writes) {
      if (w.after === w.before) continue;
      if (lastSide(state.dir, w, progress.get(w.path) ?? []) === "before") continue;
      if (await holdsWhatWasWritten(state, w)) rollback.push(w);
      else edited.push(w);
    }
    if (edited.length > 0) {
      // The baseline such a file gets is the target's content, not what was
      // written: a pull writes the merge, which holds the checkout's
      // unpublished edits too, and those must stay local edits.
      const target = await targetFiles(state, journal.target.tree);
      // Unreadable (the cache lost it): the baseline's own content stays, the side that loses nothing.
      if (target !== null) for (const w of edited) overrides.push({ path: w.path, oid: target.get(w.path) ?? null });
    }
    const log = state.openJournalProgress(true);
    try {
      await apply(state.dir, state.git, rollback, "before", log.log, afterWrite);
    } finally {
      log.close();
    }
    if (baseline !== null && overrides.length > 0) {
      const files = baseline.tree === null ? new Map<string, string>() : (await state.git.readFlatTree(baseline.tree)).files;
      for (const { path, oid } of overrides) {
        if (oid === null) files.delete(path);
        else files.set(path, oid);
      }
      // Keeps a recorded publication: it is settled next, with these overrides.
      state.replaceBaselineTree(await state.git.storeFlatTree(files));
    }
  }
  const dirs = new Set(journal.writes.map((w) => dirname(w.path)));
  return {
    overrides,
    finish() {
      state.clearJournal();
      // Only now: while the journal exists, a missing temporary file means its rename happened (stepTaken).
      for (const dir of dirs) if (existsSync(join(state.dir, dir))) removePartials(state.dir, dir);
    },
  };
}
