/**
 * The one patch writer, for `slivingdoc diff` and `slivingdoc show`: what
 * `git diff --no-renames` prints with core.quotePath=false, per file the
 * `diff --git` header, the mode and `index` lines, `---`/`+++` and the
 * hunks (engine/merge/xdiff/unified.ts: the indent heuristic and function
 * lines); and `--stat` in git's layout for an 80-column pipe. Every file is
 * a regular text file, mode 100644. Names are quoted as everywhere in human
 * output (quote.ts). The `index` line carries abbreviated blob ids, as
 * git's does; diff's `--json` carries the hunks without it.
 */
import { quotePath } from "./quote.ts";
import { plural } from "./render.ts";

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

/* git's scale_linear: at least one column for any change. */
function scale(it: number, width: number, max: number): number {
  return it === 0 ? 0 : 1 + Math.floor((it * (width - 1)) / max);
}

/** `git diff --stat` for a pipe (80 columns), and its summary line; empty when nothing changed. */
export function renderStat(files: Array<{ path: string; insertions: number; deletions: number }>): string {
  if (files.length === 0) return "";
  const names = files.map((f) => quotePath(f.path));
  const width = 80;
  let maxLen = 0;
  let maxChange = 0;
  for (let i = 0; i < files.length; i++) {
    maxLen = Math.max(maxLen, [...names[i]!].length);
    maxChange = Math.max(maxChange, files[i]!.insertions + files[i]!.deletions);
  }
  const numberWidth = String(maxChange).length;
  let graphWidth = maxChange;
  let nameWidth = maxLen;
  if (nameWidth + numberWidth + 6 + graphWidth > width) {
    if (graphWidth > Math.floor((width * 3) / 8) - numberWidth - 6) {
      graphWidth = Math.floor((width * 3) / 8) - numberWidth - 6;
      if (graphWidth < 6) graphWidth = 6;
    }
    if (nameWidth > width - numberWidth - 6 - graphWidth) nameWidth = width - numberWidth - 6 - graphWidth;
    else graphWidth = width - numberWidth - 6 - nameWidth;
  }
  const out: string[] = [];
  let insertions = 0;
  let deletions = 0;
  for (let i = 0; i < files.length; i++) {
    const f = files[i]!;
    insertions += f.insertions;
    deletions += f.deletions;
    let name = names[i]!;
    const chars = [...name];
    // git cuts a long name from the left, at a slash when one is left, behind "...".
    if (chars.length > nameWidth) {
      let tail = chars.slice(chars.length - (nameWidth - 3)).join("");
      const slash = tail.indexOf("/");
      if (slash >= 0) tail = tail.slice(slash);
      name = `...${tail}`;
    }
    const pad = " ".repeat(Math.max(0, nameWidth - [...name].length));
    let add = f.insertions;
    let del = f.deletions;
    if (graphWidth <= maxChange) {
      let total = scale(add + del, graphWidth, maxChange);
      if (total < 2 && add && del) total = 2;
      if (add < del) {
        add = scale(add, graphWidth, maxChange);
        del = total - add;
      } else {
        del = scale(del, graphWidth, maxChange);
        add = total - del;
      }
    }
    const count = f.insertions + f.deletions;
    out.push(` ${name}${pad} | ${String(count).padStart(numberWidth)}${count ? " " : ""}${"+".repeat(add)}${"-".repeat(del)}`);
  }
  let summary = ` ${plural(files.length, "file")} changed`;
  if (insertions || !deletions) summary += `, ${plural(insertions, "insertion")}(+)`;
  if (deletions || !insertions) summary += `, ${plural(deletions, "deletion")}(-)`;
  out.push(summary);
  return `${out.join("\n")}\n`;
}
