/**
 * Human output of the history commands (log, show), on stderr like every
 * command's: names quoted and free text escaped (quote.ts), so neither an
 * agent's name, a message nor a file's content can drive the terminal.
 */
import type { FileChange, LogEntry, LogResult, ShowResult } from "../../engine/history/log.ts";
import { escapeControls, quotePath } from "./quote.ts";

const STATUS: Record<FileChange["status"], string> = { added: "added", modified: "", deleted: "deleted" };

function plural(n: number, one: string, many: string): string {
  return `${n} ${n === 1 ? one : many}`;
}

function fileLines(files: FileChange[] | null): string[] {
  if (files === null) return ["    (what it changed is unknown: its parent is older than the retained history)"];
  return files.map((f) => `    ${quotePath(f.path)} | +${f.insertions} -${f.deletions}${STATUS[f.status] ? ` (${STATUS[f.status]})` : ""}`);
}

function entryLines(e: LogEntry): string[] {
  const lines = [`generation ${e.generation} · ${e.time} · ${escapeControls(e.agent)}`];
  for (const line of e.message.replace(/\n+$/, "").split("\n")) lines.push(`    ${escapeControls(line)}`);
  if (e.files !== null) {
    lines.push(`    ${plural(e.filesChanged, "file", "files")} changed, ${plural(e.insertions, "insertion", "insertions")}(+), ${plural(e.deletions, "deletion", "deletions")}(-)`);
  }
  lines.push(...fileLines(e.files));
  return lines;
}

export function renderLog(r: LogResult): string {
  if (r.generation === 0) return "log: the store holds no notebook yet\n";
  if (r.entries.length === 0) return `log: no retained publication matches (generations ${r.oldestRetained}–${r.generation} are retained)\n`;
  return `${r.entries.map((e) => entryLines(e).join("\n")).join("\n\n")}\n`;
}

/** Control characters of a patch escaped, tabs and line ends kept: the diff stays readable and harmless. */
function safePatch(patch: string): string {
  return patch.replace(/[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/g, (ch) => escapeControls(ch));
}

export function renderShow(r: ShowResult): string {
  const head = `${entryLines(r).join("\n")}\n`;
  return r.patch === undefined || r.patch === "" ? head : `${head}\n${safePatch(r.patch)}`;
}
