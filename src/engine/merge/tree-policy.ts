/**
 * Each path's merge policy, read from the `.gitattributes` files of one
 * tree (docs/decisions/0019-merge-policies.md). A merge takes it from the
 * accepted tree it merges onto: every process merging onto one accepted
 * state — a pull, a commit, a writer carrying another's proposal — then
 * merges each file the same way, whatever its own checkout holds. A change
 * to `.gitattributes` governs merges once it is accepted, not the merge
 * that brings it.
 */
import type { FlatTree, ObjectCache } from "../git/object-cache.ts";
import { ATTRIBUTES_FILE, attributeRules } from "../patterns/attributes.ts";
import { type MergePolicy, mergePolicyOf, TEXT_EVERYWHERE } from "./policy.ts";
import { decodeText } from "./text.ts";

export async function policyOfTree(git: ObjectCache, tree: FlatTree): Promise<(path: string) => MergePolicy> {
  const files = new Map<string, string>();
  for (const [path, oid] of tree) {
    if (path !== ATTRIBUTES_FILE && !path.endsWith(`/${ATTRIBUTES_FILE}`)) continue;
    // Accepted content is valid UTF-8; a file that is not would be refused before it got here.
    const text = decodeText(await git.readBlob(oid));
    if (text !== null) files.set(path.slice(0, Math.max(0, path.length - ATTRIBUTES_FILE.length - 1)), text);
  }
  if (files.size === 0) return TEXT_EVERYWHERE;
  const rules = attributeRules(files);
  return (path) => mergePolicyOf(rules.merge(path));
}
