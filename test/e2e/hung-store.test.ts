/**
 * An S3 endpoint that stops answering (src/store/deadline.ts): a black-hole
 * proxy in front of the real server accepts connections and then answers
 * nothing. Every call answers by its deadline (--deadline, here a short
 * one) with the table's tokens — MANIFEST_READ before a write,
 * PUBLICATION_UNPROVEN once the manifest write was sent — releases the
 * checkout's lock, and the process ends; the start-up probe refuses within
 * the same deadline, naming it. Against the built binary and the real
 * server (Ceph RGW under `npm test`); without SLIVINGDOC_TEST_S3_BUCKET this
 * file FAILS, as the other S3 suites do.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { EXIT_CODES } from "../../src/contract/tokens.ts";
import { startTcpProxy, type TcpProxy } from "../support/tcp-proxy.ts";
import { read, write } from "../support/fixture.ts";
import { call, connect, runBinary } from "../support/mcp.ts";
import { removePrefixes, s3ServerMissing, testBucket, testEndpoint } from "../support/s3-test-store.ts";

const env = process.env;

/** Short, so that the file is quick; far above a call against the working server. */
const DEADLINE_MS = 4_000;
/** What a process may take beyond its deadline: starting, answering and ending, on a busy machine. */
const MARGIN_MS = 4_000;

const root = mkdtempSync(join(tmpdir(), "slivingdoc-hung-"));
const runId = crypto.randomUUID().slice(0, 8);
const prefixes: string[] = [];
let proxy: TcpProxy;

function freshPrefix(name: string): string {
  const prefix = `slivingdoc-test/hung-${runId}-${name}`;
  prefixes.push(`${prefix}/`);
  return prefix;
}

/** The CLI's environment: the store through the proxy, a private root of its own, the short deadline. */
function cliEnv(prefix: string, privateRoot: string): Record<string, string> {
  return {
    ...(env as Record<string, string>),
    SLIVINGDOC_STORE: `s3://${testBucket}/${prefix}`,
    AWS_ENDPOINT_URL_S3: proxy.url,
    SLIVINGDOC_PRIVATE_ROOT: join(root, privateRoot),
    SLIVINGDOC_DEADLINE: `${DEADLINE_MS}ms`,
  };
}

/** Run the binary; one still running after `limitMs` is killed, and says so. */
const run = (e: Record<string, string>, args: string[], limitMs = DEADLINE_MS + MARGIN_MS) => runBinary(args, e, limitMs);

function expectOk(r: { stdout: string; stderr: string; code: number }): void {
  if (r.code !== 0) console.error(`exit ${r.code}\n${r.stdout}\n${r.stderr}`);
  expect(r.code).toBe(0);
}

/** Every file named `lock` under the private root: a lock left held. */
function locksUnder(privateRoot: string): string[] {
  return (readdirSync(join(root, privateRoot), { recursive: true }) as string[]).filter((p) => p.split("/").pop() === "lock");
}

