/**
 * The early answer to `initialize` (src/surfaces/mcp/handshake.ts) is the
 * SDK's own answer, byte for byte, for every request it answers; anything it
 * cannot vouch for is left to the SDK. Held against the SDK's real server in
 * process (so an SDK upgrade that changes either shows here), and once
 * through the binary: one answer per request, the session works after it.
 */
import { describe, expect, test } from "bun:test";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { InMemoryTransport } from "@modelcontextprotocol/sdk/inMemory.js";
import { LATEST_PROTOCOL_VERSION, SUPPORTED_PROTOCOL_VERSIONS as SDK_VERSIONS } from "@modelcontextprotocol/sdk/types.js";
import { NO_PATH_SETS } from "../../src/contract/results.ts";
import { SILENT_LOG } from "../../src/surfaces/log.ts";
import { earlyInitializeResponse, SUPPORTED_PROTOCOL_VERSIONS, serverIdentity } from "../../src/surfaces/mcp/handshake.ts";
import { createMcpServer } from "../../src/surfaces/mcp/server.ts";
import type { OperationContext } from "../../src/surfaces/operation.ts";
import { spawnServe } from "../support/raw-mcp.ts";
import { mulberry32 } from "../support/seeded.ts";

const identity = serverIdentity("9.9.9", "/notebook", NO_PATH_SETS);

/** The id of the ping sent behind each message: its answer marks that the SDK is done with the message. */
const SENTINEL = "handshake-test-sentinel";

/**
 * The SDK server's answer to one raw message (a fresh server each time, as
 * each session has one): every message it sends back, one JSON a line, or
 * "(no answer)". A ping goes right behind the message; the in-memory
 * transport runs the server without I/O, so once the ping is answered and
 * the microtasks after it have run, any answer to the message has arrived.
 */
async function sdkAnswer(message: unknown): Promise<string> {
  const { server } = createMcpServer({ identity, sets: NO_PATH_SETS, operation: {} as OperationContext });
  const [client, serverSide] = InMemoryTransport.createLinkedPair();
  const answers: string[] = [];
  const done = new Promise<void>((resolve) => {
    client.onmessage = (m) => {
      if ("id" in m && m.id === SENTINEL) resolve();
      else answers.push(JSON.stringify(m));
    };
  });
  await server.connect(serverSide);
  await client.start();
  await client.send(message as never);
  await client.send({ jsonrpc: "2.0", id: SENTINEL, method: "ping" });
  await done;
  await new Promise((resolve) => setImmediate(resolve));
  await server.close();
  return answers.length === 0 ? "(no answer)" : answers.join("\n");
}

const base = () => ({
  jsonrpc: "2.0",
  id: 1 as string | number,
  method: "initialize",
  params: { protocolVersion: "2025-06-18", capabilities: {} as Record<string, unknown>, clientInfo: { name: "host", version: "1.0" } as Record<string, unknown> },
});

type Msg = ReturnType<typeof base> & Record<string, unknown>;
const variant = (change: (m: Msg) => void): Msg => {
  const m = base() as Msg;
  change(m);
  return m;
};

/** Requests the early path answers: each must be answered exactly as the SDK does. */
const answered: Msg[] = [
  base(),
  ...[...SDK_VERSIONS, "1999-01-01", ""].map((v) => variant((m) => (m.params.protocolVersion = v))),
  variant((m) => (m.id = "abc")),
  variant((m) => (m.id = 0)),
  variant((m) => (m.id = -7)),
  variant((m) => (m.params.capabilities = { roots: { listChanged: true } })),
  variant((m) => (m.params.capabilities = { roots: {}, sampling: {}, elicitation: {} })),
  variant((m) => (m.params.capabilities = { sampling: { context: {}, tools: {} } })),
  variant((m) => (m.params.capabilities = { elicitation: { form: { applyDefaults: true }, url: {} } })),
  variant((m) => (m.params.capabilities = { elicitation: { form: {} } })),
  variant((m) => (m.params.capabilities = { experimental: { "x-thing": { on: true } } })),
  variant((m) => (m.params.clientInfo = { name: "h", version: "2", title: "Host", websiteUrl: "https://x", description: "d" })),
];

