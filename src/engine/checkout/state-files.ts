/**
 * What a checkout's state files hold (checkout/state.ts): `state.json`, the
 * baseline and a publication in flight; `journal.json`, the visible files
 * being rewritten.
 */
import { z } from "./schema.ts";

const hex40 = z.string().check(z.regex(/^[0-9a-f]{40}$/));

const BaselineSchema = z.strictObject({
  generation: z.int().check(z.nonnegative()),
  head: z.nullable(hex40),
  tree: z.nullable(hex40),
  /**
   * The id of the notebook whose generation this is (manifest.ts, format
   * 4): a store showing another is refused (went-backwards.ts). Absent
   * before generation 1, for a notebook without one, and in states
   * written before ids existed.
   */
  notebook: z.optional(z.string().check(z.regex(/^[0-9a-f]{32}$/))),
});

/**
 * The publication record (state.json's `publishing`): a commit's
 * publication between its conditional write and the baseline move,
 * recorded before the write, so the next call on the checkout can
 * learn whether it landed (publication.ts) when this one dies in between.
 */
const PublicationRecordSchema = z.strictObject({
  /** The manifest's publication id, and the pack the commit uploaded. */
  publication: z.string(),
  pack: z.strictObject({ key: z.string(), sha256: z.string() }),
  /** The manifest's generation and head commit. */
  generation: z.int().check(z.positive()),
  head: hex40,
  /**
   * Where the published tree differs from the visible files the commit
   * scanned (changes merged in from others, not yet written): each path
   * with the blob the visible file held then (null = absent).
   */
  merged: z.array(z.strictObject({ path: z.string(), oid: z.nullable(hex40) })),
  /**
   * Offered to other writers to publish (combine.ts): it lands where a
   * manifest's `combined` says, not at `generation`, until it is
   * withdrawn; offered onto generations below `until`.
   */
  proposal: z.optional(z.strictObject({ until: z.int().check(z.positive()) })),
});

export const StateSchema = z.strictObject({
  version: z.literal(1),
  checkout: z.string(),
  store: z.string(),
  /** The identity of the directory this state was made for (absent in states written before it was recorded). */
  directory: z.optional(z.string()),
  baseline: BaselineSchema,
  publishing: z.optional(PublicationRecordSchema),
});

export const JournalSchema = z.strictObject({
  version: z.literal(1),
  /** The baseline the interrupted operation was moving to. */
  target: BaselineSchema,
  /** Each visible file being rewritten: blob ids of its content before and after (null = absent). */
  writes: z.array(z.strictObject({ path: z.string(), before: z.nullable(hex40), after: z.nullable(hex40) })),
});

/**
 * One record of the journal's progress (CheckoutState.openJournalProgress):
 * a step of rewriting `path` to the journal's `side` of it, through the
 * temporary file `tmp` when there is one; `done` in the record written once
 * the step happened, or `false` when it was given up before anything
 * changed (the file was written to since the scan, materialize.ts).
 */
export const ProgressStepSchema = z.strictObject({
  path: z.string(),
  side: z.enum(["after", "before"]),
  tmp: z.optional(z.string()),
  done: z.optional(z.boolean()),
});

/**
 * A temporary name (`dir/name`, notebook-relative) recorded before the file
 * is made, so that whatever a call leaves behind is removed by name, never
 * by a pattern a user's file could match.
 */
export const ScratchRecordSchema = z.strictObject({ scratch: z.string() });

/** Written once every step is settled: what remains is removing the scratch files, then the journal. */
export const SettledRecordSchema = z.strictObject({ settled: z.literal(true) });

export type Baseline = z.infer<typeof BaselineSchema>;
export type ProgressStep = z.infer<typeof ProgressStepSchema>;
export type CheckoutStateFile = z.infer<typeof StateSchema>;
export type Journal = z.infer<typeof JournalSchema>;
export type PublicationRecord = z.infer<typeof PublicationRecordSchema>;
