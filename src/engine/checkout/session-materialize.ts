/**
 * Bringing a session's visible files to a target: materialising a tree
 * under the journal (materialize.ts) and moving the baseline, merging again
 * a file written to since the scan, and refusing beforehand files too big
 * for this checkout.
 */
import { DomainError, type ErrorFile } from "../../contract/errors.ts";
import type { FlatTree } from "../git/object-cache.ts";
import { lineCount } from "../merge/diffstat.ts";
import type { MergePolicy } from "../merge/policy.ts";
import { mergeTrees, sameTree, type TreeMerge } from "../merge/tree-merge.ts";
import { policyOfTree } from "../merge/tree-policy.ts";
import { materialize, type RecoveryContext } from "./materialize.ts";
import { tooBigAdvice } from "./scan.ts";
import type { CheckoutSession } from "./session.ts";
import { rememberOrSave } from "./session-scan.ts";
import type { Baseline } from "./state.ts";
import type { Remerge, WrittenFile } from "./visible-writes.ts";

/**
 * Files the accepted state would bring (new or changed since the baseline)
 * that are over the most a notebook file may hold, which another tool or
 * version published: refused by name before any is read or written, so
 * nothing here changes (scan.ts refuses such a file of one's own).
 */
export async function refuseOversizeAccepted(checkout: CheckoutSession, baseline: FlatTree, accepted: FlatTree): Promise<void> {
  const limit = checkout.deps.maxFileBytes;
  const files: ErrorFile[] = [];
  for (const [path, oid] of accepted) {
    if (baseline.get(path) === oid) continue;
    if (await checkout.git.blobOver(oid, limit)) files.push({ path, reason: "INVALID_CONTENT", ranges: [] });
  }
  if (files.length === 0) return;
  const names = files.map((f) => f.path).join(", ");
  throw new DomainError("INVALID_CONTENT", `The notebook holds files this checkout cannot take. ${tooBigAdvice(names, limit)} Nothing here was changed.`, { files });
}

/**
 * Make the visible directory `to` and move the baseline to `target`
 * (materialize.ts), then remember the written files in the stat cache so the
 * next scan need not read or store them again. A file written to since the
 * scan is merged again by `remerge`, or left as it is: its baseline is then
 * `leftBase`'s. Returns the files written, with the content they got, and
 * the paths left.
 */
export async function materializeInto(
  checkout: CheckoutSession,
  to: FlatTree,
  target: Baseline,
  recovery: RecoveryContext,
  leftBase: (path: string) => string | null,
  remerge?: Remerge,
): Promise<{ written: WrittenFile[]; left: string[] }> {
  const b = checkout.baseline;
  // Already there (a call that found nothing to do): no file to write, no state to replace.
  if (b && b.generation === target.generation && b.head === target.head && b.tree === target.tree && sameTree(checkout.local, to)) return { written: [], left: [] };
  const written = (oid: string, bytes: Uint8Array) => checkout.lineCounts.set(oid, lineCount(bytes));
  const done = await materialize(checkout.state, checkout.local, to, target, { ...checkout.deps, written, replaced: checkout.replaced, ...(remerge ? { remerge } : {}) }, recovery, leftBase);
  checkout.baseline = done.baseline;
  if (done.written.length > 0) {
    checkout.statCache.recordWrites(done.written);
    try {
      rememberOrSave(checkout, done.written.length);
    } catch {
      /* only a speed-up: the next scan reads those files instead */
    }
  }
  return done;
}

/**
 * Bring the visible files to `merge.result` and the baseline to `target`,
 * whose files are `targetFiles`. A file written to since the scan (by an
 * editor, a script, another agent in the same directory) is not replaced
 * (visible-writes.ts): it is merged again at once, its new content as the
 * local side, against the same target and the same baseline — `firstBase`,
 * the version of it the target already holds: the baseline the merge used
 * when the target holds none of the checkout's edits (a pull), the scanned
 * files when it publishes them (a commit). Where that keeps failing, or
 * where the merge conflicts and `conflicts` is "leave", the file is left as
 * it is, with that baseline, for the next call's merge.
 *
 * `prepare` turns local files into the merge's local side (pull's protected
 * paths). "leave": a commit that landed answers OK, and must not have
 * written markers. Returns the merge the files now hold: the conflicts of
 * the files written, and files left as they were first scanned.
 */
export async function bringFiles(
  checkout: CheckoutSession,
  merge: TreeMerge,
  target: Baseline,
  targetFiles: FlatTree,
  recovery: RecoveryContext,
  firstBase: FlatTree,
  options: { prepare?: (local: FlatTree) => FlatTree; conflicts: "write" | "leave" },
): Promise<TreeMerge> {
  const { git } = checkout;
  const scanned = checkout.local;
  const conflicts = new Map(merge.conflicts.map((c) => [c.path, c]));
  const one = (path: string, oid: string | null | undefined): FlatTree => (oid == null ? new Map() : new Map([[path, oid]]));
  // The policy of the whole target tree (this path's alone has no
  // .gitattributes), read once, at the first remerge. A remerge writes one
  // path, so a version kept beside it (a policy whose conflict writes the
  // other side beside the file, merge/policy.ts) would never reach the
  // disk: there both sides show as a text conflict instead.
  let ofTarget: Promise<(path: string) => MergePolicy> | undefined;
  const remerge: Remerge = async (path, now) => {
    const written = one(path, now === null ? null : await git.writeBlob(now));
    // Only this path's side: `prepare` may bring in other paths (pull's protected ones).
    const local = one(path, (options.prepare?.(written) ?? written).get(path));
    const policy = await (ofTarget ??= policyOfTree(git, targetFiles));
    const again = await mergeTrees(git, one(path, firstBase.get(path)), local, one(path, targetFiles.get(path)), new Map(), policy, { beside: false });
    const conflict = again.conflicts.find((c) => c.path === path);
    if (conflict !== undefined && options.conflicts === "leave") return null;
    if (conflict !== undefined) conflicts.set(path, conflict);
    else conflicts.delete(path);
    return { target: again.result.get(path) ?? null };
  };
  const done = await materializeInto(checkout, merge.result, target, recovery, (path) => firstBase.get(path) ?? null, remerge);
  const result = new Map(merge.result);
  for (const w of done.written) {
    if (w.after === null) result.delete(w.path);
    else result.set(w.path, w.after);
  }
  for (const path of done.left) {
    conflicts.delete(path);
    const oid = scanned.get(path);
    if (oid === undefined) result.delete(path);
    else result.set(path, oid);
  }
  const list = [...conflicts.values()].sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
  return { result, conflicts: list };
}
