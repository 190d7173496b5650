/**
 * Human output of the CLI, on stderr
 * (docs/decisions/0015-the-cli-refuses-what-it-does-not-know.md): the outcome
 * in a line, the files, and for errors the tokens with the action in its CLI
 * wording. Every path is quoted and every free text has its control
 * characters escaped (quote.ts): a file name must not drive the terminal.
 */
import type { ErrorEnvelope, SuccessResult } from "../../contract/results.ts";
import { ACTION_WORDING } from "../../contract/tokens.ts";
import { escapeControls, quotePath } from "./quote.ts";

const MAX_FILE_LINES = 50;

/** "1 file", "2 files": a count with its noun, for every human line of the CLI. */
export function plural(n: number, one: string, many = `${one}s`): string {
  return `${n} ${n === 1 ? one : many}`;
}

/** A file list with insertions and deletions, cut at 50 lines: a terminal is not the place for ten thousand; --json has them all. */
export function fileStatLines(files: ReadonlyArray<{ path: string; insertions: number; deletions: number }>): string[] {
  const lines = files.slice(0, MAX_FILE_LINES).map((f) => `  ${quotePath(f.path)} | +${f.insertions} -${f.deletions}`);
  if (files.length > MAX_FILE_LINES) lines.push(`  … and ${files.length - MAX_FILE_LINES} more files (--json lists them all)`);
  return lines;
}

/** Paths, one a line, cut at 50 lines as fileStatLines cuts them. */
export function pathLines(paths: readonly string[]): string[] {
  const lines = paths.slice(0, MAX_FILE_LINES).map((p) => `  ${quotePath(p)}`);
  if (paths.length > MAX_FILE_LINES) lines.push(`  … and ${paths.length - MAX_FILE_LINES} more (--json lists them all)`);
  return lines;
}

/** The path sets this process enforces, when it has any. */
function setLines(r: { readOnly: string[]; writable: string[] }): string[] {
  const lines: string[] = [];
  if (r.writable.length) lines.push(`writable paths: ${r.writable.map(quotePath).join(", ")}`);
  if (r.readOnly.length) lines.push(`read-only paths: ${r.readOnly.map(quotePath).join(", ")}`);
  return lines;
}

/**
 * A pull's or a commit's result: one line for the outcome, then the files.
 * `words` say it for the operation: the verb of a change ("pulled"), and
 * the line for nothing changed.
 */
export function renderDiffstat(r: SuccessResult, words: { verb: string; upToDate: (dir: string, generation: number) => string }): string {
  const lines: string[] = [];
  const dir = quotePath(r.path);
  if (r.files.length === 0) {
    lines.push(words.upToDate(dir, r.generation));
  } else {
    lines.push(
      `${words.verb} ${dir} at generation ${r.generation}: ${plural(r.filesChanged, "file", "files")} changed, ` +
        `${plural(r.insertions, "insertion", "insertions")}(+), ${plural(r.deletions, "deletion", "deletions")}(-)`,
    );
    lines.push(...fileStatLines(r.files));
  }
  lines.push(...setLines(r));
  return `${lines.join("\n")}\n`;
}

/**
 * A message in the CLI's own words: the contract's messages name the MCP
 * tools ("Resolve the conflict blocks before notes_commit."), which a person
 * at a terminal does not call. Only the human output changes; `--json` and
 * MCP keep the contract's text.
 */
export function inCliWords(text: string): string {
  return text.replace(/\bnotes_(pull|commit)\b/g, "`slivingdoc $1`");
}

export function renderError(e: ErrorEnvelope): string {
  const lines = [`error: ${e.code} · ${e.reason}`, inCliWords(escapeControls(e.message))];
  if (e.detail !== undefined) lines.push(`detail: ${inCliWords(escapeControls(e.detail))}`);
  for (const f of e.files) {
    const ranges = f.ranges.length ? ` · lines ${f.ranges.map((r) => `${r.start}-${r.end}`).join(", ")}` : "";
    lines.push(`  ${quotePath(f.path)} · ${f.reason}${ranges}`);
  }
  if (e.recovery !== undefined) {
    lines.push(
      `recovery: stage ${escapeControls(e.recovery.stage)}, remote accepted: ${e.recovery.remoteAccepted}, resynchronized: ${e.recovery.resynchronized}`,
    );
  }
  lines.push(`next: ${ACTION_WORDING[e.action]} (${e.action})`, `diagnosticId: ${e.diagnosticId}`, ...setLines(e));
  return `${lines.join("\n")}\n`;
}
