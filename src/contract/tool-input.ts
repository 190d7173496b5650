/**
 * Strict decoding of tool inputs (mcp-tools.md "Inputs"), done by the
 * project rather than by a schema validator: unknown fields, explicit nulls,
 * wrong types and byte bounds are INVALID_REQUEST · MALFORMED_INPUT inside
 * the error envelope, and the message rules give their own reasons.
 */
import { DomainError } from "./errors.ts";
import { validateMessage } from "./message.ts";
import type { ToolName } from "./tools.ts";

export const PATH_MAX_BYTES = 4_096;

export interface ToolInput {
  /** Absent or "" means the server's notebook directory. */
  path?: string;
  message?: string;
}

const ALLOWED: Record<ToolName, readonly string[]> = {
  notes_pull: ["path"],
  notes_commit: ["message", "path"],
};

function malformed(message: string): DomainError {
  return new DomainError("MALFORMED_INPUT", message);
}

/** A field name quoted for a message: short, and safe to echo. */
function quoteField(name: string): string {
  const short = name.length > 64 ? `${name.slice(0, 64)}…` : name;
  return JSON.stringify(short);
}

export function decodeToolInput(tool: ToolName, args: unknown): ToolInput {
  if (args === undefined) args = {};
  if (args === null || typeof args !== "object" || Array.isArray(args)) {
    throw malformed("The tool arguments must be a JSON object.");
  }
  const record = args as Record<string, unknown>;
  const allowed = ALLOWED[tool];
  for (const key of Object.keys(record)) {
    if (!allowed.includes(key)) {
      throw malformed(`Unknown field ${quoteField(key)}; ${tool} accepts only ${allowed.join(" and ")}.`);
    }
    if (record[key] === null) throw malformed(`The field ${quoteField(key)} is null; omit it instead.`);
  }
  const input: ToolInput = {};
  if ("path" in record) {
    const path = record.path;
    if (typeof path !== "string") throw malformed("path must be a string.");
    if (!path.isWellFormed()) throw malformed("path must be valid UTF-8.");
    if (Buffer.byteLength(path, "utf8") > PATH_MAX_BYTES) {
      throw malformed(`path is over ${PATH_MAX_BYTES.toLocaleString("en-US")} bytes.`);
    }
    input.path = path;
  }
  if (tool === "notes_commit") {
    if (!("message" in record)) throw malformed("message is required.");
    const message = record.message;
    if (typeof message !== "string") throw malformed("message must be a string.");
    input.message = validateMessage(message);
  }
  return input;
}
