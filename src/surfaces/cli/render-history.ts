/**
 * Human output of the history commands (log, show), on stderr like every
 * command's: names quoted and free text escaped (quote.ts), so neither an
 * agent's name nor a message can drive the terminal. `show`'s patch is not
 * here: it goes raw to stdout, as `diff`'s does (operations.ts).
 */
import type { FileChange, LogEntry, LogResult } from "../../engine/history/log.ts";
import { escapeControls, quotePath } from "./quote.ts";
import { plural } from "./render.ts";

const STATUS: Record<FileChange["status"], string> = { added: "added", modified: "", deleted: "deleted" };

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

/** What `show` returns: the log entry, plus git's unified diff unless --stat (or the change is unknown). */
export type ShownEntry = LogEntry & { patch?: string };

export function renderShow(r: ShownEntry): string {
  return `${entryLines(r).join("\n")}\n`;
}
