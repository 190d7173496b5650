/**
 * The MCP stdio transport: newline-delimited JSON-RPC on stdin and stdout,
 * framed as the SDK's StdioServerTransport frames it (a line ends at "\n", a
 * trailing "\r" is dropped; each message checked by the SDK's own schema).
 * Two differences for start-up: it reads Bun's stdin stream and writes a
 * file sink instead of Node's streams (src/surfaces/stdio.ts), and it can
 * read the first line before the SDK is loaded, so that a plain `initialize`
 * is answered early (handshake.ts).
 *
 * And differences in what it answers, where the SDK logs and answers
 * nothing (docs/cli.md, "The MCP transport"), each as JSON-RPC 2.0 says
 * (https://www.jsonrpc.org/specification#error_object), after which the
 * session goes on:
 *
 * - A line that is not valid UTF-8 is a parse error (-32700) under its
 *   request's id, where the SDK would decode it with U+FFFD in place of the
 *   bad bytes — and a commit message would then be stored changed instead
 *   of kept byte for byte or refused.
 * - A line that is not JSON is a parse error, id null.
 * - JSON that is not a JSON-RPC message as MCP defines it (no `"jsonrpc":
 *   "2.0"`, an `id` of null, a member too many) is an invalid request
 *   (-32600), under its id when it is a request whose id can be read.
 * - A batch (a JSON array) is taken as the negotiated protocol version
 *   says: MCP 2025-03-26 has JSON-RPC batches (one array of answers, none
 *   for notifications), 2025-06-18 removed them, and the others never had
 *   them; there, and before `initialize` has been answered (which no batch
 *   may carry), a batch is one invalid request, id null.
 * - A line over MAX_LINE_BYTES is an invalid request, read but not kept:
 *   the SDK drops its buffer and closes the transport, which ended the
 *   server without a word.
 */
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js";
import type { JSONRPCMessage } from "@modelcontextprotocol/sdk/types.js";
import type { TextSink } from "../stdio.ts";

/** The longest line taken as a message, as the SDK's STDIO_DEFAULT_MAX_BUFFER_SIZE: 10 MiB. A tool call needs a few KiB. */
const MAX_LINE_BYTES = 10 * 1024 * 1024;
const NEWLINE = 0x0a;

/** JSON-RPC's "Parse error": the line is not JSON text. */
const PARSE_ERROR = -32700;
/** JSON-RPC's "Invalid Request": the JSON is not a message that may be sent. */
const INVALID_REQUEST = -32600;

/** The MCP protocol versions with JSON-RPC batches: added in 2025-03-26, removed in 2025-06-18. */
const BATCH_VERSIONS: readonly string[] = ["2025-03-26"];

type RequestId = string | number;

/** An answer the transport gives itself, for a line no message was taken from. */
interface ErrorAnswer {
  jsonrpc: "2.0";
  id: RequestId | null;
  error: { code: number; message: string };
}

const errorAnswer = (id: RequestId | null, code: number, message: string): ErrorAnswer => ({ jsonrpc: "2.0", id, error: { code, message } });

const strictUtf8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });

/** A line as read: its text, or the answer that refuses it. */
type Line = string | { refused: ErrorAnswer };

/** A batch being answered: the ids it still waits for, and the answers it has. */
interface Batch {
  waiting: Map<string, number>;
  answers: unknown[];
}

const idKey = (id: RequestId) => `${typeof id}:${id}`;

