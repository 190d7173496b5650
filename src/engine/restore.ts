/**
 * restore, the way to undo a mistake (docs/history.md): write a retained
 * generation's version of some files, or of the whole notebook, into a
 * checkout as ordinary local edits — to review with `diff` and publish with
 * `commit`. Nothing is published and history is never rewritten: the
 * baseline stays where it is, so the next commit merges the restored files
 * like any other edit.
 *
 * - Which files: every path at or below a named notebook path (a file or a
 *   directory), in the generation or in the checkout; with no path, the
 *   whole notebook. A file the generation lacks is deleted.
 * - Unpublished edits are never overwritten silently: a file restore would
 *   change that differs from the baseline is refused by name (INVALID_REQUEST
 *   · MALFORMED_INPUT, nothing written) unless `force` is given.
 * - Protected paths (path sets) are never written: named ones are refused
 *   with READ_ONLY_PATH; a whole-notebook restore leaves them out and says so.
 * - Writes go through materialize's journal, under the checkout's lock, like
 *   a pull's: a crash mid-way puts the files back.
 */
import { DomainError, type ErrorFile } from "../contract/errors.ts";
import { isAtOrBelowEntry, isProtected } from "../contract/path-sets.ts";
import type { FileStat, PathSets } from "../contract/results.ts";
import { treeDiffStat } from "./merge/diffstat.ts";
import { baselineFilesOrRefuse } from "./checkout/session-baseline.ts";
import { materializeInto } from "./checkout/session-materialize.ts";
import { pullRequired } from "./checkout/session.ts";
import { scanLocal } from "./checkout/session-scan.ts";
import type { EngineDeps } from "./engine.ts";
import { type OpenCheckout, withCheckout } from "./with-checkout.ts";
import type { FlatTree } from "./git/object-cache.ts";
import { type History, readGenerationTree, readHistoryBlob, withHistory } from "./history/read.ts";
import { historyWentBackwards } from "./publish/went-backwards.ts";

export interface RestoreInput {
  /** The checkout's directory. */
  path: string;
  /** The generation to restore from. */
  from: number;
  /** Notebook paths (files or directories) as given; none for the whole notebook. */
  paths: string[];
  /** Overwrite files with unpublished local edits too. */
  force: boolean;
}

export interface RestoreOutcome {
  /** The checkout's real path. */
  path: string;
  /** The generation restored from. */
  from: number;
  /** The checkout's baseline generation (unchanged). */
  generation: number;
  /** What changed on disk: local before → restored. */
  files: FileStat[];
  /** Protected paths a whole-notebook restore left as they were. */
  skipped: string[];
}

const byPath = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

/** Notebook-relative paths as given (`./docs/`, `docs//a.md`) in their one form; MALFORMED_INPUT for what cannot name a file. */
export function normalizeNotebookPath(raw: string): string {
  const segments = raw.split("/").filter((s) => s !== "" && s !== ".");
  if (raw.startsWith("/") || raw.includes("\\") || segments.length === 0 || segments.includes("..") || /[\u0000-\u001f]/.test(raw)) {
    throw new DomainError("MALFORMED_INPUT", `"${raw.slice(0, 80)}" is not a notebook path; name files or directories relative to the notebook directory, without .. or a leading /.`, {
      named: [raw.slice(0, 80)],
    });
  }
  return segments.join("/");
}

export async function restore(deps: EngineDeps, input: RestoreInput): Promise<RestoreOutcome> {
  const entries = [...new Set(input.paths.map(normalizeNotebookPath))];
  return withCheckout(deps, input.path, { create: false }, async (checkout) => {
    // No baseline to restore onto.
    if (checkout.baseline === null) throw pullRequired(checkout.lost, ", then restore.");
    await scanLocal(checkout);
    const baseline = await baselineFilesOrRefuse(checkout);
    await checkout.deps.onStage("fetch");
    return await withHistory(checkout.deps, (history) => restoreFrom(checkout, history, baseline, { ...input, paths: entries }));
  });
}

