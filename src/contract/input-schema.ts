/**
 * One definition of an operation's input that both decodes it strictly and
 * produces the JSON Schema advertised for it (mcp-tools.md "Inputs"), so the
 * two cannot drift apart. Decoding is the project's own, not a schema
 * validator's (docs/decisions/0016-stdio-and-inputs-owned-by-slivingdoc.md):
 * unknown fields, explicit nulls and wrong types are INVALID_REQUEST ·
 * MALFORMED_INPUT, and a field's own rule may answer with its own reason.
 *
 * Fields are decoded in the order they are declared; the advertised
 * properties, and the "accepts only" list of an unknown-field message, are
 * in name order.
 */
import { DomainError } from "./errors.ts";

export interface Field<T> {
  readonly required: boolean;
  /** The field's advertised JSON Schema. */
  readonly schema: Readonly<Record<string, unknown>>;
  /** The decoded value, or a DomainError; `name` is the field's name, for messages. */
  decode(value: unknown, name: string): T;
}

export function malformed(message: string): DomainError {
  return new DomainError("MALFORMED_INPUT", message);
}

/** A string field; `rule` checks (and may normalise) the value once it is known to be a string. */
export function stringField(options: { description?: string; rule?: (value: string, name: string) => string }): Field<string> {
  return {
    required: true,
    schema: { type: "string", ...(options.description !== undefined ? { description: options.description } : {}) },
    decode(value, name) {
      if (typeof value !== "string") throw malformed(`${name} must be a string.`);
      return options.rule ? options.rule(value, name) : value;
    },
  };
}

export function booleanField(options: { description?: string } = {}): Field<boolean> {
  return {
    required: true,
    schema: { type: "boolean", ...(options.description !== undefined ? { description: options.description } : {}) },
    decode(value, name) {
      if (typeof value !== "boolean") throw malformed(`${name} must be true or false.`);
      return value;
    },
  };
}

/** A whole number from 0 up. */
export function countField(options: { description?: string } = {}): Field<number> {
  return {
    required: true,
    schema: { type: "integer", minimum: 0, ...(options.description !== undefined ? { description: options.description } : {}) },
    decode(value, name) {
      if (typeof value !== "number" || !Number.isSafeInteger(value) || value < 0) throw malformed(`${name} must be a whole number from 0 up.`);
      return value;
    },
  };
}

/** A list of strings, each checked by `rule` (which may normalise it): CLI-only inputs (log's path filter, restore's files). */
export function stringListField(options: { description?: string; rule?: (value: string, name: string) => string } = {}): Field<string[]> {
  return {
    required: true,
    schema: { type: "array", items: { type: "string" }, ...(options.description !== undefined ? { description: options.description } : {}) },
    decode(value, name) {
      if (!Array.isArray(value) || value.some((v) => typeof v !== "string")) throw malformed(`${name} must be a list of strings.`);
      return value.map((v: string) => (options.rule ? options.rule(v, name) : v));
    },
  };
}

export function optional<T>(field: Field<T>): Field<T | undefined> {
  return { ...field, required: false, decode: (value, name) => field.decode(value, name) };
}

type Value<F> = F extends Field<infer T> ? T : never;

/** The decoded object: a field whose value may be undefined is an optional property. */
type Decoded<F extends Record<string, Field<unknown>>> = {
  [K in keyof F as undefined extends Value<F[K]> ? never : K]: Value<F[K]>;
} & {
  [K in keyof F as undefined extends Value<F[K]> ? K : never]?: Exclude<Value<F[K]>, undefined>;
};

export interface InputSchema<T> {
  /** The strict decode: the input, or a DomainError. Omitted arguments are the empty object. */
  decode(args: unknown): T;
  /** The advertised JSON Schema (byte bounds are enforced by the decode only: maxLength counts code points). */
  jsonSchema(): Record<string, unknown>;
}

/** A field name quoted for a message: short, and safe to echo. */
function quoteField(name: string): string {
  const short = name.length > 64 ? `${name.slice(0, 64)}…` : name;
  return JSON.stringify(short);
}

/**
 * A strict JSON object of `fields`, no others. `owner` names the operation
 * in messages ("notes_commit accepts only message and path").
 */
export function objectInput<F extends Record<string, Field<any>>>(owner: string, fields: F): InputSchema<Decoded<F>> {
  const names = Object.keys(fields);
  const advertised = [...names].sort();
  return {
    decode(args) {
      if (args === undefined) args = {};
      if (args === null || typeof args !== "object" || Array.isArray(args)) {
        throw malformed("The tool arguments must be a JSON object.");
      }
      const record = args as Record<string, unknown>;
      for (const key of Object.keys(record)) {
        if (!Object.hasOwn(fields, key)) {
          throw malformed(`Unknown field ${quoteField(key)}; ${owner} accepts only ${advertised.join(" and ")}.`);
        }
        if (record[key] === null) throw malformed(`The field ${quoteField(key)} is null; omit it instead.`);
      }
      const input: Record<string, unknown> = {};
      for (const name of names) {
        const field = fields[name]!;
        if (!(name in record)) {
          if (field.required) throw malformed(`${name} is required.`);
          continue;
        }
        input[name] = field.decode(record[name], name);
      }
      return input as Decoded<F>;
    },
    jsonSchema() {
      const required = advertised.filter((name) => fields[name]!.required);
      return {
        type: "object",
        properties: Object.fromEntries(advertised.map((name) => [name, { ...fields[name]!.schema }])),
        ...(required.length > 0 ? { required } : {}),
        additionalProperties: false,
      };
    },
  };
}
