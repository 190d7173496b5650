/**
 * Enforcing the path sets (errors.md READ_ONLY_PATH). A commit that changes
 * a protected path is refused before any store access, and those files are
 * reset to their last accepted content while the caller's other edits stay.
 * A pull lets the accepted state win on protected paths before merging.
 */
import { isProtected } from "../contract/path-sets.ts";
import { DomainError, type ErrorFile } from "../contract/errors.ts";
import type { PathSets } from "../contract/results.ts";
import { materializeInto } from "./checkout/session-materialize.ts";
import type { OpenCheckout } from "./with-checkout.ts";
import type { FlatTree } from "./git/object-cache.ts";

export function takeAcceptedSide(local: FlatTree, accepted: FlatTree, sets: PathSets): FlatTree {
  if (sets.readOnly.length === 0 && sets.writable.length === 0) return local;
  const result: FlatTree = new Map();
  for (const [path, oid] of local) if (!isProtected(path, sets)) result.set(path, oid);
  for (const [path, oid] of accepted) if (isProtected(path, sets)) result.set(path, oid);
  return result;
}

function describeSets(sets: PathSets): string {
  const parts: string[] = [];
  if (sets.writable.length) parts.push(`writable: ${sets.writable.join(", ")}`);
  if (sets.readOnly.length) parts.push(`read-only: ${sets.readOnly.join(", ")}`);
  return parts.join("; ");
}

export async function refuseProtectedChanges(checkout: OpenCheckout, baselineTree: FlatTree): Promise<void> {
  const sets = checkout.deps.pathSets;
  if (sets.readOnly.length === 0 && sets.writable.length === 0) return;
  const changed = new Set<string>();
  for (const [path, oid] of checkout.local) if (baselineTree.get(path) !== oid) changed.add(path);
  for (const path of baselineTree.keys()) if (!checkout.local.has(path)) changed.add(path);
  const protectedPaths = [...changed].filter((p) => isProtected(p, sets)).sort();
  if (protectedPaths.length === 0) return;

  const reset: FlatTree = new Map(checkout.local);
  for (const path of protectedPaths) {
    const last = baselineTree.get(path);
    if (last === undefined) reset.delete(path);
    else reset.set(path, last);
  }
  // The baseline stays where it is; only the protected files change back.
  // A protected file written to meanwhile stays as it was written; its baseline does not move either way.
  await materializeInto(checkout, reset, checkout.baseline!, { operation: "commit", stage: "commit.readonly", remoteAccepted: "no" }, (path) => baselineTree.get(path) ?? null);
  const files: ErrorFile[] = protectedPaths.map((path) => ({ path, reason: "READ_ONLY", ranges: [] }));
  throw new DomainError(
    "READ_ONLY_PATH",
    `The commit changed paths this process may not change; those files were reset to their last accepted content and nothing was published. Write only where this process may (${describeSets(sets)}), then commit again.`,
    { files },
  );
}
