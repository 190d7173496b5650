/**
 * An MCP server on stdio driven by hand — the built binary's `serve`, or any
 * command that runs one (the binary inside `podman run -i`, or behind the
 * npm launcher): raw JSON-RPC lines in, and everything it writes kept —
 * every answer, every log record, and both streams byte for byte — for
 * tests that send what a host never would, or must inspect the whole
 * stream (the SDK's client consumes stdout itself).
 *
 * Every wait (an answer, the next line, a log record) ends with the
 * server's exit, or after a bound, and then fails saying what it waited
 * for. A line on stdout that is not JSON, or a last line without its
 * newline, fails the next wait and `finish`: stdout must be JSON-RPC,
 * line by line.
 */
import type { Subprocess } from "bun";
import { BINARY, requireBinary } from "./mcp.ts";

/** How long a wait lasts at most, unless the caller says otherwise. */
const WAIT_MS = 60_000;

export interface RawMcp {
  /** The server's process (its exit code and signal once it ended). */
  child: Subprocess<"pipe", "pipe", "pipe">;
  pid: number;
  /**
   * One message (or a batch: an array) as one line. Lines sent in one turn
   * of the event loop go out in one write, as a host's would: a cancel sent
   * right behind its request reaches the server with it.
   */
  send(message: unknown): void;
  /** One line of raw bytes (a newline is added): for input that is not valid JSON text. */
  sendBytes(line: Uint8Array): void;
  /** Raw bytes, no newline added, once the pipe has taken them: a line too long to build whole goes in parts. */
  write(bytes: Uint8Array | string): Promise<void>;
  /** Initialise the session as a host would (request id 0). */
  initialize(): Promise<void>;
  /** Send one tools/call. */
  callTool(id: number, name: string, args: Record<string, unknown>): void;
  /** The next line the server wrote that `next` has not returned yet (a message, or an array of them). */
  next(ms?: number): Promise<unknown>;
  /** The response with this id. */
  answer(id: number, ms?: number): Promise<Record<string, any>>;
  /** Every message read so far. */
  messages(): ReadonlyArray<Record<string, any>>;
  /** Resolves once stderr has a log record with this message. */
  logged(msg: string, ms?: number): Promise<void>;
  /** The log records so far; a stderr line that is not one (podman's own messages) as `{ msg: null, line }`. */
  records(): Array<Record<string, unknown>>;
  /** Whether both streams have ended: nothing more will come. */
  readonly ended: boolean;
  kill(signal: NodeJS.Signals | number): void;
  /** Close stdin, as a host ends the session. */
  endInput(): void;
  /** Stop reading stdout and close it, as a host that went away: the server's next write finds no reader (EPIPE). */
  closeOutput(): Promise<void>;
  /** The exit code, once both streams ended and the process exited. */
  exited: Promise<number>;
  /** Close stdin and wait for the exit; returns everything the process wrote. */
  finish(): Promise<{ code: number; stdout: string; stderr: string }>;
}

/** A log record (one JSON object a line), or the line itself for anything else. */
function parseRecord(line: string): Record<string, unknown> {
  try {
    const parsed = JSON.parse(line);
    if (parsed !== null && typeof parsed === "object") return parsed;
  } catch {
    /* not a log record */
  }
  return { msg: null, line };
}