export class StdioTransport implements Transport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: (message: JSONRPCMessage) => void;

  /** Resolves when stdin has ended (or failed): the host is gone. */
  readonly ended: Promise<void>;
  /** Resolves when stdout refused a write (the host closed it): no answer can reach the host any more. */
  readonly outputGone: Promise<void>;
  private loseOutput!: () => void;

  private readonly reader: { read(): Promise<{ done: boolean; value?: Uint8Array }>; cancel(): Promise<void> };
  /** The bytes of the line being read, while it is within MAX_LINE_BYTES. */
  private partial: Buffer[] = [];
  private partialBytes = 0;
  /** Set while reading a line over MAX_LINE_BYTES: its bytes are scanned for its id, not kept. */
  private oversized: RequestIdScanner | null = null;
  /** Complete lines not yet delivered (all of them until the server starts listening). */
  private readonly lines: Line[] = [];
  private parse: ((value: unknown) => JSONRPCMessage | undefined) | null = null;
  private started = false;
  /** Errors met before the server listened, reported once it does. */
  private readonly earlyErrors: Error[] = [];
  private wakeFirstLine: (() => void) | null = null;
  private inputEnded = false;
  private closed = false;
  /** Set by hold(): lines still read are no longer delivered. */
  private held = false;
  /** The request answered early, whose second answer (from the SDK's server) is not sent. */
  private earlyAnswer: { id: string | number; text: string } | null = null;
  /** The id of the `initialize` request being answered, whose answer names the protocol version. */
  private initializeId: RequestId | null = null;
  /** The negotiated protocol version, once `initialize` is answered. */
  private protocolVersion: string | null = null;
  private readonly batches: Batch[] = [];

  constructor(
    input: ReadableStream<Uint8Array>,
    private readonly output: TextSink,
  ) {
    this.reader = input.getReader();
    this.ended = this.pump();
    this.outputGone = new Promise((resolve) => {
      this.loseOutput = resolve;
    });
  }

  /** Waits for the first complete line (or the end of input) and returns it without consuming it. */
  async firstLine(): Promise<string | null> {
    while (this.lines.length === 0 && !this.inputEnded && !this.held && this.earlyErrors.length === 0) {
      await new Promise<void>((resolve) => {
        this.wakeFirstLine = resolve;
      });
    }
    const first = this.lines[0];
    // Refused: never answered early, and answered once delivered.
    return first === undefined ? null : typeof first === "string" ? first : "";
  }

  /**
   * Sends `response` as the answer to the first line, which stays queued for
   * the server: its own answer to it is then dropped (and compared).
   */
  answerFirstLine(response: { id: RequestId; result: Record<string, unknown> }): Promise<void> {
    const text = `${JSON.stringify(response)}\n`;
    this.earlyAnswer = { id: response.id, text };
    // Negotiated now: the host may send a batch before the SDK has seen the request.
    if (typeof response.result.protocolVersion === "string") this.protocolVersion = response.result.protocolVersion;
    this.output.write(text);
    return this.output.flush();
  }

  /**
   * Deliver no more messages: a server told to stop (a signal) finishes the
   * calls it has, but starts none that arrive after.
   */
  hold(): void {
    this.held = true;
    this.wakeFirstLine?.();
  }

  /** The SDK's check of a message (from server.ts, which loads the SDK), for start() to deliver messages with. */
  attach(parse: (value: unknown) => JSONRPCMessage | undefined): void {
    this.parse = parse;
  }

  async start(): Promise<void> {
    if (this.parse === null) throw new Error("StdioTransport: attach the message check before starting");
    this.started = true;
    for (const error of this.earlyErrors.splice(0)) this.fail(error);
    if (this.closed) this.onclose?.();
    else this.deliver();
  }

  async send(message: JSONRPCMessage): Promise<void> {
    const answer = "id" in message && !("method" in message) ? message : null;
    if (answer !== null && answer.id === this.initializeId && "result" in answer && typeof answer.result.protocolVersion === "string") {
      this.protocolVersion = answer.result.protocolVersion;
    }
    const early = this.earlyAnswer;
    if (early !== null && answer !== null && answer.id === early.id) {
      this.earlyAnswer = null;
      if (`${JSON.stringify(message)}\n` !== early.text) this.onerror?.(new Error("the SDK's answer to initialize differs from the early answer already sent"));
      return;
    }
    if (answer?.id !== undefined) {
      const batch = this.batches.find((b) => b.waiting.has(idKey(answer.id!)));
      if (batch !== undefined) {
        batch.answers.push(message);
        this.settle(batch, answer.id);
        return;
      }
    }
    this.write(message);
    await this.output.flush().catch((error: unknown) => {
      this.loseOutput();
      throw error;
    });
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.partial = [];
    this.oversized = null;
    this.lines.length = 0;
    await this.reader.cancel().catch(() => {});
    // Before start() the server is not listening yet; start() reports the close.
    if (this.started) this.onclose?.();
  }

  private write(message: unknown): void {
    this.output.write(`${JSON.stringify(message)}\n`);
  }

  private async pump(): Promise<void> {
    try {
      for (;;) {
        const { done, value } = await this.reader.read();
        if (done || this.closed || value === undefined) break;
        this.append(Buffer.from(value.buffer, value.byteOffset, value.byteLength));
      }
    } catch (error) {
      if (!this.closed) this.fail(error instanceof Error ? error : new Error(String(error)));
    } finally {
      this.inputEnded = true;
      this.wakeFirstLine?.();
    }
  }

  /** Splits a chunk into lines; a line over the bound is scanned as it comes and never held whole. */
  private append(chunk: Buffer): void {
    for (let start = 0; start <= chunk.length; ) {
      const newline = chunk.indexOf(NEWLINE, start);
      const piece = chunk.subarray(start, newline === -1 ? chunk.length : newline);
      if (this.oversized === null && this.partialBytes + piece.length > MAX_LINE_BYTES) {
        this.oversized = new RequestIdScanner();
        for (const part of this.partial) this.oversized.feed(part);
        this.partial = [];
        this.partialBytes = 0;
      }
      if (this.oversized !== null) this.oversized.feed(piece);
      else if (piece.length > 0) {
        this.partial.push(piece);
        this.partialBytes += piece.length;
      }
      if (newline === -1) break;
      this.lines.push(this.oversized !== null ? { refused: tooLong(this.oversized.requestId()) } : decodeLine(Buffer.concat(this.partial, this.partialBytes)));
      this.oversized = null;
      this.partial = [];
      this.partialBytes = 0;
      start = newline + 1;
    }
    if (this.lines.length > 0) this.wakeFirstLine?.();
    this.deliver();
  }

  private deliver(): void {
    if (!this.started || this.parse === null || this.held) return;
    while (this.lines.length > 0 && !this.closed) {
      const line = this.lines.shift()!;
      if (typeof line === "string") this.receive(line);
      else this.refuse(line.refused);
    }
    void this.output.flush().catch(() => this.loseOutput());
  }

  /** One line of text: a message, a batch, or what refuses it. */
  private receive(line: string): void {
    let value: unknown;
    try {
      value = JSON.parse(line);
    } catch {
      this.refuse(errorAnswer(null, PARSE_ERROR, "Parse error: the line is not JSON; nothing was done. Send one JSON-RPC message a line."));
      return;
    }
    if (Array.isArray(value)) {
      this.receiveBatch(value);
      return;
    }
    const checked = this.check(value);
    if ("refused" in checked) this.refuse(checked.refused);
    else this.dispatch(checked.message);
  }

  /** The message `value` is, by the SDK's schema, or the invalid request that refuses it. */
  private check(value: unknown): { message: JSONRPCMessage } | { refused: ErrorAnswer } {
    const message = this.parse!(value);
    if (message !== undefined) return { message };
    return { refused: errorAnswer(requestIdOf(value), INVALID_REQUEST, `Invalid Request: ${whatIsWrong(value)}; nothing was done.`) };
  }

  /** A batch, if the negotiated version has batches: each message delivered, the answers sent as one array. */
  private receiveBatch(items: unknown[]): void {
    if (this.protocolVersion === null || !BATCH_VERSIONS.includes(this.protocolVersion)) {
      const why =
        this.protocolVersion === null
          ? "a batch (a JSON array) cannot come before initialize is answered; nothing was done. Send initialize alone first."
          : `MCP protocol version ${this.protocolVersion} has no batches (JSON arrays); nothing was done. Send one message a line.`;
      this.refuse(errorAnswer(null, INVALID_REQUEST, `Invalid Request: ${why}`));
      return;
    }
    if (items.length === 0) {
      this.refuse(errorAnswer(null, INVALID_REQUEST, "Invalid Request: the batch is empty; nothing was done."));
      return;
    }
    const batch: Batch = { waiting: new Map(), answers: [] };
    const messages: JSONRPCMessage[] = [];
    for (const item of items) {
      const checked = this.check(item);
      if ("refused" in checked) {
        batch.answers.push(checked.refused);
        this.onerror?.(new Error(`refused a message of a batch: ${checked.refused.error.message}`));
        continue;
      }
      const { message } = checked;
      if ("method" in message && message.method === "initialize") {
        const id = "id" in message ? message.id : null;
        batch.answers.push(errorAnswer(id, INVALID_REQUEST, "Invalid Request: initialize cannot be part of a batch; nothing was done. Send it alone."));
      } else {
        if ("method" in message && "id" in message) batch.waiting.set(idKey(message.id), (batch.waiting.get(idKey(message.id)) ?? 0) + 1);
        messages.push(message);
      }
    }
    this.batches.push(batch);
    for (const message of messages) this.dispatch(message);
    this.settle(batch, null);
  }

  private dispatch(message: JSONRPCMessage): void {
    if ("method" in message) {
      if (message.method === "initialize" && "id" in message) this.initializeId = message.id;
      // A cancelled request is never answered (the SDK drops its answer): a batch stops waiting for it.
      if (message.method === "notifications/cancelled") {
        const id = (message.params as { requestId?: unknown } | undefined)?.requestId;
        if (typeof id === "string" || typeof id === "number") {
          const batch = this.batches.find((b) => b.waiting.has(idKey(id)));
          if (batch !== undefined) this.settle(batch, id);
        }
      }
    }
    this.onmessage?.(message);
  }

  /** Count `answered` (an id) as answered, and send the batch's answers once none is awaited. */
  private settle(batch: Batch, answered: RequestId | null): void {
    if (answered !== null) {
      const key = idKey(answered);
      const left = (batch.waiting.get(key) ?? 1) - 1;
      if (left > 0) batch.waiting.set(key, left);
      else batch.waiting.delete(key);
    }
    const at = this.batches.indexOf(batch);
    if (batch.waiting.size > 0 || at === -1) return;
    this.batches.splice(at, 1);
    // A batch of notifications alone gets no answer, not an empty array.
    if (batch.answers.length > 0) {
      this.write(batch.answers);
      void this.output.flush().catch(() => this.loseOutput());
    }
  }

  private refuse(answer: ErrorAnswer): void {
    this.write(answer);
    this.onerror?.(new Error(`refused a line: ${answer.error.message}`));
  }

  private fail(error: Error): void {
    if (!this.started) {
      this.earlyErrors.push(error);
      this.wakeFirstLine?.();
    } else {
      this.onerror?.(error);
    }
  }
}

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === "object" && value !== null && !Array.isArray(value);

