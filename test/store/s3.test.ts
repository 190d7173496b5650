/**
 * The S3 store: the shared conformance suite and S3-specific checks against a
 * real server, plus the mapping of S3 answers to outcomes against a scripted
 * fake server (so 500s, dropped connections and pagination are tested the
 * same way on every backend).
 *
 * The real server comes from the environment: `npm test` starts a throwaway
 * Ceph RGW (test/support/ceph-rgw.sh) and sets these; for MinIO or AWS set
 * them yourself (docs/s3.md). Without them this file FAILS — it never skips.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { createConnection, createServer, type Server, type Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { boundedStore, deadlineIn } from "../../src/store/deadline.ts";
import { type ObjectStore, StoreError } from "../../src/store/object-store.ts";
import { createS3Store, normaliseS3Prefix } from "../../src/store/s3.ts";
import { STORES } from "../../src/surfaces/stores.ts";
import { removePrefixes, testBucket, testEndpoint, testS3Store } from "../support/s3-test-store.ts";
import { startTcpProxy } from "../support/tcp-proxy.ts";
import { waitFor } from "../support/wait.ts";
import { describeStoreConformance } from "./conformance.ts";
import { SYSTEM_CLOCK } from "../../src/surfaces/system-clock.ts";

const env = process.env;

const text = (s: string) => new TextEncoder().encode(s);
const str = (b: Uint8Array) => new TextDecoder().decode(b);
const runId = crypto.randomUUID().slice(0, 8);
let prefixes = 0;
const usedPrefixes: string[] = [];

/** A store on the test bucket under a fresh prefix nobody else uses. */
function openReal(overrides: { bucket?: string } = {}): ObjectStore {
  const prefix = `slivingdoc-test/${runId}-${prefixes++}/`;
  usedPrefixes.push(prefix);
  return testS3Store(prefix, overrides);
}


