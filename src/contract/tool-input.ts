/**
 * The fields of the tool inputs (mcp-tools.md "Inputs"): their advertised
 * schemas and their strict rules, in one definition each (input-schema.ts).
 * The operations registry (src/surfaces/operations.ts) puts them together
 * per operation.
 */
import { type Field, malformed, optional, stringField } from "./input-schema.ts";
import { validateMessage } from "./message.ts";

export const PATH_MAX_BYTES = 4_096;

/** Absent or "" means the server's notebook directory. */
export const PATH_FIELD: Field<string | undefined> = optional(
  stringField({
    description:
      "Optional host path of the notebook directory, at or below the workspace root; may begin with ~/. Omit it or pass an empty string for the server's notebook directory.",
    rule(path, name) {
      if (!path.isWellFormed()) throw malformed(`${name} must be valid UTF-8.`);
      if (Buffer.byteLength(path, "utf8") > PATH_MAX_BYTES) {
        throw malformed(`${name} is over ${PATH_MAX_BYTES.toLocaleString("en-US")} bytes.`);
      }
      return path;
    },
  }),
);

/** The commit message: its own reasons (message.ts) past the type check. */
export const MESSAGE_FIELD: Field<string> = stringField({
  description: "The commit message: non-blank UTF-8 without U+0000, at most 16,384 bytes.",
  rule: (message) => validateMessage(message),
});
