/**
 * What a checkout's state files hold (checkout/state.ts): `state.json`, the
 * baseline and a publication in flight; `journal.json`, the visible files
 * being rewritten.
 */
import { array, boolean, hex, type Infer, int, nullable, oneOf, optional, string, strictObject } from "../shapes/schema.ts";

const hex40 = hex(40);

const BaselineSchema = strictObject({
  generation: int(0),
  head: nullable(hex40),
  tree: nullable(hex40),
  /**
   * The id of the notebook whose generation this is (manifest.ts, format
   * 4): a store showing another is refused (went-backwards.ts). Absent
   * before generation 1, for a notebook without one, and in states
   * written before ids existed.
   */
  notebook: optional(hex(32)),
});

/**
 * The publication record (state.json's `publishing`): a commit's
 * publication between its conditional write and the baseline move,
 * recorded before the write, so the next call on the checkout can
 * learn whether it landed (publication.ts) when this one dies in between.
 */
const PublicationRecordSchema = strictObject({
  /** The manifest's publication id, and the pack the commit uploaded. */
  publication: string(),
  pack: strictObject({ key: string(), sha256: string() }),
  /** The manifest's generation and head commit. */
  generation: int(1),
  head: hex40,
  /**
   * Where the published tree differs from the visible files the commit
   * scanned (changes merged in from others, not yet written): each path
   * with the blob the visible file held then (null = absent).
   */
  merged: array(strictObject({ path: string(), oid: nullable(hex40) })),
  /**
   * Offered to other writers to publish (combine.ts): it lands where a
   * manifest's `combined` says, not at `generation`, until it is
   * withdrawn; offered onto generations below `until`.
   */
  proposal: optional(strictObject({ until: int(1) })),
});

export const StateSchema = strictObject({
  version: oneOf(1),
  checkout: string(),
  store: string(),
  /** The identity of the directory this state was made for (absent in states written before it was recorded). */
  directory: optional(string()),
  baseline: BaselineSchema,
  publishing: optional(PublicationRecordSchema),
});

export const JournalSchema = strictObject({
  version: oneOf(1),
  /** The baseline the interrupted operation was moving to. */
  target: BaselineSchema,
  /** Each visible file being rewritten: blob ids of its content before and after (null = absent). */
  writes: array(strictObject({ path: string(), before: nullable(hex40), after: nullable(hex40) })),
});

/**
 * One record of the journal's progress (CheckoutState.openJournalProgress):
 * a step of rewriting `path` to the journal's `side` of it, through the
 * temporary file `tmp` when there is one; `done` in the record written once
 * the step happened, or `false` when it was given up before anything
 * changed (the file was written to since the scan, materialize.ts).
 */
export const ProgressStepSchema = strictObject({
  path: string(),
  side: oneOf("after", "before"),
  tmp: optional(string()),
  done: optional(boolean()),
});

/**
 * A temporary name (`dir/name`, notebook-relative) recorded before the file
 * is made, so that whatever a call leaves behind is removed by name, never
 * by a pattern a user's file could match.
 */
export const ScratchRecordSchema = strictObject({ scratch: string() });

/** Written once every step is settled: what remains is removing the scratch files, then the journal. */
export const SettledRecordSchema = strictObject({ settled: oneOf(true) });

export type Baseline = Infer<typeof BaselineSchema>;
export type ProgressStep = Infer<typeof ProgressStepSchema>;
export type CheckoutStateFile = Infer<typeof StateSchema>;
export type Journal = Infer<typeof JournalSchema>;
export type PublicationRecord = Infer<typeof PublicationRecordSchema>;
