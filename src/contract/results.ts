/**
 * The two result shapes of mcp-tools.md — the success result and the error
 * envelope — and their candid text items. The CLI's `--json` prints the same
 * objects, so both surfaces build them here.
 */
import { DomainError, type ErrorFile, type RecoveryReport } from "./errors.ts";
import { randomHex } from "./random-hex.ts";
import { type Confidential, scrubText } from "./scrub.ts";
import type { Action, Code, EngineDetail, Reason } from "./tokens.ts";

export interface FileStat {
  path: string;
  insertions: number;
  deletions: number;
}

/** What the engine returns for a successful pull or commit. */
export interface OperationOutcome {
  path: string;
  generation: number;
  files: FileStat[];
  /** How many entries the ignore rules left out of the scan: the CLI names the count, so a rule that hides new files is seen; the tools' results do not carry it. */
  ignored?: number;
}

export interface PathSets {
  readOnly: string[];
  writable: string[];
}

export const NO_PATH_SETS: PathSets = Object.freeze({ readOnly: [], writable: [] }) as PathSets;

export interface SuccessResult {
  code: "OK";
  path: string;
  generation: number;
  filesChanged: number;
  insertions: number;
  deletions: number;
  files: FileStat[];
  readOnly: string[];
  writable: string[];
}

export interface ErrorEnvelope {
  code: Code;
  reason: Reason;
  action: Action;
  diagnosticId: string;
  retryable: boolean;
  message: string;
  detail?: EngineDetail;
  files: ErrorFile[];
  recovery?: RecoveryReport;
  readOnly: string[];
  writable: string[];
}

export function successResult(outcome: OperationOutcome, sets: PathSets): SuccessResult {
  let insertions = 0;
  let deletions = 0;
  for (const f of outcome.files) {
    insertions += f.insertions;
    deletions += f.deletions;
  }
  return {
    code: "OK",
    path: outcome.path,
    generation: outcome.generation,
    filesChanged: outcome.files.length,
    insertions,
    deletions,
    files: outcome.files,
    readOnly: [...sets.readOnly],
    writable: [...sets.writable],
  };
}

/** A fresh 16-character lowercase hexadecimal diagnostic id. */
export function newDiagnosticId(): string {
  return randomHex(8);
}

/**
 * The envelope of a domain error. Its message is scrubbed of what the process
 * knows must not leak (`confidential`: credentials, the private root) and of
 * store keys and object ids, while the files, other values of the caller's
 * (DomainError.named) and path sets it names stay as they are, in `files`
 * and in the message.
 */
export function errorEnvelope(
  error: DomainError,
  diagnosticId: string,
  sets: PathSets,
  confidential: Pick<Confidential, "credentials" | "privatePaths"> = {},
): ErrorEnvelope {
  const callerValues = [...error.files.map((f) => f.path), ...error.named, ...sets.readOnly, ...sets.writable];
  const envelope: ErrorEnvelope = {
    code: error.code,
    reason: error.reason,
    action: error.action,
    diagnosticId,
    retryable: error.retryable,
    message: scrubText(error.message, { ...confidential, callerValues }),
    files: error.files.map((f) => ({ path: f.path, reason: f.reason, ranges: f.ranges.map((r) => ({ ...r })) })),
    readOnly: [...sets.readOnly],
    writable: [...sets.writable],
  };
  if (error.detail !== undefined) envelope.detail = error.detail;
  if (error.recovery !== undefined) envelope.recovery = { ...error.recovery };
  // Key order as in mcp-tools.md, so `--json` output reads like that page.
  const { code, reason, action, retryable, message, detail, files, recovery, readOnly, writable } = envelope;
  return {
    code,
    reason,
    action,
    diagnosticId,
    retryable,
    message,
    ...(detail !== undefined ? { detail } : {}),
    files,
    ...(recovery !== undefined ? { recovery } : {}),
    readOnly,
    writable,
  };
}

/** Suffix of the success text item when path sets are configured (mcp-tools.md). */
export function pathSetSuffix(sets: PathSets): string {
  const w = sets.writable.join(", ");
  const r = sets.readOnly.join(", ");
  if (sets.writable.length && sets.readOnly.length) return ` (writable: ${w}; read-only: ${r}; longest match decides)`;
  if (sets.writable.length) return ` (writable: ${w})`;
  if (sets.readOnly.length) return ` (read-only: ${r})`;
  return "";
}

export function successText(result: SuccessResult): string {
  return result.path + pathSetSuffix(result);
}

function rangesText(file: ErrorFile): string {
  if (file.ranges.length === 0) return "";
  return ` · lines ${file.ranges.map((r) => `${r.start}-${r.end}`).join(", ")}`;
}

/** The candid text item: the whole safe diagnostic for clients that drop structured content. */
export function errorText(envelope: ErrorEnvelope): string {
  const lines = [`${envelope.code} · ${envelope.reason}`, envelope.message];
  if (envelope.detail !== undefined) lines.push(`detail: ${envelope.detail}`);
  for (const f of envelope.files) lines.push(`file: ${f.path} · ${f.reason}${rangesText(f)}`);
  lines.push(`action: ${envelope.action}`, `retryable: ${envelope.retryable}`, `diagnosticId: ${envelope.diagnosticId}`);
  if (envelope.recovery !== undefined) {
    const r = envelope.recovery;
    lines.push(`recovery: stage ${r.stage} · remoteAccepted ${r.remoteAccepted} · resynchronized ${r.resynchronized}`);
  }
  if (envelope.writable.length) lines.push(`writable: ${envelope.writable.join(", ")}`);
  if (envelope.readOnly.length) lines.push(`read-only: ${envelope.readOnly.join(", ")}`);
  return lines.join("\n");
}
