/**
 * The built binary's `serve` driven by hand over stdio, keeping every byte
 * of stdout and stderr — for tests that must inspect the whole stream (the
 * SDK's client consumes stdout itself).
 */
import { BINARY, requireBinary } from "./mcp.ts";

export interface RawServer {
  /** The server's process id. */
  pid: number;
  send(message: unknown): void;
  /** One line of raw bytes (a newline is added): for input that is not valid JSON text. */
  sendBytes(line: Uint8Array): void;
  /** Raw bytes, no newline added, once the pipe has taken them: a line too long to build whole goes in parts. */
  write(bytes: Uint8Array | string): Promise<void>;
  /** The next line the server wrote that `next` has not returned yet (a message, or an array of them), waiting up to `ms`. */
  next(ms?: number): Promise<unknown>;
  /** The response with this id, waiting up to `ms`. */
  answer(id: number, ms?: number): Promise<{ result?: { isError?: boolean; content: Array<{ text: string }>; structuredContent: Record<string, unknown> }; error?: unknown }>;
  /** Initialise the session as a host would. */
  initialize(): Promise<void>;
  /** Close stdin and wait for the exit; returns everything the process wrote. */
  finish(): Promise<{ code: number; stdout: string; stderr: string }>;
}

export function spawnServe(env: Record<string, string>, args: string[] = []): RawServer {
  requireBinary();
  const p = Bun.spawn([BINARY, "serve", ...args], { env, stdin: "pipe", stdout: "pipe", stderr: "pipe" });
  let stdout = "";
  const messages: Array<Record<string, unknown>> = [];
  const reader = (async () => {
    let buffer = "";
    const decoder = new TextDecoder();
    for await (const chunk of p.stdout) {
      const text = decoder.decode(chunk, { stream: true });
      stdout += text;
      buffer += text;
      for (let nl = buffer.indexOf("\n"); nl >= 0; nl = buffer.indexOf("\n")) {
        messages.push(JSON.parse(buffer.slice(0, nl)));
        buffer = buffer.slice(nl + 1);
      }
    }
  })();
  const stderr = new Response(p.stderr).text();
  let taken = 0;
  const server: RawServer = {
    pid: p.pid,
    send: (message) => {
      p.stdin.write(`${JSON.stringify(message)}\n`);
      void p.stdin.flush();
    },
    sendBytes: (line) => {
      p.stdin.write(line);
      p.stdin.write("\n");
      void p.stdin.flush();
    },
    async write(bytes) {
      p.stdin.write(bytes);
      await p.stdin.flush();
    },
    async next(ms = 30_000) {
      for (const deadline = Date.now() + ms; Date.now() < deadline; ) {
        if (messages.length > taken) return messages[taken++];
        await Bun.sleep(10);
      }
      throw new Error(`no line after the ${taken} already read`);
    },
    async answer(id, ms = 30_000) {
      for (const deadline = Date.now() + ms; Date.now() < deadline; ) {
        const found = messages.find((m) => m.id === id);
        if (found) return found as never;
        await Bun.sleep(10);
      }
      throw new Error(`no answer to request ${id}`);
    },
    async initialize() {
      server.send({ jsonrpc: "2.0", id: 0, method: "initialize", params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "raw", version: "1" } } });
      await server.answer(0);
      server.send({ jsonrpc: "2.0", method: "notifications/initialized" });
    },
    async finish() {
      await p.stdin.end();
      const code = await p.exited;
      await reader;
      return { code, stdout, stderr: await stderr };
    },
  };
  return server;
}
