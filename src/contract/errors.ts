/**
 * Domain errors: values with tokens, built only here from the token table.
 * The engine throws `DomainError`; the surfaces turn it into the error
 * envelope of mcp-tools.md with `toErrorEnvelope`.
 */
import { type Action, type Code, ENGINE_DETAILS, type EngineDetail, type FileReason, REASONS, type Reason, CODES } from "./tokens.ts";

export interface LineRange {
  start: number;
  end: number;
}

export interface ErrorFile {
  path: string;
  reason: FileReason;
  ranges: LineRange[];
}

export interface RecoveryReport {
  stage: string;
  remoteAccepted: "yes" | "no" | "unknown";
  resynchronized: boolean;
}

export interface DomainErrorInit {
  files?: ErrorFile[];
  /** Only for ENGINE_FAILED, and only from the closed set. */
  detail?: EngineDetail;
  /** Only for RECOVERY_FAILURE. */
  recovery?: RecoveryReport;
  /** The underlying cause, for the log record only; never sent to a caller. */
  cause?: unknown;
  /**
   * The caller's own values the message names beyond `files` (paths it gave,
   * files of its checkout): the scrubber leaves them as they are, whatever
   * they look like (scrub.ts).
   */
  named?: readonly string[];
}

export class DomainError extends Error {
  override readonly name = "DomainError";
  readonly code: Code;
  readonly action: Action;
  readonly files: ErrorFile[];
  readonly detail: EngineDetail | undefined;
  readonly recovery: RecoveryReport | undefined;
  /** The caller's own values the message names beyond `files` (DomainErrorInit.named). */
  readonly named: readonly string[];

  constructor(
    readonly reason: Reason,
    message: string,
    init: DomainErrorInit = {},
  ) {
    super(message, init.cause === undefined ? undefined : { cause: init.cause });
    const row = REASONS[reason];
    this.code = row.code;
    if (reason === "ENGINE_FAILED" && init.detail !== undefined && !isEngineDetail(init.detail)) {
      throw new TypeError("ENGINE_FAILED detail must come from the closed set");
    }
    if (init.detail !== undefined && reason !== "ENGINE_FAILED") {
      throw new TypeError("only ENGINE_FAILED carries a detail");
    }
    if ((init.recovery !== undefined) !== (row.code === "RECOVERY_FAILURE")) {
      throw new TypeError("a recovery report goes with RECOVERY_FAILURE, and only there");
    }
    this.action = row.action ?? (init.recovery?.resynchronized ? "PULL" : "RETRY");
    this.files = init.files ?? [];
    this.detail = init.detail;
    this.recovery = init.recovery;
    this.named = init.named ?? [];
  }

  get retryable(): boolean {
    return CODES[this.code].retryable;
  }
}

const FIXED_DETAILS: readonly string[] = [
  ENGINE_DETAILS.nothingToPublish(),
  ENGINE_DETAILS.stateMissingLocally(),
  ENGINE_DETAILS.downloadedStateEmpty(),
  ENGINE_DETAILS.stateToRecordEmpty(),
];

function isEngineDetail(detail: string): boolean {
  if (FIXED_DETAILS.includes(detail)) return true;
  return /^".*" is not a regular text file; the notebook stores UTF-8 text files only$/s.test(detail);
}