/** Restore `input` (its paths normalized) from `history` into the checkout, whose baseline holds `baseline`. */
async function restoreFrom(checkout: OpenCheckout, history: History, baseline: FlatTree, input: RestoreInput): Promise<RestoreOutcome> {
  const at = checkout.baseline!;
  // Restoring from a store that went backwards would write its older files over ones it lost.
  const commit = history.publications.find((p) => p.generation === at.generation)?.commit ?? null;
  const backwards = historyWentBackwards(at, history.manifest, commit);
  if (backwards !== null) throw backwards;
  const target = await readGenerationTree(history, input.from);
  const local = checkout.local;
  const plan = planRestore(local, target, input, checkout.deps.pathSets);
  refuseRestore(plan, input, local, baseline);
  // The restored blobs into the checkout's own object cache, where materialize and the journal read them.
  for (const p of plan.changing) {
    const oid = target.get(p);
    if (oid !== undefined && !(await checkout.git.has(oid))) await checkout.git.writeBlob(await readHistoryBlob(history, oid));
  }
  const { to } = plan;
  // A file written to since the scan is left as written (materialize.ts): not restored, and not counted.
  const { left } = await materializeInto(checkout, to, at, { operation: "restore", remoteAccepted: "no" }, (p) => baseline.get(p) ?? null);
  for (const p of left) {
    const oid = local.get(p);
    if (oid === undefined) to.delete(p);
    else to.set(p, oid);
  }
  const files = await treeDiffStat(checkout.git, local, to, checkout.lineCounts);
  return { path: checkout.dir, from: input.from, generation: checkout.baseline!.generation, files, skipped: plan.skipped };
}

/** What a restore changes: the files it brings to `target`'s version, and the protected ones it leaves. */
interface RestorePlan {
  /** The visible files as the restore leaves them. */
  to: FlatTree;
  /** Paths the restore writes or removes, sorted. */
  changing: string[];
  /** Protected paths it would change, left as they are, sorted. */
  skipped: string[];
}

/** The plan for restoring `input.paths` (all, when none) from `target` over `local`; MALFORMED_INPUT for a path that names no file in either. */
function planRestore(local: FlatTree, target: FlatTree, input: RestoreInput, sets: PathSets): RestorePlan {
  const entries = input.paths;
  for (const e of entries) {
    const found = (t: FlatTree) => [...t.keys()].some((p) => isAtOrBelowEntry(e, p));
    if (!found(target) && !found(local)) {
      throw new DomainError("MALFORMED_INPUT", `"${e}" names no file in generation ${input.from} nor in the checkout; nothing was restored.`, { named: [e] });
    }
  }
  const selected = (p: string) => entries.length === 0 || entries.some((e) => isAtOrBelowEntry(e, p));
  const to: FlatTree = new Map(local);
  const changing: string[] = [];
  const skipped: string[] = [];
  for (const p of new Set([...local.keys(), ...target.keys()])) {
    if (!selected(p) || local.get(p) === target.get(p)) continue;
    if (isProtected(p, sets)) {
      skipped.push(p);
      continue;
    }
    changing.push(p);
    const oid = target.get(p);
    if (oid === undefined) to.delete(p);
    else to.set(p, oid);
  }
  skipped.sort(byPath);
  changing.sort(byPath);
  return { to, changing, skipped };
}

/**
 * Refuse a restore that names protected paths (READ_ONLY_PATH), or would
 * overwrite unpublished edits — files that differ from the baseline's
 * `baseline` — without `force` (MALFORMED_INPUT). Nothing is written then.
 */
function refuseRestore(plan: RestorePlan, input: RestoreInput, local: FlatTree, baseline: FlatTree): void {
  if (input.paths.length > 0 && plan.skipped.length > 0) {
    const files: ErrorFile[] = plan.skipped.map((p) => ({ path: p, reason: "READ_ONLY", ranges: [] }));
    throw new DomainError(
      "READ_ONLY_PATH",
      "The restore would change paths this process may not change; nothing was restored. Name only paths this process may write.",
      { files },
    );
  }
  const unpublished = plan.changing.filter((p) => local.get(p) !== baseline.get(p));
  if (unpublished.length > 0 && !input.force) {
    const shown = unpublished.slice(0, 20).join(", ") + (unpublished.length > 20 ? `, and ${unpublished.length - 20} more` : "");
    throw new DomainError(
      "MALFORMED_INPUT",
      `The restore would overwrite unpublished local edits (${shown}); nothing was restored. Commit them first, leave those paths out, or add --force to overwrite them.`,
      { named: unpublished },
    );
  }
}
