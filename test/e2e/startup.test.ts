/**
 * What start-up puts off, and what it must not (src/surfaces/verified-store.ts,
 * src/surfaces/mcp/serve.ts): a store whose probe is trusted is opened on
 * first use, so its failures reach the call with the store's token, exactly
 * as when it was opened at start; a probe that fails, and bad configuration,
 * still refuse the start with exit code 2 and no answer on stdout, even to
 * an `initialize` already waiting. No S3 server is needed: the endpoint is a
 * closed local port.
 */
import { afterAll, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { EXIT_CODES } from "../../src/contract/tokens.ts";
import { callerDigest } from "../../src/store/object-store.ts";
import { probeRecordName } from "../../src/surfaces/verified-store.ts";
import { BINARY, requireBinary } from "../support/mcp.ts";
import { spawnServe } from "../support/raw-mcp.ts";

const root = mkdtempSync(join(tmpdir(), "slivingdoc-startup-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));

const endpoint = "http://127.0.0.1:9";
const env = {
  PATH: process.env.PATH ?? "/usr/bin:/bin",
  HOME: join(root, "home"),
  TMPDIR: tmpdir(),
  AWS_ACCESS_KEY_ID: "test-key-id",
  AWS_SECRET_ACCESS_KEY: "test-secret-key",
  AWS_REGION: "us-east-1",
};
const storeArgs = (prefix: string) => ["--store", `s3://bucket/${prefix}`, "--endpoint", endpoint, "--force-path-style"];

/** A passed probe of this store by these credentials, as a start that probed it would have left it. */
function trustProbe(privateRoot: string, prefix: string): void {
  const spec = { kind: "s3" as const, bucket: "bucket", prefix: `${prefix}/`, endpoint, forcePathStyle: true };
  const name = probeRecordName(spec, callerDigest(env.AWS_ACCESS_KEY_ID));
  mkdirSync(join(privateRoot, "probes"), { recursive: true });
  writeFileSync(join(privateRoot, "probes", `${name}.json`), `${JSON.stringify({ passedAt: Date.now() })}\n`);
}

const INITIALIZE = { jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "t", version: "1" } } };

test("a trusted S3 store that cannot be reached fails the CLI call with the store's token, not the start", async () => {
  requireBinary();
  const privateRoot = join(root, "cli-private");
  trustProbe(privateRoot, "cli");
  const p = Bun.spawn([BINARY, "pull", "--json", ...storeArgs("cli"), "--private-root", privateRoot, join(root, "cli-notebook")], { env, stdout: "pipe", stderr: "pipe" });
  const [stdout, code] = await Promise.all([new Response(p.stdout).text(), p.exited]);
  expect(JSON.parse(stdout)).toMatchObject({ code: "STORAGE_FAILURE", reason: "MANIFEST_READ", action: "RETRY" });
  expect(code).toBe(EXIT_CODES.RETRYABLE);
});

test("over MCP, the same store answers initialize, then fails the call with the store's token and keeps serving", async () => {
  const privateRoot = join(root, "mcp-private");
  trustProbe(privateRoot, "mcp");
  const server = spawnServe(env, [...storeArgs("mcp"), "--private-root", privateRoot, "--workspace-root", join(root, "mcp-ws")]);
  await server.initialize();
  server.send({ jsonrpc: "2.0", id: 2, method: "tools/call", params: { name: "notes_pull", arguments: {} } });
  const answer = await server.answer(2);
  expect(answer.result?.isError).toBe(true);
  expect(answer.result?.structuredContent).toMatchObject({ code: "STORAGE_FAILURE", reason: "MANIFEST_READ" });
  server.send({ jsonrpc: "2.0", id: 3, method: "tools/list" });
  expect((await server.answer(3)).result).toBeDefined();
  expect((await server.finish()).code).toBe(0);
});

test("an S3 store whose probe fails refuses the start: exit 2, one INCOMPATIBLE_STORE line, no answer to a waiting initialize", async () => {
  const server = spawnServe(env, [...storeArgs("refused"), "--private-root", join(root, "refused-private"), "--workspace-root", join(root, "refused-ws")]);
  server.send(INITIALIZE);
  const { code, stdout, stderr } = await server.finish();
  expect(code).toBe(EXIT_CODES.STARTUP);
  expect(stdout).toBe("");
  expect(stderr).toStartWith("slivingdoc: INCOMPATIBLE_STORE: the S3 compatibility probe failed: the endpoint refused the connection");
});

test("bad configuration refuses the start before any answer", async () => {
  const server = spawnServe(env, ["--store", "ftp://x"]);
  server.send(INITIALIZE);
  const { code, stdout, stderr } = await server.finish();
  expect(code).toBe(EXIT_CODES.STARTUP);
  expect(stdout).toBe("");
  expect(stderr).toStartWith("slivingdoc: invalid configuration: the store must be");
});