/** Requests the early path leaves to the SDK (malformed ones, and valid ones outside its subset). */
const leftToSdk: unknown[] = [
  null,
  [],
  "initialize",
  variant((m) => (m.jsonrpc = "1.0")),
  variant((m) => (m.method = "initialise")),
  variant((m) => (m.id = 1.5)),
  variant((m) => (m.id = null as never)),
  variant((m) => (m.id = 2 ** 60)),
  variant((m) => delete (m as Partial<Msg>).id),
  variant((m) => (m.extra = 1)),
  variant((m) => delete (m as Partial<Msg>).params),
  variant((m) => ((m.params as Record<string, unknown>)._meta = { progressToken: 1 })),
  variant((m) => ((m.params as Record<string, unknown>).protocolVersion = 20250618)),
  variant((m) => delete (m.params as Partial<Msg["params"]>).capabilities),
  variant((m) => delete (m.params as Partial<Msg["params"]>).clientInfo),
  variant((m) => (m.params.clientInfo = { name: "h" })),
  variant((m) => (m.params.clientInfo = { name: "h", version: 2 })),
  variant((m) => (m.params.clientInfo = { name: "h", version: "2", icons: [] })),
  variant((m) => (m.params.capabilities = { roots: { listChanged: "yes" } })),
  variant((m) => (m.params.capabilities = { sampling: { context: null } })),
  variant((m) => (m.params.capabilities = { elicitation: { form: { applyDefaults: "x" } } })),
  variant((m) => (m.params.capabilities = { experimental: { x: 1 } })),
  variant((m) => (m.params.capabilities = { tasks: {} })),
  variant((m) => (m.params.capabilities = [] as never)),
];

describe("the early initialize answer", () => {
  test("supports the SDK's protocol versions, newest first", () => {
    expect<string[]>([...SUPPORTED_PROTOCOL_VERSIONS]).toEqual([...SDK_VERSIONS]);
    expect(SUPPORTED_PROTOCOL_VERSIONS[0]).toBe(LATEST_PROTOCOL_VERSION);
  });

  test("is the SDK server's answer, byte for byte", async () => {
    for (const message of answered) {
      const early = earlyInitializeResponse(message, identity);
      expect(early).not.toBeNull();
      expect(JSON.stringify(early)).toBe(await sdkAnswer(message));
    }
  });

  test("leaves everything else to the SDK", () => {
    for (const message of leftToSdk) expect(earlyInitializeResponse(message, identity)).toBeNull();
  });

  test("answers only what the SDK answers the same way (seeded random requests)", async () => {
    const random = mulberry32(8);
    const pick = <T>(xs: T[]) => xs[Math.floor(random() * xs.length)]!;
    const values: unknown[] = [undefined, null, true, 1, 1.5, "", "x", "2025-06-18", [], {}, { listChanged: true }, { listChanged: 1 }, { a: {} }, { a: 1 }, { form: {} }];
    const keys = ["jsonrpc", "id", "method", "params", "params.protocolVersion", "params.capabilities", "params.clientInfo", "params.clientInfo.version", "params.capabilities.roots", "params.capabilities.sampling", "params.capabilities.elicitation", "params.capabilities.experimental", "params.capabilities.sampling.context", "params._meta"];
    let early = 0;
    for (let i = 0; i < 300; i++) {
      const m = base() as Record<string, unknown>;
      for (let j = 0; j < 1 + Math.floor(random() * 2); j++) {
        const path = pick(keys).split(".");
        let at = m;
        for (const k of path.slice(0, -1)) at = (at[k] = typeof at[k] === "object" && at[k] !== null ? at[k] : {}) as Record<string, unknown>;
        const v = pick(values);
        if (v === undefined) delete at[path.at(-1)!];
        else at[path.at(-1)!] = structuredClone(v);
      }
      const answer = earlyInitializeResponse(m, identity);
      if (answer === null) continue;
      early++;
      expect(JSON.stringify(answer)).toBe(await sdkAnswer(m));
    }
    // The mutations leave a fair share of requests valid, so both branches ran.
    expect(early).toBeGreaterThan(10);
  });
});

test("the binary answers initialize once, then serves the session", async () => {
  const dir = mkdtempSync(join(tmpdir(), "slivingdoc-handshake-"));
  const env = { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: dir, TMPDIR: tmpdir() };
  const server = spawnServe(env, ["--store", `sqlite:${join(dir, "store.db")}`, "--private-root", join(dir, "private"), "--workspace-root", join(dir, "ws")]);
  server.send(base());
  server.send({ jsonrpc: "2.0", method: "notifications/initialized" });
  server.send({ jsonrpc: "2.0", id: 2, method: "tools/list" });
  server.send({ jsonrpc: "2.0", id: 3, method: "tools/call", params: { name: "notes_pull", arguments: {} } });
  await server.answer(3);
  const { code, stdout, stderr } = await server.finish();
  expect(code).toBe(0);
  const ids = stdout.trim().split("\n").map((line) => JSON.parse(line).id);
  expect(ids).toEqual([1, 2, 3]);
  const first = JSON.parse(stdout.split("\n")[0]!);
  expect(first.result.protocolVersion).toBe("2025-06-18");
  expect(first.result.serverInfo.name).toBe("slivingdoc");
  expect(stderr).not.toContain("differs");
  expect(stderr).not.toContain("transport error");
});
