/**
 * An MCP server on stdio driven by hand — the built binary, or the same
 * binary inside `podman run -i` — keeping every answer and every log record,
 * so tests can wait on either and on the exit.
 */

/** A log record (one JSON object a line), or the line itself for anything else (podman's own messages). */
function parseRecord(line: string): Record<string, unknown> {
  try {
    const parsed = JSON.parse(line);
    if (parsed !== null && typeof parsed === "object") return parsed;
  } catch {
    /* not a log record */
  }
  return { msg: null, line };
}

export interface Served {
  send(message: unknown): void;
  answer(id: number): Promise<Record<string, any>>;
  /** Resolves when stderr has a log record with this message. */
  logged(msg: string): Promise<void>;
  records(): Array<Record<string, unknown>>;
  kill(signal: NodeJS.Signals): void;
  endInput(): void;
  exited: Promise<number>;
}

/** Spawn `command` (a server on stdio) and keep every message and log record it writes. */
export function spawnMcp(command: string[], env: Record<string, string | undefined>): Served {
  const p = Bun.spawn(command, { env, stdin: "pipe", stdout: "pipe", stderr: "pipe" });
  const messages: Array<Record<string, any>> = [];
  const records: Array<Record<string, unknown>> = [];
  const waiters: Array<() => void> = [];
  const wake = () => {
    for (const w of waiters.splice(0)) w();
  };
  const lines = async (stream: ReadableStream<Uint8Array>, each: (line: string) => void) => {
    const decoder = new TextDecoder();
    let buffer = "";
    for await (const chunk of stream) {
      buffer += decoder.decode(chunk, { stream: true });
      for (let nl = buffer.indexOf("\n"); nl >= 0; nl = buffer.indexOf("\n")) {
        each(buffer.slice(0, nl));
        buffer = buffer.slice(nl + 1);
      }
      wake();
    }
    wake();
  };
  let ended = false;
  const done = Promise.all([lines(p.stdout, (l) => messages.push(JSON.parse(l))), lines(p.stderr, (l) => records.push(parseRecord(l)))]).then(() => {
    ended = true;
    wake();
  });
  const until = async <T>(find: () => T | undefined, what: string): Promise<T> => {
    for (;;) {
      const found = find();
      if (found !== undefined) return found;
      if (ended) throw new Error(`the server exited without ${what}; its log: ${JSON.stringify(records)}`);
      await new Promise<void>((resolve) => waiters.push(resolve));
    }
  };
  return {
    send(message) {
      p.stdin.write(`${JSON.stringify(message)}\n`);
      void p.stdin.flush();
    },
    answer: (id) => until(() => messages.find((m) => m.id === id), `answering request ${id}`),
    logged: async (msg) => {
      await until(() => records.find((r) => r.msg === msg), `logging "${msg}"`);
    },
    records: () => records,
    kill: (signal) => p.kill(signal),
    endInput: () => void p.stdin.end(),
    exited: done.then(() => p.exited),
  };
}

export async function initialize(s: Served): Promise<void> {
  s.send({ jsonrpc: "2.0", id: 0, method: "initialize", params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "stop-test", version: "1" } } });
  await s.answer(0);
  s.send({ jsonrpc: "2.0", method: "notifications/initialized" });
}

export function callTool(s: Served, id: number, name: string, args: Record<string, unknown>): void {
  s.send({ jsonrpc: "2.0", id, method: "tools/call", params: { name, arguments: args } });
}

