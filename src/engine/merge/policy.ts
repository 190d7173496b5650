import type { MergeAttribute } from "../patterns/attributes.ts";

/**
 * How a file that both sides changed is merged, chosen per path by the
 * `merge` attribute of `.gitattributes`
 * (docs/decisions/0019-merge-policies.md):
 * - "text": git's line merge with conflict blocks (`git merge-file`);
 * - "union": git's union merge (`git merge-file --union`): every conflict
 *   keeps both sides' lines, local's first, and none is reported;
 * - "lines": each line stands alone: changes to different lines merge even
 *   when adjacent, changes to the same line conflict (lines.ts);
 * - "binary": no line merge: local's file stays, accepted's goes beside it.
 */
export type MergePolicy = "text" | "union" | "lines" | "binary";

/*
 * As git's ll-merge chooses a driver: `-merge` is the binary driver, `merge`
 * and no attribute the text one, and a driver name git does not know falls
 * back to text, as C git does for a driver no configuration defines. So an
 * exported notebook merges in C git as it did here, except `lines`, which C
 * git does not know and merges as text (it can only conflict more there).
 */
export function mergePolicyOf(attribute: MergeAttribute): MergePolicy {
  switch (attribute.state) {
    case "unset":
      return "binary";
    case "value":
      return attribute.value === "binary" || attribute.value === "union" || attribute.value === "lines"
        ? attribute.value
        : "text";
    default:
      return "text";
  }
}

/** The policy of a merge that no attribute chooses: git's text merge for every path. */
export const TEXT_EVERYWHERE = (_path: string): MergePolicy => "text";
