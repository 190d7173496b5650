import type { MergeAttribute } from "../patterns/attributes.ts";
import { linesMergeBytes } from "./lines.ts";
import { type LineRange, mergeBytes, unionMergeBytes } from "./xdiff/index.ts";

/**
 * How a file that both sides changed is merged, chosen per path by the
 * `merge` attribute of `.gitattributes`
 * (docs/decisions/0019-merge-policies.md): the name of one entry of the
 * table below. Everything that differs between policies is in its entry,
 * so the three-tree merge and the remerge of a visible file ask the entry
 * and name no policy (README.md, "Adding a merge policy").
 */
export type MergePolicy = string;

/** A line merge's result: the merged bytes, and the conflict blocks' lines in them. */
export interface FileMerge {
  bytes: Uint8Array;
  conflicts: LineRange[];
}

export interface MergePolicyEntry {
  /** The policy's name: the value of `merge=NAME` that chooses it. */
  readonly name: string;
  /** The line merge of a file both sides changed: baseline, local, accepted. */
  readonly mergeText: (baseline: Uint8Array, local: Uint8Array, accepted: Uint8Array) => FileMerge;
  /**
   * What a file both sides changed becomes:
   * - "in-file": `mergeText`'s result, its conflicts (if any) as marker
   *   blocks in the file, a TEXT_CONFLICT;
   * - "beside": no line merge: local's file stays at its path and
   *   accepted's is written beside it as `NAME~accepted`, a PATH_CONFLICT.
   *   Where no second file can be written (the remerge of one visible file
   *   in the engine), `mergeText`'s result instead.
   */
  readonly onConflict: "in-file" | "beside";
}

const gitText = (baseline: Uint8Array, local: Uint8Array, accepted: Uint8Array): FileMerge => mergeBytes(baseline, local, accepted);

/*
 * The policies. "text" is git's text merge (`git merge-file`); "union"
 * keeps both sides' lines, local's first, and reports none
 * (`git merge-file --union`); "lines": each line stands alone, changes to
 * different lines merge even when adjacent, to the same line conflict
 * (lines.ts); "binary": no line merge, the other side beside the file.
 */
const BUILT_IN: MergePolicyEntry[] = [
  { name: "text", mergeText: gitText, onConflict: "in-file" },
  { name: "union", mergeText: (b, l, a) => ({ bytes: unionMergeBytes(b, l, a), conflicts: [] }), onConflict: "in-file" },
  { name: "lines", mergeText: linesMergeBytes, onConflict: "in-file" },
  { name: "binary", mergeText: gitText, onConflict: "beside" },
];
const POLICIES = new Map(BUILT_IN.map((entry) => [entry.name, entry]));

/** The policy every merge falls back to: git's text merge. */
export const TEXT: MergePolicy = "text";

/** The entry of a policy by name; a name no entry has is git's text merge, as C git falls back for an undefined driver. */
export function policyEntry(name: MergePolicy): MergePolicyEntry {
  return POLICIES.get(name) ?? POLICIES.get(TEXT)!;
}

/**
 * Adds an entry to the table, for a policy defined outside this file (a
 * test's); returns what removes it again. A built-in name cannot be replaced.
 */
export function registerMergePolicy(entry: MergePolicyEntry): () => void {
  if (POLICIES.has(entry.name)) throw new Error(`merge policy ${entry.name} already exists`);
  POLICIES.set(entry.name, entry);
  return () => void POLICIES.delete(entry.name);
}

/*
 * As git's ll-merge chooses a driver: `-merge` is the binary driver, `merge`
 * and no attribute the text one, `merge=NAME` the policy of that name, and
 * a name no policy has falls back to text, as C git does for a driver no
 * configuration defines. So an exported notebook merges in C git as it did
 * here, except `lines`, which C git does not know and merges as text (it
 * can only conflict more there).
 */
export function mergePolicyOf(attribute: MergeAttribute): MergePolicy {
  switch (attribute.state) {
    case "unset":
      return "binary";
    case "value":
      return POLICIES.has(attribute.value) ? attribute.value : TEXT;
    default:
      return TEXT;
  }
}

/** The policy of a merge that no attribute chooses: git's text merge for every path. */
export const TEXT_EVERYWHERE = (_path: string): MergePolicy => TEXT;
