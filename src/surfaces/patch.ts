/**
 * The one patch writer, for `slivingdoc diff` and `slivingdoc show`: what
 * `git diff --no-renames` prints with core.quotePath=false, per file the
 * `diff --git` header, the mode and `index` lines, `---`/`+++` and the
 * hunks (engine/merge/xdiff/unified.ts: the indent heuristic and function
 * lines). Every file is a regular text file, mode 100644. Names are quoted
 * as everywhere in human output (cli/quote.ts). The `index` line carries
 * abbreviated blob ids, as git's does; diff's `--json` carries the hunks
 * without it. It is data, not a rendering: `show`'s result carries it, and
 * `slivingdoc web`'s /api/show promises the same bytes (docs/web.md).
 */
import type { ShownChange } from "../engine/history/log.ts";
import { quotePath } from "./cli/quote.ts";

export interface PatchFile {
  path: string;
  change: "added" | "modified" | "deleted";
  before: string | null;
  after: string | null;
  hunks: string;
}

const ZERO = "0000000";
const short = (oid: string | null) => (oid === null ? ZERO : oid.slice(0, 7));

/** The headers and hunks of one file, byte for byte git's. */
export function filePatch(f: PatchFile): string {
  const a = quotePath(`a/${f.path}`);
  const b = quotePath(`b/${f.path}`);
  const lines = [`diff --git ${a} ${b}`];
  if (f.change === "added") lines.push("new file mode 100644", `index ${ZERO}..${short(f.after)}`);
  else if (f.change === "deleted") lines.push("deleted file mode 100644", `index ${short(f.before)}..${ZERO}`);
  else lines.push(`index ${short(f.before)}..${short(f.after)} 100644`);
  // An empty file added or deleted has no hunks, and git prints no ---/+++ for it.
  // git ends these two lines with a tab when the name holds a space, as GNU diff does; /dev/null has none.
  const tab = f.path.includes(" ") ? "\t" : "";
  if (f.hunks !== "") lines.push(`--- ${f.change === "added" ? "/dev/null" : a + tab}`, `+++ ${f.change === "deleted" ? "/dev/null" : b + tab}`);
  return `${lines.join("\n")}\n${f.hunks}`;
}

/** What `slivingdoc show G` writes to stdout: each file the publication changed, as git's unified diff; one function for the CLI and the web view. */
export async function showPatch(changes: readonly ShownChange[]): Promise<string> {
  // Loaded here, on use: the registry that calls this is read at every start.
  const { unifiedHunks } = await import("../engine/merge/xdiff/unified.ts");
  return changes.map((c) => filePatch({ ...c, change: c.status, hunks: unifiedHunks(c.beforeText, c.afterText) })).join("");
}
