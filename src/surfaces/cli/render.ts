/**
 * Human output of the CLI, on stderr (decisions §7): the outcome in a line,
 * the files, and for errors the tokens with the action in its CLI wording.
 */
import type { ErrorEnvelope, SuccessResult } from "../../contract/results.ts";
import { ACTION_WORDING } from "../../contract/tokens.ts";

const MAX_FILE_LINES = 50;

function plural(n: number, one: string, many: string): string {
  return `${n} ${n === 1 ? one : many}`;
}

/** The path sets this process enforces, when it has any. */
function setLines(r: { readOnly: string[]; writable: string[] }): string[] {
  const lines: string[] = [];
  if (r.writable.length) lines.push(`writable paths: ${r.writable.join(", ")}`);
  if (r.readOnly.length) lines.push(`read-only paths: ${r.readOnly.join(", ")}`);
  return lines;
}

export function renderSuccess(operation: "pull" | "commit", r: SuccessResult): string {
  const lines: string[] = [];
  if (r.files.length === 0) {
    lines.push(
      operation === "pull"
        ? `pulled ${r.path}: up to date at generation ${r.generation}`
        : `nothing to publish in ${r.path}; up to date at generation ${r.generation}`,
    );
  } else {
    const verb = operation === "pull" ? "pulled" : "committed";
    lines.push(
      `${verb} ${r.path} at generation ${r.generation}: ${plural(r.filesChanged, "file", "files")} changed, ` +
        `${plural(r.insertions, "insertion", "insertions")}(+), ${plural(r.deletions, "deletion", "deletions")}(-)`,
    );
    // A terminal is not the place for ten thousand lines; --json has them all.
    for (const f of r.files.slice(0, MAX_FILE_LINES)) lines.push(`  ${f.path} | +${f.insertions} -${f.deletions}`);
    if (r.files.length > MAX_FILE_LINES) lines.push(`  … and ${r.files.length - MAX_FILE_LINES} more files (--json lists them all)`);
  }
  lines.push(...setLines(r));
  return `${lines.join("\n")}\n`;
}

export function renderError(e: ErrorEnvelope): string {
  const lines = [`error: ${e.code} · ${e.reason}`, e.message];
  if (e.detail !== undefined) lines.push(`detail: ${e.detail}`);
  for (const f of e.files) {
    const ranges = f.ranges.length ? ` · lines ${f.ranges.map((r) => `${r.start}-${r.end}`).join(", ")}` : "";
    lines.push(`  ${f.path} · ${f.reason}${ranges}`);
  }
  if (e.recovery !== undefined) {
    lines.push(
      `recovery: stage ${e.recovery.stage}, remote accepted: ${e.recovery.remoteAccepted}, resynchronized: ${e.recovery.resynchronized}`,
    );
  }
  lines.push(`next: ${ACTION_WORDING[e.action]} (${e.action})`, `diagnosticId: ${e.diagnosticId}`, ...setLines(e));
  return `${lines.join("\n")}\n`;
}
