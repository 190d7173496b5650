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
import { decodeLine, type ErrorAnswer, errorAnswer, INVALID_REQUEST, type Line, MAX_LINE_BYTES, PARSE_ERROR, type RequestId, RequestIdScanner, requestIdOf, tooLong, whatIsWrong } from "./stdio-lines.ts";

const NEWLINE = 0x0a;

/** The MCP protocol versions with JSON-RPC batches: added in 2025-03-26, removed in 2025-06-18. */
const BATCH_VERSIONS: readonly string[] = ["2025-03-26"];

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