if (!testBucket) {
  test("S3 test server is configured", () => {
    throw new Error(
      "SLIVINGDOC_TEST_S3_BUCKET is not set, so the S3 suites cannot run. Run `npm test` (it starts a " +
        "throwaway Ceph RGW), or start one with `bash test/support/ceph-rgw.sh start DIR` and load it with " +
        "`set -a; . DIR/env; set +a`, or point the suites at MinIO/AWS by setting SLIVINGDOC_TEST_S3_BUCKET, " +
        "AWS_ENDPOINT_URL_S3, AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_REGION and S3_FORCE_PATH_STYLE " +
        "(see docs/s3.md).",
    );
  });
} else {
  afterAll(async () => {
    // Leave the bucket as we found it (matters on a shared MinIO/AWS bucket).
    await removePrefixes(usedPrefixes);
  });

  describeStoreConformance("s3", async () => openReal(), { capabilities: STORES.s3.capabilities });

  describe("s3 store on the configured server", () => {
    const stores: ObjectStore[] = [];
    const fresh = (overrides: { bucket?: string } = {}) => {
      const s = openReal(overrides);
      stores.push(s);
      return s;
    };
    afterAll(async () => {
      await Promise.all(stores.map((s) => s.close()));
    });

    test("ETags come back unquoted, and compare-and-swap with them works (quoted ones are unquoted)", async () => {
      const store = fresh();
      const created = await store.putIfAbsent("current", text("v1"));
      if (!created.ok) throw new Error("create lost on a fresh prefix");
      expect(created.etag).not.toContain('"');
      expect(created.etag.length).toBeGreaterThan(0);
      const got = await store.get("current");
      expect(got!.etag).toBe(created.etag);
      const swapped = await store.putIfMatch("current", text("v2"), got!.etag);
      if (!swapped.ok) throw new Error("swap on the current, unquoted ETag lost");
      expect(swapped.etag).not.toContain('"');
      // Callers that hold a quoted ETag still win: the store strips the quotes
      // (Ceph RGW 16 compares If-Match byte for byte and would answer 412).
      const again = await store.putIfMatch("current", text("v3"), `"${swapped.etag}"`);
      expect(again.ok).toBe(true);
      expect(str((await store.get("current"))!.body)).toBe("v3");
    });

    test("compare-and-swap on a missing key is { ok: false } (404 on AWS/MinIO, 412 on Ceph)", async () => {
      const store = fresh();
      expect(await store.putIfMatch("current", text("x"), "d41d8cd98f00b204e9800998ecf8427e")).toEqual({ ok: false });
      expect(await store.get("current")).toBeNull();
    });

    test("the prefix isolates stores: keys come back without it and do not leak across prefixes", async () => {
      const a = fresh();
      const b = fresh();
      expect((await a.putIfAbsent("packs/x", text("a"))).ok).toBe(true);
      expect(await b.get("packs/x")).toBeNull();
      expect((await a.list("")).map((o) => o.key)).toEqual(["packs/x"]);
      expect(await b.list("")).toEqual([]);
    });

    test("a write after a read goes on the connection the read left open: no second handshake", async () => {
      // Counted at a proxy in front of the server: against AWS each
      // connection opened is a TCP and a TLS handshake, one to three round
      // trips before the request.
      const proxy = await startTcpProxy(testEndpoint!);
      const prefix = `slivingdoc-test/${runId}-${prefixes++}/`;
      usedPrefixes.push(prefix);
      const store = testS3Store(prefix, { endpoint: proxy.url });
      try {
        expect(await store.get("current")).toBeNull();
        expect((await store.putIfAbsent("packs/x", text("pack"))).ok).toBe(true);
        expect((await store.putIfAbsent("current", text("manifest"))).ok).toBe(true);
        expect(await store.list("")).toHaveLength(2);
        expect(proxy.counts()).toEqual({ requests: 4, sequential: 4, connections: 1 });
      } finally {
        await store.close();
        await proxy.close();
      }
    });

    test("a conditional read of an unchanged object is one request answered 304, with no body, and its Date is noted", async () => {
      // Counted at a proxy in front of the server; the store answers
      // "unchanged" only for a 304, which HTTP sends without a body.
      const proxy = await startTcpProxy(testEndpoint!);
      const prefix = `slivingdoc-test/${runId}-${prefixes++}/`;
      usedPrefixes.push(prefix);
      const store = testS3Store(prefix, { endpoint: proxy.url });
      try {
        const created = await store.putIfAbsent("current", text("manifest"));
        if (!created.ok) throw new Error("create lost on a fresh prefix");
        const before = store.lastAnswer!();
        proxy.resetCounts();
        expect(await store.getIfNoneMatch("current", created.etag)).toBe("unchanged");
        expect(proxy.counts().requests).toBe(1);
        // The 304's own answer, not the write's before it.
        expect(store.lastAnswer!()).not.toBe(before);
        // Quoted as S3 sends it, the ETag still matches.
        expect(await store.getIfNoneMatch("current", `"${created.etag}"`)).toBe("unchanged");
      } finally {
        await store.close();
        await proxy.close();
      }
    });

    test("a race's losers get { ok: false } or StoreError 'unknown' (Ceph: 500), never anything else", async () => {
      const store = fresh();
      const created = await store.putIfAbsent("race", text("start"));
      if (!created.ok) throw new Error("create lost on a fresh prefix");
      const settled = await Promise.allSettled(
        Array.from({ length: 32 }, (_, i) => store.putIfMatch("race", text(`writer ${i}`), created.etag)),
      );
      const won = settled.flatMap((r, i) => (r.status === "fulfilled" && r.value.ok ? [i] : []));
      const unknown = settled.flatMap((r, i) => (r.status === "rejected" ? [i] : []));
      for (const r of settled) {
        if (r.status === "rejected") {
          expect(r.reason).toBeInstanceOf(StoreError);
          expect((r.reason as StoreError).outcome).toBe("unknown");
          expect((r.reason as StoreError).operation).toBe("putIfMatch");
          expect((r.reason as StoreError).message).toMatch(/^s3 putIfMatch: \w+ \(5\d\d\); the write may have landed$/);
        }
      }
      expect(won.length).toBeLessThanOrEqual(1);
      const stored = str((await store.get("race"))!.body);
      // The stored bytes are the winner's; if no answer said "won", the
      // winner is one of the unknown outcomes — that is what proving is for.
      if (won.length === 1) expect(stored).toBe(`writer ${won[0]}`);
      else expect(unknown.map((i) => `writer ${i}`)).toContain(stored);
    });

    test("wrong credentials: StoreError whose message carries neither the key id nor the secret", async () => {
      const keyId = env.AWS_ACCESS_KEY_ID;
      const secret = env.AWS_SECRET_ACCESS_KEY;
      const wrongSecret = "wRoNg0secret0key0that0must0never0appear0";
      const wrongKeyId = "AKIAWRONGKEYID000TEST";
      const attempts: Array<{ keyId: string | undefined; secret: string }> = [
        { keyId, secret: wrongSecret },
        { keyId: wrongKeyId, secret: wrongSecret },
      ];
      for (const creds of attempts) {
        // Credentials come only from the SDK's default chain, so swap the
        // environment while this store resolves them (on its first request).
        const saved = { id: env.AWS_ACCESS_KEY_ID, secret: env.AWS_SECRET_ACCESS_KEY, session: env.AWS_SESSION_TOKEN };
        if (creds.keyId !== undefined) env.AWS_ACCESS_KEY_ID = creds.keyId;
        env.AWS_SECRET_ACCESS_KEY = creds.secret;
        delete env.AWS_SESSION_TOKEN;
        const store = fresh();
        const errors: unknown[] = [];
        try {
          for (const op of [() => store.get("packs/secret-pack-key"), () => store.putIfAbsent("packs/secret-pack-key", text("x")), () => store.list("packs/")]) {
            errors.push(await op().then(() => "no error", (e: unknown) => e));
          }
        } finally {
          env.AWS_ACCESS_KEY_ID = saved.id;
          env.AWS_SECRET_ACCESS_KEY = saved.secret;
          if (saved.session !== undefined) env.AWS_SESSION_TOKEN = saved.session;
        }
        for (const e of errors) {
          expect(e).toBeInstanceOf(StoreError);
          const err = e as StoreError;
          expect(err.outcome).toBe("failed");
          expect(err.message).toMatch(/^s3 (get|putIfAbsent|list): \w+ \(40\d\)$/);
          for (const secretText of [keyId, secret, wrongSecret, wrongKeyId, "secret-pack-key", testBucket, testEndpoint]) {
            if (secretText) expect(err.message).not.toContain(secretText);
          }
          expect(err.cause).toBeDefined();
        }
      }
    });

    test("a bucket that does not exist: StoreError (NoSuchBucket) from every operation", async () => {
      const store = fresh({ bucket: `slivingdoc-missing-${runId}` });
      for (const [op, run] of [
        ["get", () => store.get("current")],
        ["putIfAbsent", () => store.putIfAbsent("current", text("x"))],
        ["putIfMatch", () => store.putIfMatch("current", text("x"), "d41d8cd98f00b204e9800998ecf8427e")],
        ["list", () => store.list("")],
      ] as const) {
        const error = await (run as () => Promise<unknown>)().then(
          () => undefined,
          (e: unknown) => e,
        );
        expect(error).toBeInstanceOf(StoreError);
        expect((error as StoreError).operation).toBe(op);
        expect((error as StoreError).outcome).toBe("failed");
        expect((error as StoreError).message).toBe(`s3 ${op}: NoSuchBucket (404)`);
      }
    });
  });
}

