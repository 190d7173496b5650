/**
 * The MCP stdio transport: newline-delimited JSON-RPC on stdin and stdout,
 * framed exactly as the SDK's StdioServerTransport frames it (a line ends at
 * "\n", a trailing "\r" is dropped, at most 10 MiB unread; each line parsed
 * by the SDK's own deserializer). Two differences, both for start-up: it
 * reads Bun's stdin stream and writes a file sink instead of Node's streams
 * (src/surfaces/stdio.ts), and it can read the first line before the SDK is
 * loaded, so that a plain `initialize` is answered early (handshake.ts).
 *
 * And one difference in what it accepts: a line that is not valid UTF-8 is
 * refused with a JSON-RPC parse error, where the SDK would decode it with
 * U+FFFD in place of the bad bytes — and a commit message would then be
 * stored changed instead of kept byte for byte or refused.
 */
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js";
import type { JSONRPCMessage } from "@modelcontextprotocol/sdk/types.js";
import type { TextSink } from "../stdio.ts";

/** The SDK's STDIO_DEFAULT_MAX_BUFFER_SIZE. */
const MAX_BUFFER_BYTES = 10 * 1024 * 1024;
const NEWLINE = 0x0a;

/** JSON-RPC's "Parse error": what a message that is not UTF-8 text is. */
const PARSE_ERROR = -32700;

/** A line whose bytes are not valid UTF-8; `invalid` is its lossy decoding, read only for the request's id. */
interface InvalidLine {
  invalid: string;
}

const strictUtf8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });

export class StdioTransport implements Transport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: (message: JSONRPCMessage) => void;

  /** Resolves when stdin has ended (or failed): the host is gone. */
  readonly ended: Promise<void>;

  private readonly reader: { read(): Promise<{ done: boolean; value?: Uint8Array }>; cancel(): Promise<void> };
  private buffer: Buffer | undefined;
  /** Complete lines not yet delivered (all of them until the server starts listening). */
  private readonly lines: Array<string | InvalidLine> = [];
  private deserialize: ((line: string) => JSONRPCMessage) | null = null;
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

  constructor(
    input: ReadableStream<Uint8Array>,
    private readonly output: TextSink,
  ) {
    this.reader = input.getReader();
    this.ended = this.pump();
  }

  /** Waits for the first complete line (or the end of input) and returns it without consuming it. */
  async firstLine(): Promise<string | null> {
    while (this.lines.length === 0 && !this.inputEnded && !this.held && this.earlyErrors.length === 0) {
      await new Promise<void>((resolve) => {
        this.wakeFirstLine = resolve;
      });
    }
    const first = this.lines[0];
    // Not text: never answered early, and refused once delivered.
    return first === undefined ? null : typeof first === "string" ? first : "";
  }

  /**
   * Sends `response` as the answer to the first line, which stays queued for
   * the server: its own answer to it is then dropped (and compared).
   */
  answerFirstLine(response: { id: string | number }): Promise<void> {
    const text = `${JSON.stringify(response)}\n`;
    this.earlyAnswer = { id: response.id, text };
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

  /** The SDK's deserializer (from server.ts, which loads the SDK), for start() to deliver messages with. */
  attach(deserialize: (line: string) => JSONRPCMessage): void {
    this.deserialize = deserialize;
  }

  async start(): Promise<void> {
    if (this.deserialize === null) throw new Error("StdioTransport: attach the deserializer before starting");
    this.started = true;
    for (const error of this.earlyErrors.splice(0)) this.fail(error);
    if (this.closed) this.onclose?.();
    else this.deliver();
  }

  async send(message: JSONRPCMessage): Promise<void> {
    const text = `${JSON.stringify(message)}\n`;
    const early = this.earlyAnswer;
    if (early !== null && "id" in message && message.id === early.id && !("method" in message)) {
      this.earlyAnswer = null;
      if (text !== early.text) this.onerror?.(new Error("the SDK's answer to initialize differs from the early answer already sent"));
      return;
    }
    this.output.write(text);
    await this.output.flush();
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.buffer = undefined;
    this.lines.length = 0;
    await this.reader.cancel().catch(() => {});
    // Before start() the server is not listening yet; start() reports the close.
    if (this.started) this.onclose?.();
  }

  private async pump(): Promise<void> {
    try {
      for (;;) {
        const { done, value } = await this.reader.read();
        if (done || this.closed || value === undefined) break;
        this.append(value);
      }
    } catch (error) {
      if (!this.closed) this.fail(error instanceof Error ? error : new Error(String(error)));
    } finally {
      this.inputEnded = true;
      this.wakeFirstLine?.();
    }
  }

  private append(chunk: Uint8Array): void {
    const size = (this.buffer?.length ?? 0) + chunk.length;
    if (size > MAX_BUFFER_BYTES) {
      // As the SDK: the buffer is dropped and the transport closes.
      this.buffer = undefined;
      this.fail(new Error(`ReadBuffer exceeded maximum size of ${MAX_BUFFER_BYTES} bytes`));
      void this.close();
      return;
    }
    const bytes = Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
    this.buffer = this.buffer ? Buffer.concat([this.buffer, bytes]) : Buffer.from(bytes);
    for (let index = this.buffer.indexOf(NEWLINE); index !== -1; index = this.buffer.indexOf(NEWLINE)) {
      this.lines.push(decodeLine(this.buffer.subarray(0, index)));
      this.buffer = this.buffer.subarray(index + 1);
    }
    if (this.lines.length > 0) this.wakeFirstLine?.();
    this.deliver();
  }

  private deliver(): void {
    const deserialize = this.deserialize;
    if (!this.started || deserialize === null || this.held) return;
    while (this.lines.length > 0 && !this.closed) {
      const line = this.lines.shift()!;
      if (typeof line !== "string") {
        this.refuseInvalid(line);
        continue;
      }
      let message: JSONRPCMessage;
      try {
        message = deserialize(line);
      } catch (error) {
        this.fail(error instanceof Error ? error : new Error(String(error)));
        continue;
      }
      this.onmessage?.(message);
    }
  }

  /** Answer a line that is not UTF-8 with a parse error, under its request's id when one can be read. */
  private refuseInvalid(line: InvalidLine): void {
    let id: string | number | null = null;
    try {
      const parsed = JSON.parse(line.invalid) as { id?: unknown };
      if (typeof parsed.id === "string" || typeof parsed.id === "number") id = parsed.id;
    } catch {
      /* no id to answer under */
    }
    const error = { code: PARSE_ERROR, message: "Parse error: the message is not valid UTF-8 text; nothing was done. Send the text as UTF-8." };
    this.output.write(`${JSON.stringify({ jsonrpc: "2.0", id, error })}\n`);
    void this.output.flush();
    this.onerror?.(new Error("refused a message that is not valid UTF-8"));
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

/** One line's text, without a trailing "\r"; invalid UTF-8 is kept apart (InvalidLine), never patched. */
function decodeLine(bytes: Buffer): string | InvalidLine {
  try {
    return strictUtf8.decode(bytes).replace(/\r$/, "");
  } catch {
    return { invalid: bytes.toString("utf8").replace(/\r$/, "") };
  }
}
