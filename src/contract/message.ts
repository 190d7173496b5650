/** The commit message rules of mcp-tools.md, shared by the CLI and MCP. */
import { DomainError } from "./errors.ts";

export const MESSAGE_MAX_BYTES = 16_384;

/** Throws the matching INVALID_REQUEST error, or returns the message unchanged. */
export function validateMessage(message: string): string {
  if (message.includes("\u0000") || !message.isWellFormed()) {
    throw new DomainError("MESSAGE_INVALID", "The commit message must be valid UTF-8 without the NUL character.");
  }
  if (Buffer.byteLength(message, "utf8") > MESSAGE_MAX_BYTES) {
    throw new DomainError("MESSAGE_TOO_LONG", `The commit message is over ${MESSAGE_MAX_BYTES.toLocaleString("en-US")} bytes; shorten it.`);
  }
  if (/^\p{White_Space}*$/u.test(message)) {
    throw new DomainError("MESSAGE_BLANK", "The commit message is blank; send a real message.");
  }
  return message;
}