// --------------------------------------------------------------------------
// A scripted fake S3 endpoint: answers are chosen per test, every request is
// recorded. It tests the store's mapping and what it sends, on any machine.

interface Seen {
  method: string;
  path: string;
  query: URLSearchParams;
  headers: Headers;
  body: Uint8Array;
}
type Answer = (req: Seen, n: number) => Response | "drop";

const xmlError = (status: number, code: string, message = "scripted") =>
  new Response(
    `<?xml version="1.0" encoding="UTF-8"?><Error><Code>${code}</Code><Message>${message}</Message><RequestId>r1</RequestId></Error>`,
    { status, headers: { "content-type": "application/xml" } },
  );

describe("s3 store against a scripted endpoint", () => {
  let server: Server;
  let port = 0;
  let answer: Answer = () => new Response("", { status: 200 });
  let seen: Seen[] = [];
  const sockets = new Set<Socket>();
  const saved = { id: env.AWS_ACCESS_KEY_ID, secret: env.AWS_SECRET_ACCESS_KEY };
  const fakeKeyId = "AKIAFAKEFAKEFAKEFAKE";
  const fakeSecret = "fake/secret/for/the/scripted/endpoint/00";

  beforeAll(async () => {
    // A raw TCP server, so a test can also drop the connection after the
    // request arrived (what a crash or a proxy timeout looks like).
    server = createServer((socket: Socket) => {
      sockets.add(socket);
      socket.on("close", () => sockets.delete(socket));
      let buffered = Buffer.alloc(0);
      socket.on("data", async (chunk: Buffer) => {
        buffered = Buffer.concat([buffered, chunk]);
        for (;;) {
          const end = buffered.indexOf("\r\n\r\n");
          if (end < 0) return;
          const head = buffered.subarray(0, end).toString("latin1").split("\r\n");
          const headers = new Headers();
          for (const line of head.slice(1)) {
            const i = line.indexOf(":");
            headers.append(line.slice(0, i).trim(), line.slice(i + 1).trim());
          }
          const length = Number(headers.get("content-length") ?? "0");
          if (buffered.length < end + 4 + length) return;
          const body = new Uint8Array(buffered.subarray(end + 4, end + 4 + length));
          buffered = buffered.subarray(end + 4 + length);
          const [method = "", target = ""] = head[0]!.split(" ");
          const url = new URL(target, "http://fake");
          const req: Seen = { method, path: decodeURIComponent(url.pathname), query: url.searchParams, headers, body };
          seen.push(req);
          const res = answer(req, seen.length);
          if (res === "drop") {
            socket.destroy();
            return;
          }
          const payload = Buffer.from(await res.arrayBuffer());
          const lines = [`HTTP/1.1 ${res.status} X`, `content-length: ${payload.length}`];
          res.headers.forEach((v, k) => lines.push(`${k}: ${v}`));
          socket.write(`${lines.join("\r\n")}\r\n\r\n`);
          socket.write(payload);
        }
      });
      socket.on("error", () => {});
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    port = (server.address() as { port: number }).port;
    // Fake credentials for the fake endpoint, restored afterwards.
    env.AWS_ACCESS_KEY_ID = fakeKeyId;
    env.AWS_SECRET_ACCESS_KEY = fakeSecret;
  });
  afterAll(async () => {
    env.AWS_ACCESS_KEY_ID = saved.id;
    env.AWS_SECRET_ACCESS_KEY = saved.secret;
    if (saved.id === undefined) delete env.AWS_ACCESS_KEY_ID;
    if (saved.secret === undefined) delete env.AWS_SECRET_ACCESS_KEY;
    // Keep-alive connections of stores a failed test did not close would
    // hold the server open.
    for (const socket of sockets) socket.destroy();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });

  const open = (maxAttempts?: number) => {
    seen = [];
    return createS3Store({
      bucket: "fake-bucket",
      prefix: "team/notes",
      region: "us-east-1",
      endpoint: `http://127.0.0.1:${port}`,
      forcePathStyle: true,
      ...(maxAttempts !== undefined ? { maxAttempts } : {}),
      clock: SYSTEM_CLOCK,
    });
  };
  const ok = (etag: string) => new Response("", { status: 200, headers: { etag: `"${etag}"` } });

  test("conditional writes send the right headers, a plain length-delimited body, and no checksum trailer", async () => {
    answer = () => ok("abc123");
    const store = open();
    expect(await store.putIfAbsent("packs/p1", text("hello"))).toEqual({ ok: true, etag: "abc123" });
    expect(await store.putIfMatch("current", text("m"), '"abc123"')).toEqual({ ok: true, etag: "abc123" });
    const [create, swap] = seen;
    expect(create!.method).toBe("PUT");
    expect(create!.path).toBe("/fake-bucket/team/notes/packs/p1");
    expect(create!.headers.get("if-none-match")).toBe("*");
    expect(create!.headers.get("content-length")).toBe("5");
    expect(create!.headers.get("transfer-encoding")).toBeNull();
    expect(create!.headers.get("x-amz-trailer")).toBeNull();
    expect(create!.headers.get("x-amz-content-sha256") ?? "").not.toContain("STREAMING");
    expect(str(create!.body)).toBe("hello");
    // The ETag goes out unquoted, even when the caller held a quoted one.
    expect(swap!.headers.get("if-match")).toBe("abc123");
    expect(swap!.path).toBe("/fake-bucket/team/notes/current");
    await store.close();
  });

  test("412, 409 ConditionalRequestConflict and If-Match's 404 NoSuchKey are losses", async () => {
    const store = open();
    answer = () => xmlError(412, "PreconditionFailed");
    expect(await store.putIfAbsent("current", text("x"))).toEqual({ ok: false });
    expect(await store.putIfMatch("current", text("x"), "e")).toEqual({ ok: false });
    answer = () => xmlError(409, "ConditionalRequestConflict");
    expect(await store.putIfAbsent("current", text("x"))).toEqual({ ok: false });
    expect(await store.putIfMatch("current", text("x"), "e")).toEqual({ ok: false });
    answer = () => xmlError(404, "NoSuchKey");
    expect(await store.putIfMatch("current", text("x"), "e")).toEqual({ ok: false });
    // Each was sent once: a loss is not retried.
    expect(seen.length).toBe(5);
    await store.close();
  });

  test("a 5xx on a conditional write is 'unknown', never a loss, and the SDK does not retry it", async () => {
    for (const [status, code] of [
      [500, "UnknownError"],
      [503, "SlowDown"],
    ] as const) {
      const store = open(5);
      answer = () => xmlError(status, code);
      for (const run of [() => store.putIfAbsent("current", text("x")), () => store.putIfMatch("current", text("x"), "e")]) {
        seen = [];
        const error = await run().then(
          () => undefined,
          (e: unknown) => e,
        );
        expect(error).toBeInstanceOf(StoreError);
        expect((error as StoreError).outcome).toBe("unknown");
        expect((error as StoreError).message).toMatch(new RegExp(`^s3 put\\w+: ${code} \\(${status}\\); the write may have landed$`));
        // Sent exactly once: a retry could meet our own landed write and
        // turn a win into a 412.
        expect(seen.length).toBe(1);
      }
      await store.close();
    }
  });

  test("a connection dropped after the request was sent is 'unknown'; a refused one is 'failed'", async () => {
    const store = open();
    answer = () => "drop";
    const dropped = await store.putIfMatch("current", text("x"), "e").then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(dropped).toBeInstanceOf(StoreError);
    expect((dropped as StoreError).outcome).toBe("unknown");
    expect(seen.length).toBe(1);
    await store.close();

    // Nothing listens on port 1: the request never left, nothing can have landed.
    const refused = createS3Store({ bucket: "b", prefix: "", region: "us-east-1", endpoint: "http://127.0.0.1:1", forcePathStyle: true, clock: SYSTEM_CLOCK });
    const error = await refused.putIfAbsent("current", text("x")).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(StoreError);
    expect((error as StoreError).outcome).toBe("failed");
    await refused.close();
  });

  test("reads are retried by the SDK on a 5xx (they are idempotent)", async () => {
    const store = open(3);
    answer = (_req, n) => (n === 1 ? xmlError(503, "SlowDown") : new Response("body", { status: 200, headers: { etag: '"e1"' } }));
    const got = await store.get("current");
    expect(str(got!.body)).toBe("body");
    expect(got!.etag).toBe("e1");
    expect(seen.length).toBe(2);
    await store.close();
  });

  test("get: NoSuchKey is null; other 404s and denials are StoreErrors without the server's text", async () => {
    const store = open(1);
    answer = () => xmlError(404, "NoSuchKey");
    expect(await store.get("current")).toBeNull();
    answer = () => xmlError(403, "AccessDenied", `denied for ${fakeKeyId} on team/notes/packs/abc`);
    const denied = await store.get("packs/abc").then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(denied).toBeInstanceOf(StoreError);
    expect((denied as StoreError).message).toBe("s3 get: AccessDenied (403)");
    answer = () => xmlError(404, "NoSuchBucket");
    const missing = await store.get("current").then(
      () => undefined,
      (e: unknown) => e,
    );
    expect((missing as StoreError).message).toBe("s3 get: NoSuchBucket (404)");
    await store.close();
  });

  test("list follows continuation tokens, strips the store prefix and sorts", async () => {
    const store = open();
    const page = (keys: string[], next?: string) =>
      new Response(
        `<?xml version="1.0" encoding="UTF-8"?><ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/">` +
          `<Name>fake-bucket</Name><Prefix>team/notes/packs/</Prefix><KeyCount>${keys.length}</KeyCount><MaxKeys>1000</MaxKeys>` +
          `<IsTruncated>${next ? "true" : "false"}</IsTruncated>${next ? `<NextContinuationToken>${next}</NextContinuationToken>` : ""}` +
          keys
            .map(
              (k, i) =>
                `<Contents><Key>team/notes/${k}</Key><LastModified>2026-01-0${i + 1}T00:00:00.000Z</LastModified><ETag>"e"</ETag><Size>${k.length}</Size><StorageClass>STANDARD</StorageClass></Contents>`,
            )
            .join("") +
          `</ListBucketResult>`,
        { status: 200, headers: { "content-type": "application/xml" } },
      );
    answer = (req) => (req.query.get("continuation-token") === "t2" ? page(["packs/a", "packs/c/d"]) : page(["packs/b", "packs/bb"], "t2"));
    const listed = await store.list("packs/");
    expect(listed.map((o) => o.key)).toEqual(["packs/a", "packs/b", "packs/bb", "packs/c/d"]);
    expect(listed.map((o) => o.size)).toEqual([7, 7, 8, 9]);
    expect(listed[0]!.modified.toISOString()).toBe("2026-01-01T00:00:00.000Z");
    expect(seen.length).toBe(2);
    expect(seen[0]!.query.get("list-type")).toBe("2");
    expect(seen[0]!.query.get("prefix")).toBe("team/notes/packs/");
    await store.close();
  });

  test("delete: an absent key is fine", async () => {
    const store = open();
    answer = () => new Response(null, { status: 204 });
    await store.delete("gone");
    expect(seen[0]!.method).toBe("DELETE");
    expect(seen[0]!.path).toBe("/fake-bucket/team/notes/gone");
    await store.close();
  });
});

describe("s3 store options", () => {
  test("the prefix is normalised to end with '/', and malformed prefixes are refused", () => {
    expect(normaliseS3Prefix("")).toBe("");
    expect(normaliseS3Prefix("team")).toBe("team/");
    expect(normaliseS3Prefix("team/notes/")).toBe("team/notes/");
    for (const bad of ["/", "/team", "a//b", "a/./b", "../x", "a/..", "a\nb", "//"]) {
      expect(() => normaliseS3Prefix(bad)).toThrow(StoreError);
    }
  });

  test("a bucket is required; credentials are not an option", () => {
    expect(() => createS3Store({ bucket: "", prefix: "", clock: SYSTEM_CLOCK })).toThrow(StoreError);
    expect(() => createS3Store({ bucket: "b", prefix: "", maxAttempts: 0, clock: SYSTEM_CLOCK })).toThrow(StoreError);
  });
});

/**
 * Connect-phase failures are definite: nothing was sent, so a conditional
 * write that fails there cannot have landed ("failed", which the engine maps
 * to MANIFEST_WRITE / PACK_UPLOAD). Once the request is out, a timeout is
 * "unknown" (PUBLICATION_UNPROVEN unless proved). Real sockets, all on
 * 127.0.0.1.
 */
describe("s3 store when the endpoint does not answer", () => {
  const saved = { id: env.AWS_ACCESS_KEY_ID, secret: env.AWS_SECRET_ACCESS_KEY };
  const cleanups: Array<() => void> = [];
  beforeAll(() => {
    // Credentials must resolve, or the SDK fails before connecting at all.
    env.AWS_ACCESS_KEY_ID = "AKIAFAKEFAKEFAKEFAKE";
    env.AWS_SECRET_ACCESS_KEY = "fake/secret/for/the/scripted/endpoint/00";
  });
  afterAll(() => {
    env.AWS_ACCESS_KEY_ID = saved.id;
    env.AWS_SECRET_ACCESS_KEY = saved.secret;
    if (saved.id === undefined) delete env.AWS_ACCESS_KEY_ID;
    if (saved.secret === undefined) delete env.AWS_SECRET_ACCESS_KEY;
    for (const c of cleanups.splice(0)) c();
  });
  const storeAt = (port: number) =>
    createS3Store({
      bucket: "b",
      prefix: "",
      region: "us-east-1",
      endpoint: `http://127.0.0.1:${port}`,
      forcePathStyle: true,
      connectionTimeoutMs: 1_000,
      socketTimeoutMs: 1_500,
      clock: SYSTEM_CLOCK,
    });
  const failure = (p: Promise<unknown>) =>
    p.then(
      () => {
        throw new Error("the write succeeded");
      },
      (e: unknown) => e as StoreError,
    );

  test("a listener that never accepts: the connect times out, and the write is a definite failure", async () => {
    // A listener with a backlog of 1 in a process that never runs its event
    // loop again: once two connections wait in its accept queue (Linux takes
    // backlog + 1), the kernel drops every further SYN, so a connect can only
    // time out. (Node reads a backlog of 0 as "the default", 511.)
    const holder = Bun.spawn(
      [
        "node",
        "-e",
        `const s = require("node:net").createServer(); s.listen({ port: 0, host: "127.0.0.1", backlog: 1 }, () => {
           require("node:fs").writeSync(1, s.address().port + "\\n");
           Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0);
         });`,
      ],
      { stdout: "pipe", stderr: "inherit" },
    );
    cleanups.push(() => holder.kill("SIGKILL"));
    const reader = holder.stdout.getReader();
    let text = "";
    while (!text.includes("\n")) {
      const { value, done } = await reader.read();
      if (done) throw new Error("the listener did not start");
      text += new TextDecoder().decode(value);
    }
    const port = Number(text.trim());
    for (let i = 0; i < 2; i++) {
      const filler = await new Promise<Socket>((resolve, reject) => {
        const s: Socket = createConnection({ port, host: "127.0.0.1" }, () => resolve(s));
        s.on("error", reject);
      });
      cleanups.push(() => filler.destroy());
    }

    const store = storeAt(port);
    for (const write of [() => store.putIfMatch("current", text_("m"), "e"), () => store.putIfAbsent("packs/p", text_("p"))]) {
      const error = await failure(write());
      expect(error).toBeInstanceOf(StoreError);
      expect(error.outcome).toBe("failed");
      expect(error.message).toMatch(/^s3 put\w+: TimeoutError$/);
      // Really the connect timeout, not credentials or a refusal.
      expect(String((error.cause as Error).message)).toContain("did not establish a connection");
    }
    await store.close();
  });

  test("a server that reads the request and never answers: the outcome is unknown", async () => {
    let received = 0;
    const server = createServer((socket) => {
      socket.on("data", () => received++);
      socket.on("error", () => {});
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    cleanups.push(() => server.close());
    const store = storeAt((server.address() as { port: number }).port);
    const error = await failure(store.putIfMatch("current", text_("m"), "e"));
    expect(error).toBeInstanceOf(StoreError);
    expect(error.outcome).toBe("unknown");
    expect(error.message).toBe("s3 putIfMatch: TimeoutError; the write may have landed");
    expect(received).toBeGreaterThan(0);
    await store.close();
  });

  /**
   * TLS fails in the handshake, before any byte of the request: a definite
   * failure (an operator's everyday mistake — a self-signed MinIO, https to
   * a plain-http port), not an unknown outcome to prove.
   */
  test("an endpoint whose TLS certificate is not trusted, or that does not speak TLS: a definite failure", async () => {
    const dir = mkdtempSync(join(tmpdir(), "slivingdoc-tls-"));
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
    const made = Bun.spawnSync(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=127.0.0.1",
      "-keyout", join(dir, "key.pem"), "-out", join(dir, "cert.pem")], { stderr: "pipe" });
    expect(made.exitCode).toBe(0);
    let received = 0;
    const tls = Bun.serve({ port: 0, hostname: "127.0.0.1", tls: { cert: Bun.file(join(dir, "cert.pem")), key: Bun.file(join(dir, "key.pem")) },
      fetch: () => { received++; return new Response("", { status: 200 }); } });
    const plain = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: () => { received++; return new Response("", { status: 200 }); } });
    cleanups.push(() => { tls.stop(true); plain.stop(true); });
    for (const [port, code] of [[tls.port, "DEPTH_ZERO_SELF_SIGNED_CERT"], [plain.port, "ERR_SSL_WRONG_VERSION_NUMBER"]] as const) {
      const store = createS3Store({ bucket: "b", prefix: "", region: "us-east-1", endpoint: `https://127.0.0.1:${port}`, forcePathStyle: true,
        connectionTimeoutMs: 1_000, socketTimeoutMs: 1_500, clock: SYSTEM_CLOCK });
      const error = await failure(store.putIfMatch("current", text_("m"), "e"));
      expect(error).toBeInstanceOf(StoreError);
      expect([error.outcome, error.message]).toEqual(["failed", `s3 putIfMatch: ${code}`]);
      await store.close();
    }
    expect(received).toBe(0);
  });

  test("a call's deadline ends its requests to a server that never answers: a read fails, a write is unknown, the connections close, nothing is sent after", async () => {
    let opened = 0;
    let closed = 0;
    const server = createServer((socket) => {
      opened++;
      socket.on("data", () => {});
      socket.on("error", () => {});
      socket.on("close", () => closed++);
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    cleanups.push(() => server.close());
    // The store's own timeouts far beyond the deadline: only the deadline ends these requests.
    const inner = createS3Store({ bucket: "b", prefix: "", region: "us-east-1", endpoint: `http://127.0.0.1:${(server.address() as { port: number }).port}`,
      forcePathStyle: true, connectionTimeoutMs: 60_000, socketTimeoutMs: 60_000, clock: SYSTEM_CLOCK });
    const store = boundedStore(inner, deadlineIn(500));
    const started = performance.now();
    const [read, written, polled] = await Promise.all([
      failure(store.get("current")),
      failure(store.putIfMatch("current", text_("m"), "e")),
      failure(store.getIfNoneMatch("current", "e")),
    ]);
    const ms = performance.now() - started;
    expect(ms).toBeGreaterThanOrEqual(490);
    expect(ms).toBeLessThan(5_000);
    expect([read.outcome, read.message]).toEqual(["failed", "s3 get: no answer within the call deadline"]);
    expect([written.outcome, written.message]).toEqual(["unknown", "s3 putIfMatch: no answer within the call deadline; the write may have landed"]);
    expect([polled.outcome, polled.message]).toEqual(["failed", "s3 get: no answer within the call deadline"]);
    // Closed by the client, not left open for the server's sake (or the process's).
    await waitFor(() => opened >= 2 && closed === opened, "the client to close every connection it opened", 5_000);
    expect([opened >= 2, closed]).toEqual([true, opened]);
    const connections = opened;
    const later = await failure(store.delete("k"));
    expect([later.outcome, later.message]).toEqual(["failed", "s3 delete: no answer within the call deadline"]);
    expect(opened).toBe(connections);
    await inner.close();
  });

  test("a closed port: refused at connect, a definite failure", async () => {
    const probe = createServer();
    await new Promise<void>((resolve) => probe.listen(0, "127.0.0.1", resolve));
    const port = (probe.address() as { port: number }).port;
    await new Promise<void>((resolve) => probe.close(() => resolve()));
    const store = storeAt(port);
    const error = await failure(store.putIfMatch("current", text_("m"), "e"));
    expect(error.outcome).toBe("failed");
    expect(error.message).toBe("s3 putIfMatch: ECONNREFUSED");
    await store.close();
  });
});

const text_ = (s: string) => new TextEncoder().encode(s);
