/**
 * What `slivingdoc show G` writes to stdout: each file a publication
 * changed, as git's unified diff (cli/patch.ts over engine/merge/xdiff).
 * One function for the CLI and for `slivingdoc web`'s /api/show, whose
 * `patch` is promised byte for byte the same (docs/web.md).
 */
import type { ShownChange } from "../engine/history/log.ts";

export async function showPatch(changes: readonly ShownChange[]): Promise<string> {
  // Loaded here, on use: the registry that calls this is read at every start.
  const { unifiedHunks } = await import("../engine/merge/xdiff/unified.ts");
  const { filePatch } = await import("./cli/patch.ts");
  return changes.map((c) => filePatch({ ...c, change: c.status, hunks: unifiedHunks(c.beforeText, c.afterText) })).join("");
}