/**
 * The id to answer an invalid message under: a request's (it has a
 * `method`) when it is a string or a number; otherwise null, as JSON-RPC
 * says, so that no answer is taken for that of another request.
 */
function requestIdOf(value: unknown): RequestId | null {
  if (!isObject(value) || !("method" in value)) return null;
  const id = value.id;
  return typeof id === "string" || typeof id === "number" ? id : null;
}

/** In words, why `value` is no JSON-RPC message as MCP defines them (never the SDK's own text). */
function whatIsWrong(value: unknown): string {
  if (!isObject(value)) return "a message must be a JSON object";
  if (value.jsonrpc !== "2.0") return 'a message must carry "jsonrpc": "2.0"';
  if ("id" in value && !(typeof value.id === "string" || Number.isSafeInteger(value.id))) return 'an "id" must be a string or an integer, never null';
  if ("method" in value && typeof value.method !== "string") return 'a "method" must be a string';
  if (!("method" in value) && !("result" in value) && !("error" in value)) {
    return 'a message must be a request or a notification (with a "method") or a response (with a "result" or an "error")';
  }
  return "the message is no JSON-RPC request, notification or response as MCP defines them";
}

function tooLong(id: RequestId | null): ErrorAnswer {
  return errorAnswer(id, INVALID_REQUEST, `Invalid Request: the line is over ${MAX_LINE_BYTES.toLocaleString("en-US")} bytes (10 MiB), the most one message may hold; nothing was done.`);
}

/** One line's text, without a trailing "\r"; invalid UTF-8 is refused, never patched. */
function decodeLine(bytes: Buffer): Line {
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
class RequestIdScanner {
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
