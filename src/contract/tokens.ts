/**
 * The token table of errors.md, the one place every code, reason, action and
 * file reason is defined. Nothing else in the code base invents a token:
 * errors are built from here (see errors.ts), and test/contract pins this
 * table against docs/errors.md.
 */

export const CODES = {
  INVALID_REQUEST: { retryable: false },
  CONTENT_CONFLICT: { retryable: false },
  STORAGE_INTEGRITY: { retryable: false },
  STORAGE_FAILURE: { retryable: true },
  REMOTE_BUSY: { retryable: true },
  RECOVERY_FAILURE: { retryable: true },
} as const;

export type Code = keyof typeof CODES;

export type Action = "FIX_INPUT" | "EDIT_FILES" | "PULL" | "RETRY" | "OPERATOR";

/** The CLI wording of each action (errors.md, "Actions"). */
export const ACTION_WORDING: Record<Action, string> = {
  FIX_INPUT: "correct the request, then call again",
  EDIT_FILES: "edit the files, then commit",
  PULL: "pull, then continue",
  RETRY: "retry the same call",
  OPERATOR: "operator attention needed",
};

/**
 * Every reason with its code and action. RECOVERY_FAILURE's action depends on
 * the recovery report (PULL when resynchronized, else RETRY), so it is `null`
 * here and chosen in errors.ts.
 */
export const REASONS = {
  MALFORMED_INPUT: { code: "INVALID_REQUEST", action: "FIX_INPUT" },
  PATH_OUTSIDE_ROOT: { code: "INVALID_REQUEST", action: "FIX_INPUT" },
  MESSAGE_BLANK: { code: "INVALID_REQUEST", action: "FIX_INPUT" },
  MESSAGE_TOO_LONG: { code: "INVALID_REQUEST", action: "FIX_INPUT" },
  MESSAGE_INVALID: { code: "INVALID_REQUEST", action: "FIX_INPUT" },
  PULL_REQUIRED: { code: "INVALID_REQUEST", action: "PULL" },
  INVALID_CONTENT: { code: "INVALID_REQUEST", action: "EDIT_FILES" },
  READ_ONLY_PATH: { code: "INVALID_REQUEST", action: "EDIT_FILES" },
  MERGE_CONFLICT: { code: "CONTENT_CONFLICT", action: "EDIT_FILES" },
  UNRESOLVED_MARKERS: { code: "CONTENT_CONFLICT", action: "EDIT_FILES" },
  RETRIES_EXHAUSTED: { code: "REMOTE_BUSY", action: "RETRY" },
  MANIFEST_READ: { code: "STORAGE_FAILURE", action: "RETRY" },
  PACK_DOWNLOAD: { code: "STORAGE_FAILURE", action: "RETRY" },
  PACK_UPLOAD: { code: "STORAGE_FAILURE", action: "RETRY" },
  PUBLICATION_UNPROVEN: { code: "STORAGE_FAILURE", action: "PULL" },
  MANIFEST_WRITE: { code: "STORAGE_FAILURE", action: "RETRY" },
  LOCAL_STATE: { code: "STORAGE_FAILURE", action: "RETRY" },
  INTERNAL: { code: "STORAGE_FAILURE", action: "RETRY" },
  MANIFEST_INVALID: { code: "STORAGE_INTEGRITY", action: "OPERATOR" },
  PACK_INVALID: { code: "STORAGE_INTEGRITY", action: "OPERATOR" },
  HISTORY_INVALID: { code: "STORAGE_INTEGRITY", action: "OPERATOR" },
  ENGINE_FAILED: { code: "STORAGE_INTEGRITY", action: "OPERATOR" },
  LOCAL_MUTATION_FAILED: { code: "RECOVERY_FAILURE", action: null },
} as const satisfies Record<string, { code: Code; action: Action | null }>;

export type Reason = keyof typeof REASONS;

export type FileReason = "TEXT_CONFLICT" | "PATH_CONFLICT" | "UNRESOLVED_MARKERS" | "READ_ONLY" | "INVALID_CONTENT";

/**
 * The closed set of ENGINE_FAILED details (errors.md). Free-form engine text
 * is never a detail: it cannot be made safe by filtering.
 */
export const ENGINE_DETAILS = {
  notRegularFile: (name: string) =>
    `"${name}" is not a regular text file; the notebook stores UTF-8 text files only`,
  nothingToPublish: () => "no changed files were found to publish",
  stateMissingLocally: () =>
    "part of the stored notebook state is missing locally; run notes_pull again to restore it",
  downloadedStateEmpty: () => "the downloaded notebook state was empty",
  stateToRecordEmpty: () => "the notebook state to record was empty",
} as const;

export type EngineDetail = ReturnType<(typeof ENGINE_DETAILS)[keyof typeof ENGINE_DETAILS]>;

/** Process exit codes of the CLI, one per class of outcome (docs/cli.md, "Exit codes"). */
export const EXIT_CODES = {
  OK: 0,
  /** An unexpected crash: a bug. */
  CRASH: 1,
  /** A startup refusal: bad arguments or configuration, or INCOMPATIBLE_STORE. */
  STARTUP: 2,
  INVALID_REQUEST: 3,
  CONTENT_CONFLICT: 4,
  /** STORAGE_FAILURE, REMOTE_BUSY, RECOVERY_FAILURE: the retryable codes. */
  RETRYABLE: 5,
  /** STORAGE_INTEGRITY: a person must act. */
  OPERATOR: 6,
} as const;

export function exitCodeFor(code: Code): number {
  switch (code) {
    case "INVALID_REQUEST":
      return EXIT_CODES.INVALID_REQUEST;
    case "CONTENT_CONFLICT":
      return EXIT_CODES.CONTENT_CONFLICT;
    case "STORAGE_INTEGRITY":
      return EXIT_CODES.OPERATOR;
    case "STORAGE_FAILURE":
    case "REMOTE_BUSY":
    case "RECOVERY_FAILURE":
      return EXIT_CODES.RETRYABLE;
  }
}