if (!s3ServerMissing()) {
  beforeAll(async () => {
    proxy = await startTcpProxy(testEndpoint!);
  });
  afterAll(async () => {
    await proxy.close();
    await removePrefixes(prefixes);
    rmSync(root, { recursive: true, force: true });
  });

  test("a commit against an endpoint that stops answering: MANIFEST_READ at the deadline, exit 5, the lock released, the process gone", async () => {
    proxy.heal();
    const e = cliEnv(freshPrefix("read"), "read-private");
    const a = join(root, "read");
    expectOk(await run(e, ["pull", a]));
    write(a, "note.md", "kept\n");

    proxy.blackHole();
    const r = await run(e, ["commit", "-m", "hung", "--json", a]);
    expect(r.stillRunning).toBe(false);
    expect(r.ms).toBeGreaterThanOrEqual(DEADLINE_MS);
    expect(r.code).toBe(EXIT_CODES.RETRYABLE);
    expect(JSON.parse(r.stdout)).toMatchObject({ code: "STORAGE_FAILURE", reason: "MANIFEST_READ", action: "RETRY", retryable: true });
    expect(locksUnder("read-private")).toEqual([]);

    proxy.heal();
    const again = await run(e, ["commit", "-m", "healed", "--json", a]);
    expectOk(again);
    expect(JSON.parse(again.stdout).generation).toBe(1);
    expect(read(a, "note.md")).toBe("kept\n");
  });

  test("the manifest write sent, its answer lost: PUBLICATION_UNPROVEN at the deadline; healed, the next pull proves it landed", async () => {
    proxy.heal();
    const e = cliEnv(freshPrefix("write"), "write-private");
    const a = join(root, "write");
    expectOk(await run(e, ["pull", a]));
    write(a, "note.md", "published?\n");

    // The conditional write of `current` reaches the server; nothing comes back from then on.
    const sent = proxy.blackHoleAfter(/PUT \S*\/current\?/);
    const r = await run(e, ["commit", "-m", "lost answer", "--json", a]);
    expect(await Promise.race([sent.then(() => true), Bun.sleep(0).then(() => false)])).toBe(true);
    expect(r.stillRunning).toBe(false);
    expect(r.ms).toBeGreaterThanOrEqual(DEADLINE_MS);
    expect(r.code).toBe(EXIT_CODES.RETRYABLE);
    expect(JSON.parse(r.stdout)).toMatchObject({ code: "STORAGE_FAILURE", reason: "PUBLICATION_UNPROVEN", action: "PULL", retryable: true });
    expect(locksUnder("write-private")).toEqual([]);

    proxy.heal();
    const pulled = await run(e, ["pull", "--json", a]);
    expectOk(pulled);
    // It had landed: the pull settles it, and the edit is no longer a local one.
    expect(JSON.parse(pulled.stdout)).toMatchObject({ generation: 1, files: [] });
    expect(read(a, "note.md")).toBe("published?\n");
    const status = await run(e, ["status", "--json", a]);
    expectOk(status);
    expect(JSON.parse(status.stdout)).toMatchObject({ generation: 1, behind: 0, files: [] });
  });

  test("start-up against an endpoint that never answers: INCOMPATIBLE_STORE naming the deadline, exit 2, within it", async () => {
    proxy.blackHole();
    const prefix = freshPrefix("probe");
    for (const args of [["pull", join(root, "probe")], ["serve"]]) {
      const r = await run(cliEnv(prefix, "probe-private"), args);
      expect(r.stillRunning).toBe(false);
      expect(r.ms).toBeGreaterThanOrEqual(DEADLINE_MS);
      expect([r.code, r.stdout, r.stderr]).toEqual([
        EXIT_CODES.STARTUP,
        "",
        `slivingdoc: INCOMPATIBLE_STORE: the S3 compatibility probe failed: the store did not answer within the call deadline (${DEADLINE_MS / 1000} s; --deadline); check --endpoint (or AWS_ENDPOINT_URL_S3) and the network; a store this slow needs a longer --deadline\n`,
      ]);
    }
    proxy.heal();
  });

  test("over MCP, a call against an endpoint that stops answering answers by its own deadline, and the server goes on", async () => {
    proxy.heal();
    const e = cliEnv(freshPrefix("mcp"), "mcp-private");
    const session = await connect({ ...e, TMPDIR: root });
    try {
      const first = await call(session, "notes_pull");
      expect(first.isError).toBe(false);
      proxy.blackHole();
      const started = performance.now();
      const hung = await call(session, "notes_pull");
      const ms = performance.now() - started;
      expect(hung.isError).toBe(true);
      expect(hung.data).toMatchObject({ code: "STORAGE_FAILURE", reason: "MANIFEST_READ", action: "RETRY" });
      expect(ms).toBeGreaterThanOrEqual(DEADLINE_MS);
      expect(ms).toBeLessThan(DEADLINE_MS + MARGIN_MS);
      proxy.heal();
      write(first.data.path as string, "note.md", "after\n");
      const committed = await call(session, "notes_commit", { message: "healed" });
      expect(committed.data).toMatchObject({ generation: 1 });
    } finally {
      await session.close();
    }
  });
}
