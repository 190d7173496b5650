/**
 * Writing a tree into the visible directory, crash-safely, and without
 * overwriting what someone else writes meanwhile.
 *
 * Before the first visible file changes, a journal in the private state
 * records every file to be rewritten with the blob ids of its content
 * before and after (both are in the object cache). If the process dies
 * before the baseline moves, `recoverInterrupted` (recovery.ts) puts back
 * the previous content of every file that holds what the interrupted
 * operation wrote — and leaves alone any file changed since — so the
 * visible directory and the baseline agree again and no unpublished edit
 * is lost.
 *
 * The files themselves are written one at a time (visible-writes.ts): only
 * while a file still holds what the call computed from, and a file
 * someone wrote since the scan is merged again with what was written, or
 * left as it is for the next call.
 */
import type { FileClock } from "../../contract/clock.ts";
import { DomainError, type RecoveryReport } from "../../contract/errors.ts";
import type { Baseline, CheckoutState } from "./state.ts";
import type { FlatTree } from "../git/object-cache.ts";
import { diskFullBeforeChange, diskFullWhileWriting, isDiskFull } from "./disk-full.ts";
import { recoverInterrupted, treeWithOverrides } from "./recovery.ts";
import type { ReplacedFiles } from "./replaced-files.ts";
import { apply, type FileWrite, type Remerge, type ReplaceMoment, type Writer, writerClock, type WrittenFile } from "./visible-writes.ts";

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

export interface MaterializeHooks extends FileClock {
  onStage: (stage: string) => Promise<void> | void;
  /** After each visible file is written or removed; crash tests stop the process here. */
  afterWrite?: () => Promise<void> | void;
  /** Each blob written, with its bytes, while they are at hand (the diffstat counts their lines). */
  written?: (oid: string, bytes: Uint8Array) => void;
  /** Right before a file, checked to hold what was scanned, is replaced or removed: where tests write to it. */
  onReplace?: (path: string, moment: ReplaceMoment) => void;
  /** How a file written to since the scan is merged again (visible-writes.ts, apply); without it, such a file is left as it is. */
  remerge?: Remerge;
  /** Where the old files replaced stay open, to be read once more before the call answers (visible-writes.ts). */
  replaced?: ReplacedFiles;
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
      done = await writeFiles(state, writes, hooks);
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
    throw await failure(state, cause, stage, hooks, recovery);
  }
}

/** The journaled writes, each file brought from `before` to `after` (visible-writes.ts). */
async function writeFiles(state: CheckoutState, writes: FileWrite[], hooks: MaterializeHooks): Promise<{ written: WrittenFile[]; left: string[] }> {
  const progress = state.openJournalProgress(false);
  const writer: Writer = { ...writerClock(hooks), root: state.dir, git: state.git, side: "after", progress, made: new Set(), onReplace: hooks.onReplace, checkLock: () => state.checkLock(), replaced: hooks.replaced };
  try {
    const changes = writes.map((w) => ({ path: w.path, expected: w.before, target: w.after }));
    return await apply(writer, changes, hooks);
  } finally {
    progress.close();
  }
}

/** What the call answers for a failure at `stage` that is not a DomainError; once files began to change, after the recovery. */
async function failure(state: CheckoutState, cause: unknown, stage: string, hooks: MaterializeHooks, recovery: RecoveryContext): Promise<DomainError> {
  const places = { notebook: state.dir, privateState: state.stateDir };
  if (stage === "journal") {
    // Nothing visible changed yet: a plain local-state failure.
    if (isDiskFull(cause)) return diskFullBeforeChange(cause, places);
    return new DomainError("LOCAL_STATE", "The private state could not be written; no file was changed.", { cause });
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
  return new DomainError(
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
