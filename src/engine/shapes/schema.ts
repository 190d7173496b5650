/**
 * The shapes of the JSON records the engine reads back — a checkout's state
 * files, the store's manifest, a proposal — and the check that a value has
 * one. A record that does not read as its shape is damage (a state file) or
 * MANIFEST_INVALID (the store's), never half-trusted.
 *
 * The project's own, not a schema library's: every call of the CLI reads
 * state.json and most read a manifest, so the check is paid on every
 * process start. Building the engine's schemas with zod cost ~7 ms of a
 * no-change pull whose whole own work is ~30 ms (zod's schema objects are
 * expensive to construct); these shapes are plain closures, built in
 * microseconds. The rules are zod's strict ones, kept by a differential
 * test against zod (test/engine/record-shapes.test.ts): unknown keys are
 * refused, an optional key may be absent but not null, numbers are whole
 * where an `int` is asked for.
 */

/** A shape: checks a value, answering what is wrong with it (and where), or null. */
export interface Shape<T> {
  /** The problem with `value` at `where` ("state.baseline.head"), or null when it has this shape. */
  problem(value: unknown, where: string): string | null;
  /** Present only on `optional(…)`: the key may be absent from its object. */
  readonly optional?: true;
  /** Never set: carries T for `Infer`. */
  readonly _type?: T;
}

export type Infer<S> = S extends Shape<infer T> ? T : never;

/** Checks `value` against `shape`: the value itself, now typed, or an error saying what is wrong. */
export function check<T>(shape: Shape<T>, value: unknown, name = "value"): { ok: true; value: T } | { ok: false; error: Error } {
  const problem = shape.problem(value, name);
  return problem === null ? { ok: true, value: value as T } : { ok: false, error: new Error(problem) };
}

export function string(pattern?: RegExp): Shape<string> {
  return {
    problem: (v, where) =>
      typeof v !== "string" ? `${where} is not a string` : pattern !== undefined && !pattern.test(v) ? `${where} does not match ${pattern}` : null,
  };
}

/** Lowercase hexadecimal of exactly `digits` digits: object ids, digests, random ids. */
export function hex(digits: number): Shape<string> {
  return string(new RegExp(`^[0-9a-f]{${digits}}$`));
}

/** A whole number (a safe integer), at least `min` when given. */
export function int(min?: number): Shape<number> {
  return {
    problem: (v, where) =>
      typeof v !== "number" || !Number.isSafeInteger(v) ? `${where} is not a whole number` : min !== undefined && v < min ? `${where} is below ${min}` : null,
  };
}

export function boolean(): Shape<boolean> {
  return { problem: (v, where) => (typeof v === "boolean" ? null : `${where} is not true or false`) };
}

/** Exactly one of the given values. */
export function oneOf<const V extends readonly (string | number | boolean)[]>(...values: V): Shape<V[number]> {
  return { problem: (v, where) => (values.includes(v as V[number]) ? null : `${where} is not one of ${values.join(", ")}`) };
}

export function nullable<T>(shape: Shape<T>): Shape<T | null> {
  return { problem: (v, where) => (v === null ? null : shape.problem(v, where)) };
}

/** A key its object may leave out; present, it has `shape` (undefined and null are not absence). */
export function optional<T>(shape: Shape<T>): Shape<T | undefined> & { readonly optional: true } {
  return { optional: true, problem: (v, where) => (v === undefined ? `${where} is undefined` : shape.problem(v, where)) };
}

/** A list of `item`s, at least `min` of them when given. */
export function array<T>(item: Shape<T>, min?: number): Shape<T[]> {
  return {
    problem(v, where) {
      if (!Array.isArray(v)) return `${where} is not a list`;
      if (min !== undefined && v.length < min) return `${where} has fewer than ${min} items`;
      for (let i = 0; i < v.length; i++) {
        const p = item.problem(v[i], `${where}[${i}]`);
        if (p !== null) return p;
      }
      return null;
    },
  };
}

type Fields = Record<string, Shape<unknown>>;
type OptionalKeys<F extends Fields> = { [K in keyof F]: F[K] extends { readonly optional: true } ? K : never }[keyof F];
type Simplify<T> = { [K in keyof T]: T[K] } & {};
export type ObjectOf<F extends Fields> = Simplify<
  { [K in Exclude<keyof F, OptionalKeys<F>>]: Infer<F[K]> } & { [K in OptionalKeys<F>]?: Exclude<Infer<F[K]>, undefined> }
>;

/** An object with exactly these keys (the optional ones may be absent) and no other. */
export function strictObject<F extends Fields>(fields: F): Shape<ObjectOf<F>> {
  const entries = Object.entries(fields);
  return {
    problem(v, where) {
      if (typeof v !== "object" || v === null || Array.isArray(v)) return `${where} is not an object`;
      const record = v as Record<string, unknown>;
      for (const key of Object.keys(record)) if (!Object.hasOwn(fields, key)) return `${where} has an unknown key ${JSON.stringify(key)}`;
      for (const [key, shape] of entries) {
        if (!Object.hasOwn(record, key)) {
          if (shape.optional) continue;
          return `${where}.${key} is missing`;
        }
        const p = shape.problem(record[key], `${where}.${key}`);
        if (p !== null) return p;
      }
      return null;
    },
  };
}

/** `shape`, and then a rule across its fields: the rule answers what is wrong, or null. */
export function refine<T>(shape: Shape<T>, rule: (value: T) => string | null): Shape<T> {
  return {
    problem(v, where) {
      const p = shape.problem(v, where);
      if (p !== null) return p;
      const broken = rule(v as T);
      return broken === null ? null : `${where}: ${broken}`;
    },
  };
}
