/**
 * The engine's record shapes (src/engine/shapes/schema.ts) accept and
 * refuse exactly what zod's strict schemas did before them: each shape is
 * compared with its zod counterpart on generated JSON — valid records, and
 * valid records with one thing broken (a key removed, added, set to null,
 * or given another type of value).
 */
import { describe, expect, test } from "bun:test";
import fc from "fast-check";
import { z } from "zod";
import * as S from "../../src/engine/shapes/schema.ts";
import { JournalSchema, ProgressStepSchema, StateSchema } from "../../src/engine/checkout/state-files.ts";
import { parseManifest } from "../../src/engine/publish/manifest.ts";

const RUNS = 400;
const hexOf = (n: number) => fc.stringMatching(new RegExp(`^[0-9a-f]{${n}}$`));
/** Any JSON value, as JSON.parse gives them (no undefined, no -0). */
const json = fc.jsonValue().map((v) => JSON.parse(JSON.stringify(v)) as unknown);

/** `value` with one thing broken at a random depth, or unchanged. */
function broken(value: unknown): fc.Arbitrary<unknown> {
  if (typeof value !== "object" || value === null) return fc.oneof(fc.constant(value), json);
  if (Array.isArray(value)) {
    if (value.length === 0) return fc.oneof(fc.constant(value), json, fc.constant([1]));
    return fc.nat(value.length - 1).chain((i) => broken(value[i]).map((v) => value.map((x, j) => (j === i ? v : x))));
  }
  const keys = Object.keys(value);
  const record = value as Record<string, unknown>;
  return fc.oneof(
    fc.constant(value),
    fc.constant(null),
    fc.string().map((k) => ({ ...record, [k]: 1 })),
    ...(keys.length === 0
      ? []
      : [
          fc.constantFrom(...keys).map((k) => Object.fromEntries(Object.entries(record).filter(([key]) => key !== k))),
          fc.constantFrom(...keys).map((k) => ({ ...record, [k]: null })),
          fc.constantFrom(...keys).chain((k) => broken(record[k]).map((v) => ({ ...record, [k]: v }))),
        ]),
  );
}

function agree<T>(valid: fc.Arbitrary<T>, ours: S.Shape<unknown>, theirs: z.ZodType): void {
  fc.assert(
    fc.property(valid.chain(broken), (value) => {
      expect(S.check(ours, value).ok).toBe(theirs.safeParse(value).success);
    }),
    { numRuns: RUNS, seed: 24 },
  );
  // Valid records are accepted by both, and come back as they went in.
  fc.assert(
    fc.property(valid, (value) => {
      const got = S.check(ours, value);
      expect(got.ok && theirs.safeParse(value).success).toBe(true);
      if (got.ok) expect(got.value).toEqual(value);
    }),
    { numRuns: 100, seed: 24 },
  );
}

describe("each kind of shape, as zod's", () => {
  test("strings, patterns, whole numbers, booleans, one of", () => {
    const pairs: Array<[S.Shape<unknown>, z.ZodType]> = [
      [S.string(), z.string()],
      [S.hex(4), z.string().regex(/^[0-9a-f]{4}$/)],
      [S.int(), z.int()],
      [S.int(0), z.int().nonnegative()],
      [S.int(1), z.int().positive()],
      [S.boolean(), z.boolean()],
      [S.oneOf(1, 2), z.union([z.literal(1), z.literal(2)])],
      [S.oneOf("after", "before"), z.enum(["after", "before"])],
      [S.nullable(S.int()), z.int().nullable()],
      [S.array(S.int(), 1), z.array(z.int()).min(1)],
    ];
    const values = fc.oneof(json, hexOf(4), fc.integer(), fc.double(), fc.constantFrom(0, 1, -1, 2 ** 53, 1.5, "after", true, [], [1], [1.5]));
    for (const [ours, theirs] of pairs) {
      fc.assert(fc.property(values, (v) => expect(S.check(ours, v).ok).toBe(theirs.safeParse(v).success)), { numRuns: RUNS, seed: 24 });
    }
  });

  test("strict objects with optional keys", () => {
    const ours = S.strictObject({ a: S.int(), b: S.optional(S.string()), c: S.nullable(S.strictObject({ d: S.boolean() })) });
    const theirs = z.strictObject({ a: z.int(), b: z.string().optional(), c: z.strictObject({ d: z.boolean() }).nullable() });
    const valid = fc.record(
      { a: fc.integer(), b: fc.string(), c: fc.option(fc.record({ d: fc.boolean() }), { nil: null }) },
      { requiredKeys: ["a", "c"] },
    );
    agree(valid, ours, theirs);
  });
});

