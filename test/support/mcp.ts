/**
 * Real MCP sessions against the built binary: the SDK's own Client over
 * stdio, as a host would run it.
 */
import { existsSync } from "node:fs";
import { join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";

export const BINARY = join(import.meta.dir, "../../dist/slivingdoc");

export function requireBinary(): void {
  if (!existsSync(BINARY)) throw new Error("dist/slivingdoc is missing: run `npm test` (it builds first) or `npm run build`");
}

export interface BinaryRun {
  stdout: string;
  stderr: string;
  code: number;
  /** Wall time from spawn to exit (or to the kill). */
  ms: number;
  /** Still running at `limitMs`, and killed then. */
  stillRunning: boolean;
}

/** The binary with `args` and exactly `env`, stdin closed; one still running after `limitMs` is killed, and says so. */
export async function runBinary(args: string[], env: Record<string, string>, limitMs: number, cwd?: string): Promise<BinaryRun> {
  requireBinary();
  const started = performance.now();
  const p = Bun.spawn([BINARY, ...args], { env, ...(cwd !== undefined ? { cwd } : {}), stdin: "pipe", stdout: "pipe", stderr: "pipe" });
  p.stdin.end();
  const output = Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text()]);
  const ended = await Promise.race([p.exited.then(() => true), Bun.sleep(limitMs).then(() => false)]);
  const ms = performance.now() - started;
  if (!ended) p.kill("SIGKILL");
  const [stdout, stderr] = await output;
  return { stdout, stderr, code: await p.exited, ms, stillRunning: !ended };
}

export interface Session {
  client: Client;
  stderr: () => string;
  /** The server's process id, to kill it as the world does. */
  pid: () => number | null;
  close(): Promise<void>;
  /** Close the session and wait for the server's stderr to end; resolves with all of it. */
  finish(): Promise<string>;
}

export async function connect(env: Record<string, string>, args: string[] = []): Promise<Session> {
  requireBinary();
  const transport = new StdioClientTransport({ command: BINARY, args: ["serve", ...args], env, stderr: "pipe" });
  let stderr = "";
  transport.stderr?.on("data", (chunk: Buffer) => {
    stderr += chunk.toString("utf8");
  });
  const stderrEnded = new Promise<void>((resolve) => transport.stderr?.on("end", resolve));
  const client = new Client({ name: "slivingdoc-test", version: "1.0.0" });
  await client.connect(transport);
  const close = () => client.close();
  return { client, stderr: () => stderr, pid: () => transport.pid, close, finish: () => close().then(() => stderrEnded).then(() => stderr) };
}

export interface ToolOutcome {
  isError: boolean;
  text: string;
  data: Record<string, unknown>;
}

export async function call(session: Session, name: string, args?: unknown): Promise<ToolOutcome> {
  const result = await session.client.callTool({ name, arguments: args as Record<string, unknown> });
  const content = result.content as Array<{ type: string; text: string }>;
  if (content.length !== 1 || content[0]!.type !== "text") throw new Error("expected exactly one text item");
  return { isError: result.isError === true, text: content[0]!.text, data: result.structuredContent as Record<string, unknown> };
}
