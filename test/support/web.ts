/**
 * `slivingdoc web` run as a user runs it, for the tests: the built binary
 * started with `--port 0 --json`, its one ready line read (the URL with
 * its token), requests made with the token, and its event stream read
 * event by event.
 */
import { BINARY, requireBinary } from "./mcp.ts";

export interface WebProcess {
  url: string;
  port: number;
  token: string;
  /** http://127.0.0.1:PORT */
  base: string;
  process: ReturnType<typeof Bun.spawn>;
  /** A GET with the token as a bearer (or `init`'s headers instead). */
  get(path: string, init?: RequestInit): Promise<Response>;
  /** SIGTERM, then its exit code and all it wrote on stderr. */
  stop(): Promise<{ code: number; stderr: string }>;
}

/** The first line `stream` gives, and the reader to go on with. */
async function firstLine(stream: ReadableStream<Uint8Array>): Promise<string> {
  const reader = stream.getReader();
  let text = "";
  while (!text.includes("\n")) {
    const { value, done } = await reader.read();
    if (done) break;
    text += new TextDecoder().decode(value);
  }
  reader.releaseLock();
  return text;
}

/** `slivingdoc web --port 0 --json ARGS` with `env`, once it printed its URL; throws with its stderr when it exits instead. */
export async function startWeb(env: Record<string, string>, ...args: string[]): Promise<WebProcess> {
  requireBinary();
  const p = Bun.spawn([BINARY, "web", "--port", "0", "--json", ...args], { env, stdin: "ignore", stdout: "pipe", stderr: "pipe" });
  const line = await firstLine(p.stdout);
  if (line === "") throw new Error(`web exited ${await p.exited}: ${await new Response(p.stderr).text()}`);
  const { url, port } = JSON.parse(line) as { url: string; port: number };
  const token = new URL(url).searchParams.get("token")!;
  const base = `http://127.0.0.1:${port}`;
  return {
    url,
    port,
    token,
    base,
    process: p,
    get: (path, init) => fetch(`${base}${path}`, { redirect: "manual", ...init, headers: init?.headers ?? { Authorization: `Bearer ${token}` } }),
    async stop() {
      p.kill("SIGTERM");
      const [code, stderr] = await Promise.all([p.exited, new Response(p.stderr).text()]);
      return { code, stderr };
    },
  };
}

/** A page's event stream: its events one by one, as `event` and parsed `data`. */
export async function openEvents(web: WebProcess): Promise<{ next(): Promise<{ event: string; data: any }>; close(): void }> {
  const controller = new AbortController();
  const response = await web.get("/events", { headers: { Authorization: `Bearer ${web.token}` }, signal: controller.signal });
  if (response.status !== 200) throw new Error(`/events answered ${response.status}`);
  const reader = response.body!.getReader();
  let buffered = "";
  return {
    async next() {
      for (;;) {
        const end = buffered.indexOf("\n\n");
        if (end >= 0) {
          const block = buffered.slice(0, end);
          buffered = buffered.slice(end + 2);
          // A comment (": ping") is no event.
          if (block.startsWith(":")) continue;
          const event = /^event: (.*)$/m.exec(block)?.[1] ?? "message";
          const data = /^data: (.*)$/m.exec(block)?.[1] ?? "null";
          return { event, data: JSON.parse(data) };
        }
        const { value, done } = await reader.read();
        if (done) throw new Error("the event stream ended");
        buffered += new TextDecoder().decode(value);
      }
    },
    close: () => controller.abort(),
  };
}