/** Spawn `command` (a server on stdio) and keep everything it writes. */
export function spawnMcp(command: string[], env: Record<string, string | undefined>): RawMcp {
  const p = Bun.spawn(command, { env, stdin: "pipe", stdout: "pipe", stderr: "pipe" });
  const messages: Array<Record<string, any>> = [];
  const records: Array<Record<string, unknown>> = [];
  const text = { stdout: "", stderr: "" };
  let broken: Error | null = null;
  let ended = false;
  const waiters: Array<() => void> = [];
  const wake = () => {
    for (const w of waiters.splice(0)) w();
  };
  const readers: Partial<Record<"stdout" | "stderr", { cancel(): Promise<void> }>> = {};
  const lines = async (stream: ReadableStream<Uint8Array>, name: "stdout" | "stderr", each: (line: string) => void) => {
    const decoder = new TextDecoder();
    let buffer = "";
    const reader = stream.getReader();
    readers[name] = reader;
    for (;;) {
      const { done, value: chunk } = await reader.read();
      if (done) break;
      const got = decoder.decode(chunk, { stream: true });
      text[name] += got;
      buffer += got;
      for (let nl = buffer.indexOf("\n"); nl >= 0; nl = buffer.indexOf("\n")) {
        each(buffer.slice(0, nl));
        buffer = buffer.slice(nl + 1);
      }
      wake();
    }
    if (name === "stdout" && buffer !== "") broken ??= new Error(`stdout ended inside a line: ${JSON.stringify(buffer.slice(0, 200))}`);
    else if (buffer !== "") each(buffer);
  };
  const message = (line: string) => {
    try {
      messages.push(JSON.parse(line));
    } catch {
      broken ??= new Error(`a line on stdout is not JSON: ${JSON.stringify(line.slice(0, 200))}`);
    }
  };
  const done = Promise.all([lines(p.stdout, "stdout", message), lines(p.stderr, "stderr", (l) => records.push(parseRecord(l)))]).finally(() => {
    ended = true;
    wake();
  });
  const until = async <T>(find: () => T | undefined, what: string, ms: number): Promise<T> => {
    const deadline = performance.now() + ms;
    for (;;) {
      if (broken) throw broken;
      const found = find();
      if (found !== undefined) return found;
      if (ended) throw new Error(`the server exited without ${what}; its log: ${text.stderr}`);
      const left = deadline - performance.now();
      if (left <= 0) throw new Error(`no ${what} within ${ms} ms`);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, left);
        waiters.push(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
  };
  const exited = done.then(() => p.exited);
  let flushing = false;
  const flushSoon = () => {
    if (flushing) return;
    flushing = true;
    queueMicrotask(() => {
      flushing = false;
      void p.stdin.flush();
    });
  };
  let taken = 0;
  const server: RawMcp = {
    child: p,
    pid: p.pid,
    send(message) {
      p.stdin.write(`${JSON.stringify(message)}\n`);
      flushSoon();
    },
    sendBytes(line) {
      p.stdin.write(line);
      p.stdin.write("\n");
      flushSoon();
    },
    async write(bytes) {
      p.stdin.write(bytes);
      await p.stdin.flush();
    },
    async initialize() {
      server.send({ jsonrpc: "2.0", id: 0, method: "initialize", params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "raw", version: "1" } } });
      await server.answer(0);
      server.send({ jsonrpc: "2.0", method: "notifications/initialized" });
    },
    callTool(id, name, args) {
      server.send({ jsonrpc: "2.0", id, method: "tools/call", params: { name, arguments: args } });
    },
    next: (ms = WAIT_MS) => until(() => (messages.length > taken ? messages[taken++] : undefined), `line after the ${taken} already read`, ms),
    answer: (id, ms = WAIT_MS) => until(() => messages.find((m) => m.id === id), `answer to request ${id}`, ms),
    messages: () => messages,
    logged: async (msg, ms = WAIT_MS) => {
      await until(() => records.find((r) => r.msg === msg), `log record "${msg}"`, ms);
    },
    records: () => records,
    get ended() {
      return ended;
    },
    kill: (signal) => p.kill(signal),
    endInput: () => void p.stdin.end(),
    closeOutput: async () => {
      await readers.stdout?.cancel();
    },
    exited,
    async finish() {
      await p.stdin.end();
      const code = await exited;
      if (broken) throw broken;
      return { code, stdout: text.stdout, stderr: text.stderr };
    },
  };
  return server;
}

/** The built binary's `serve` with these arguments. */
export function spawnServe(env: Record<string, string>, args: string[] = []): RawMcp {
  requireBinary();
  return spawnMcp([BINARY, "serve", ...args], env);
}
