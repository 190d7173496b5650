/**
 * `--stat` of `slivingdoc diff`: git's diffstat, in its layout for an
 * 80-column pipe. Names are quoted as everywhere in human output
 * (quote.ts). The patch itself is written by the one patch writer
 * (surfaces/patch.ts), which `show`'s result carries too.
 */
import { quotePath } from "./quote.ts";
import { plural } from "./render.ts";

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