const baseline = fc.record(
  { generation: fc.nat(), head: fc.option(hexOf(40), { nil: null }), tree: fc.option(hexOf(40), { nil: null }), notebook: hexOf(32) },
  { requiredKeys: ["generation", "head", "tree"] },
);
const zHex = (n: number) => z.string().regex(new RegExp(`^[0-9a-f]{${n}}$`));
const zBaseline = z.strictObject({ generation: z.int().nonnegative(), head: zHex(40).nullable(), tree: zHex(40).nullable(), notebook: zHex(32).optional() });

describe("the state files' shapes, as the zod schemas they replace", () => {
  test("state.json", () => {
    const publishing = fc.record(
      {
        publication: fc.string(),
        pack: fc.record({ key: fc.string(), sha256: fc.string() }),
        generation: fc.integer({ min: 1 }),
        head: hexOf(40),
        merged: fc.array(fc.record({ path: fc.string(), oid: fc.option(hexOf(40), { nil: null }) }), { maxLength: 3 }),
        proposal: fc.record({ until: fc.integer({ min: 1 }) }),
      },
      { requiredKeys: ["publication", "pack", "generation", "head", "merged"] },
    );
    const valid = fc.record(
      { version: fc.constant(1), checkout: fc.string(), store: fc.string(), directory: fc.string(), baseline, publishing },
      { requiredKeys: ["version", "checkout", "store", "baseline"] },
    );
    const theirs = z.strictObject({
      version: z.literal(1),
      checkout: z.string(),
      store: z.string(),
      directory: z.string().optional(),
      baseline: zBaseline,
      publishing: z
        .strictObject({
          publication: z.string(),
          pack: z.strictObject({ key: z.string(), sha256: z.string() }),
          generation: z.int().positive(),
          head: zHex(40),
          merged: z.array(z.strictObject({ path: z.string(), oid: zHex(40).nullable() })),
          proposal: z.strictObject({ until: z.int().positive() }).optional(),
        })
        .optional(),
    });
    agree(valid, StateSchema, theirs);
  });

  test("journal.json and its progress records", () => {
    const write = fc.record({ path: fc.string(), before: fc.option(hexOf(40), { nil: null }), after: fc.option(hexOf(40), { nil: null }) });
    agree(
      fc.record({ version: fc.constant(1), target: baseline, writes: fc.array(write, { maxLength: 3 }) }),
      JournalSchema,
      z.strictObject({
        version: z.literal(1),
        target: zBaseline,
        writes: z.array(z.strictObject({ path: z.string(), before: zHex(40).nullable(), after: zHex(40).nullable() })),
      }),
    );
    agree(
      fc.record({ path: fc.string(), side: fc.constantFrom("after", "before"), tmp: fc.string(), done: fc.boolean() }, { requiredKeys: ["path", "side"] }),
      ProgressStepSchema,
      z.strictObject({ path: z.string(), side: z.enum(["after", "before"]), tmp: z.string().optional(), done: z.boolean().optional() }),
    );
  });
});

describe("the manifest", () => {
  const sha = "a".repeat(64);
  const manifest = { format: 1, generation: 2, head: "b".repeat(40), publication: "c".repeat(32), packs: [{ key: `packs/${sha}.pack`, size: 10, sha256: sha }] };
  const read = (m: unknown) => parseManifest(new TextEncoder().encode(JSON.stringify(m)));

  test("a valid manifest reads back as written", () => {
    expect(read(manifest)).toEqual(manifest as never);
    const withNotebook = { ...manifest, format: 4, notebook: "d".repeat(32) };
    expect(read(withNotebook)).toEqual(withNotebook as never);
  });

  test("strictness and the rules across fields refuse as MANIFEST_INVALID", () => {
    for (const bad of [
      { ...manifest, extra: 1 },
      { ...manifest, generation: 0 },
      { ...manifest, generation: 1.5 },
      { ...manifest, packs: [] },
      { ...manifest, head: "B".repeat(40) },
      { ...manifest, notebook: "d".repeat(32) }, // format 1 with a notebook id
      { ...manifest, packs: [{ ...manifest.packs[0], key: "packs/other.pack" }] },
      { ...manifest, packs: [manifest.packs[0], manifest.packs[0]] },
      { ...manifest, format: 3, combined: [{ publication: "e".repeat(32), generation: 3, head: "f".repeat(40) }] },
    ]) {
      expect(() => read(bad)).toThrow(expect.objectContaining({ reason: "MANIFEST_INVALID" }));
    }
  });
});
