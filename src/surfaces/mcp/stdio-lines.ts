/**
 * What a line of the MCP stdio transport is (stdio.ts): its decoding, the
 * answers that refuse it, and the request id of a line too long to keep.
 */

/** The longest line taken as a message, as the SDK's STDIO_DEFAULT_MAX_BUFFER_SIZE: 10 MiB. A tool call needs a few KiB. */
export const MAX_LINE_BYTES = 10 * 1024 * 1024;

/** JSON-RPC's "Parse error": the line is not JSON text. */
export const PARSE_ERROR = -32700;
/** JSON-RPC's "Invalid Request": the JSON is not a message that may be sent. */
export const INVALID_REQUEST = -32600;

export type RequestId = string | number;

/** An answer the transport gives itself, for a line no message was taken from. */
export interface ErrorAnswer {
  jsonrpc: "2.0";
  id: RequestId | null;
  error: { code: number; message: string };
}

export const errorAnswer = (id: RequestId | null, code: number, message: string): ErrorAnswer => ({ jsonrpc: "2.0", id, error: { code, message } });

const strictUtf8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });

/** A line as read: its text, or the answer that refuses it. */
export type Line = string | { refused: ErrorAnswer };

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === "object" && value !== null && !Array.isArray(value);

/**
 * The id to answer an invalid message under: a request's (it has a
 * `method`) when it is a string or a number; otherwise null, as JSON-RPC
 * says, so that no answer is taken for that of another request.
 */
export function requestIdOf(value: unknown): RequestId | null {
  if (!isObject(value) || !("method" in value)) return null;
  const id = value.id;
  return typeof id === "string" || typeof id === "number" ? id : null;
}

/** In words, why `value` is no JSON-RPC message as MCP defines them (never the SDK's own text). */
export function whatIsWrong(value: unknown): string {
  if (!isObject(value)) return "a message must be a JSON object";
  if (value.jsonrpc !== "2.0") return 'a message must carry "jsonrpc": "2.0"';
  if ("id" in value && !(typeof value.id === "string" || Number.isSafeInteger(value.id))) return 'an "id" must be a string or an integer, never null';
  if ("method" in value && typeof value.method !== "string") return 'a "method" must be a string';
  if (!("method" in value) && !("result" in value) && !("error" in value)) {
    return 'a message must be a request or a notification (with a "method") or a response (with a "result" or an "error")';
  }
  return "the message is no JSON-RPC request, notification or response as MCP defines them";
}

export function tooLong(id: RequestId | null): ErrorAnswer {
  return errorAnswer(id, INVALID_REQUEST, `Invalid Request: the line is over ${MAX_LINE_BYTES.toLocaleString("en-US")} bytes (10 MiB), the most one message may hold; nothing was done.`);
}

/** One line's text, without a trailing "\r"; invalid UTF-8 is refused, never patched. */
export function decodeLine(bytes: Buffer): Line {
  try {
    return strictUtf8.decode(bytes).replace(/\r$/, "");
  } catch {
    // The lossy decoding is read only for the request's id.
    let id: RequestId | null = null;
    try {
      const parsed = JSON.parse(bytes.toString("utf8")) as { id?: unknown };
      if (typeof parsed.id === "string" || typeof parsed.id === "number") id = parsed.id;
    } catch {
      /* no id to answer under */
    }
    return { refused: errorAnswer(id, PARSE_ERROR, "Parse error: the message is not valid UTF-8 text; nothing was done. Send the text as UTF-8.") };
  }
}

/**
 * Reads a line too long to keep for what its answer needs: the top-level
 * `id` of a request (one with a top-level `method`), in whatever order its
 * members come. Each byte is looked at once; only the last top-level id's
 * text is kept, so the line's size does not matter. UTF-8 needs no
 * decoding here: `"`, `\` and the structural characters are single bytes
 * that never occur inside a multi-byte character.
 */
export class RequestIdScanner {
  private depth = 0;
  private inString = false;
  private escaped = false;
  /** Where the top-level object stands: before it, at a key, before the key's colon, at its value; past its end, or not an object. */
  private state: "start" | "key" | "colon" | "value" | "done" | "unreadable" = "start";
  private key: number[] = [];
  /** The bytes of the value being read, when it is the id's (null: not kept). */
  private capture: number[] | null = null;
  private id: string | null = null;
  private method = false;

  feed(bytes: Buffer): void {
    for (let i = 0; i < bytes.length; i++) {
      if (this.state === "done" || this.state === "unreadable") return;
      // The bulk of a long line is the inside of a string nothing keeps: skip to its next quote or backslash.
      if (this.inString && !this.escaped && this.capture === null && !(this.depth === 1 && this.state === "key")) {
        while (i < bytes.length && bytes[i] !== 0x22 && bytes[i] !== 0x5c) i++;
        if (i === bytes.length) return;
      }
      const b = bytes[i]!;
      if (this.inString) this.inStringByte(b);
      else if (this.depth > 1) this.nestedByte(b);
      else this.topByte(b);
    }
  }

  requestId(): RequestId | null {
    if (this.state !== "done" || !this.method || this.id === null) return null;
    try {
      const id = JSON.parse(this.id) as unknown;
      return typeof id === "string" || typeof id === "number" ? id : null;
    } catch {
      return null;
    }
  }

  /** A top-level value begins, that of `key` (with its quotes): the method's is seen, the id's kept. */
  private valueOf(key: string): void {
    if (key === '"method"') this.method = true;
    this.capture = key === '"id"' ? [] : null;
  }

  private keep(b: number): void {
    if (this.capture !== null) {
      if (this.capture.length < 1024) this.capture.push(b);
      else this.capture = null;
    }
  }

  private inStringByte(b: number): void {
    if (this.depth === 1 && this.state === "key") {
      if (this.key.length < 16) this.key.push(b);
    } else this.keep(b);
    if (this.escaped) this.escaped = false;
    else if (b === 0x5c) this.escaped = true;
    else if (b === 0x22) {
      this.inString = false;
      if (this.depth === 1 && this.state === "key") this.state = "colon";
    }
  }

  private nestedByte(b: number): void {
    if (b === 0x22) this.inString = true;
    else if (b === 0x7b || b === 0x5b) this.depth++;
    else if (b === 0x7d || b === 0x5d) this.depth--;
  }

  private topByte(b: number): void {
    const space = b === 0x20 || b === 0x09 || b === 0x0a || b === 0x0d;
    switch (this.state) {
      case "start":
        if (space) return;
        if (b === 0x7b) {
          this.depth = 1;
          this.state = "key";
        } else this.state = "unreadable";
        return;
      case "key":
        if (space || b === 0x2c) return;
        if (b === 0x22) {
          this.key = [0x22];
          this.inString = true;
        } else if (b === 0x7d) this.state = "done";
        else this.state = "unreadable";
        return;
      case "colon":
        if (space) return;
        if (b !== 0x3a) {
          this.state = "unreadable";
          return;
        }
        this.state = "value";
        this.valueOf(Buffer.from(this.key).toString("utf8"));
        return;
      case "value":
        if (space) return;
        if (b === 0x2c || b === 0x7d) {
          if (this.capture !== null) this.id = Buffer.from(this.capture).toString("utf8");
          this.capture = null;
          this.key = [];
          this.state = b === 0x2c ? "key" : "done";
          return;
        }
        this.keep(b);
        if (b === 0x22) this.inString = true;
        else if (b === 0x7b || b === 0x5b) {
          // An object or an array is no id; its inside is skipped.
          this.capture = null;
          this.depth++;
        }
        return;
    }
  }
}
