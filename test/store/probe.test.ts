/**
 * The startup compatibility probe (src/store/probe.ts) on real stores: the
 * embedded SQLite store and a real S3 server (Ceph RGW under `npm test`).
 * Stores that break the conditional-write guarantees are built as wrappers
 * around those real stores (never mocks): they really do overwrite, or really
 * do check-then-write, so the probe must catch what a misbehaving backend or
 * proxy would actually do.
 *
 * Without SLIVINGDOC_TEST_S3_BUCKET the S3 part FAILS — it never skips (see
 * test/store/s3.test.ts and docs/s3.md).
 */
import { afterAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { boundedStore, deadlineIn } from "../../src/store/deadline.ts";
import { type ConditionalWrite, type ObjectStore, StoreError } from "../../src/store/object-store.ts";
import { operationalCause, type ProbeResult, probeStore } from "../../src/store/probe.ts";
import { createS3Store } from "../../src/store/s3.ts";
import { openSqliteStore } from "../../src/store/sqlite.ts";
import { removePrefixes, testBucket, testEndpoint, testS3Store } from "../support/s3-test-store.ts";
import { SYSTEM_CLOCK } from "../../src/surfaces/system-clock.ts";

const env = process.env;

const runId = crypto.randomUUID().slice(0, 8);
const usedPrefixes: string[] = [];
const opened: ObjectStore[] = [];
const tmp = mkdtempSync(join(tmpdir(), "slivingdoc-probe-"));
let files = 0;

afterAll(async () => {
  await Promise.all(opened.map((s) => s.close().catch(() => {})));
  // Leave the bucket as we found it, whatever a failed test left behind.
  await removePrefixes(usedPrefixes);
  rmSync(tmp, { recursive: true, force: true });
});

/** A real S3 store on a prefix nobody else uses, so `list("")` shows only the probe's leftovers. */
function freshS3(): ObjectStore {
  const prefix = `slivingdoc-test/probe-${runId}-${usedPrefixes.length}/`;
  usedPrefixes.push(prefix);
  const store = testS3Store(prefix);
  opened.push(store);
  return store;
}

function freshSqlite(): ObjectStore {
  const store = openSqliteStore(join(tmp, `store-${files++}.db`), SYSTEM_CLOCK);
  opened.push(store);
  return store;
}

// ---------------------------------------------------------------------------
// Wrappers around a real store.

/** Records every key written, to check where the probe writes. */
function recording(inner: ObjectStore): ObjectStore & { keys: Set<string> } {
  const keys = new Set<string>();
  return {
    kind: inner.kind,
    keys,
    get: (k) => inner.get(k),
    getIfNoneMatch: (k, e) => inner.getIfNoneMatch(k, e),
    putIfAbsent: (k, b) => (keys.add(k), inner.putIfAbsent(k, b)),
    putIfMatch: (k, b, e) => (keys.add(k), inner.putIfMatch(k, b, e)),
    list: (p) => inner.list(p),
    delete: (k) => inner.delete(k),
    close: () => inner.close(),
  };
}

/** An unconditional PUT, done with the real store's own operations: whatever was there is replaced. */
async function overwrite(inner: ObjectStore, key: string, body: Uint8Array): Promise<ConditionalWrite> {
  for (;;) {
    await inner.delete(key);
    const written = await inner.putIfAbsent(key, body);
    if (written.ok) return written;
  }
}

/** A backend that answers 200 to conditional writes and ignores the condition (GCS's S3 layer, some proxies). */
function ignoringConditions(inner: ObjectStore, ignore: { ifNoneMatch: boolean; ifMatch: boolean }): ObjectStore {
  return {
    kind: `ignoring(${inner.kind})`,
    get: (k) => inner.get(k),
    getIfNoneMatch: (k, e) => inner.getIfNoneMatch(k, e),
    putIfAbsent: (k, b) => (ignore.ifNoneMatch ? overwrite(inner, k, b) : inner.putIfAbsent(k, b)),
    putIfMatch: (k, b, e) => (ignore.ifMatch ? overwrite(inner, k, b) : inner.putIfMatch(k, b, e)),
    list: (p) => inner.list(p),
    delete: (k) => inner.delete(k),
    close: () => inner.close(),
  };
}

/**
 * A proxy that implements the conditions itself by reading first and then
 * writing unconditionally: right for one writer at a time, wrong for
 * concurrent ones (they all see the condition hold). Only a race shows it.
 */
function checkThenWrite(inner: ObjectStore, writers: number): ObjectStore {
  // The writers of a race all check before any of them writes: the
  // interleaving that breaks such a store, made certain instead of left to
  // timing (on a loaded machine a late writer's check could see an earlier
  // write, and the race then had fewer winners than writers).
  let arrived: Array<() => void> = [];
  const allChecked = (body: Uint8Array) =>
    new TextDecoder().decode(body).startsWith("probe race ")
      ? new Promise<void>((resolve) => {
          arrived.push(resolve);
          if (arrived.length === writers) {
            for (const go of arrived) go();
            arrived = [];
          }
        })
      : Promise.resolve();
  return {
    kind: `check-then-write(${inner.kind})`,
    get: (k) => inner.get(k),
    getIfNoneMatch: (k, e) => inner.getIfNoneMatch(k, e),
    async putIfAbsent(k, b) {
      const exists = (await inner.get(k)) !== null;
      await allChecked(b);
      if (exists) return { ok: false };
      return overwrite(inner, k, b);
    },
    async putIfMatch(k, b, e) {
      const current = await inner.get(k);
      await allChecked(b);
      if (current === null || current.etag !== e) return { ok: false };
      return overwrite(inner, k, b);
    },
    list: (p) => inner.list(p),
    delete: (k) => inner.delete(k),
    close: () => inner.close(),
  };
}

/**
 * A store whose ETag names the key, not the version (as a proxy that answers
 * with a weak or synthetic ETag might): If-Match is enforced against it, so a
 * wrong ETag loses, but an ETag read before a change still matches after it —
 * the compare-and-swap cannot tell versions apart.
 */
function stableEtags(inner: ObjectStore): ObjectStore {
  const first = new Map<string, string>();
  const stable = (key: string, etag: string) => {
    if (!first.has(key)) first.set(key, etag);
    return first.get(key)!;
  };
  return {
    kind: `stable-etag(${inner.kind})`,
    async get(k) {
      const got = await inner.get(k);
      return got === null ? null : { body: got.body, etag: stable(k, got.etag) };
    },
    // Compared against the stable ETag, as the server would compare its own.
    async getIfNoneMatch(k, e) {
      const got = await inner.get(k);
      if (got === null) return null;
      return stable(k, got.etag) === e ? "unchanged" : { body: got.body, etag: stable(k, got.etag) };
    },
    async putIfAbsent(k, b) {
      const r = await inner.putIfAbsent(k, b);
      return r.ok ? { ok: true, etag: stable(k, r.etag) } : r;
    },
    async putIfMatch(k, b, e) {
      const current = await inner.get(k);
      if (current === null || stable(k, current.etag) !== e) return { ok: false };
      // Swap on the real version, so concurrent writers still have one winner.
      const r = await inner.putIfMatch(k, b, current.etag);
      return r.ok ? { ok: true, etag: stable(k, r.etag) } : r;
    },
    list: (p) => inner.list(p),
    async delete(k) {
      first.delete(k);
      await inner.delete(k);
    },
    close: () => inner.close(),
  };
}

/**
 * Ceph RGW under contention: a loser of a race gets a 500 instead of a 412,
 * so the writer cannot know it lost. Here every loss of a write that
 * overlapped another conditional write becomes StoreError "unknown", exactly
 * as s3.ts reports a 500. Sequential losses stay `{ ok: false }`.
 */
function raceLosersUnknown(inner: ObjectStore): ObjectStore & { unknowns: number } {
  const active = new Set<{ overlapped: boolean }>();
  const wrapper = {
    kind: `race-500(${inner.kind})`,
    unknowns: 0,
    get: (k: string) => inner.get(k),
    getIfNoneMatch: (k: string, e: string) => inner.getIfNoneMatch(k, e),
    putIfAbsent: (k: string, b: Uint8Array) => conditional("putIfAbsent", () => inner.putIfAbsent(k, b)),
    putIfMatch: (k: string, b: Uint8Array, e: string) => conditional("putIfMatch", () => inner.putIfMatch(k, b, e)),
    list: (p: string) => inner.list(p),
    delete: (k: string) => inner.delete(k),
    close: () => inner.close(),
  };
  async function conditional(operation: "putIfAbsent" | "putIfMatch", write: () => Promise<ConditionalWrite>): Promise<ConditionalWrite> {
    const me = { overlapped: active.size > 0 };
    for (const other of active) other.overlapped = true;
    active.add(me);
    try {
      const result = await write();
      if (!result.ok && me.overlapped) {
        wrapper.unknowns++;
        throw new StoreError(operation, `s3 ${operation}: UnknownError (500); the write may have landed`, "unknown");
      }
      return result;
    } finally {
      active.delete(me);
    }
  }
  return wrapper;
}

// ---------------------------------------------------------------------------

/** Nothing in a cause may identify the probe key, an id or a secret. */
function expectClean(result: ProbeResult, secrets: Array<string | undefined> = []): void {
  if (result.ok) return;
  expect(result.cause).not.toContain("probe/");
  expect(result.cause).not.toMatch(/[0-9a-f]{16}/i);
  expect(result.cause).not.toMatch(/\b(?:AKIA|ASIA)[A-Z0-9]{12,}/);
  expect(result.cause).not.toMatch(/[A-Z0-9]{16}/);
  expect(result.cause).not.toContain("\n");
  for (const s of [...secrets, testBucket, testEndpoint, env.AWS_ACCESS_KEY_ID, env.AWS_SECRET_ACCESS_KEY]) {
    if (s) expect(result.cause).not.toContain(s);
  }
}

type Backend = [name: string, fresh: () => ObjectStore];
const backends: Backend[] = [["sqlite", freshSqlite]];
if (testBucket) backends.push(["s3", freshS3]);
else {
  test("S3 test server is configured", () => {
    throw new Error(
      "SLIVINGDOC_TEST_S3_BUCKET is not set, so the S3 probe tests cannot run. Run `npm test` (it starts a throwaway " +
        "Ceph RGW), or start one with `bash test/support/ceph-rgw.sh start DIR` and load it with `set -a; . DIR/env; set +a` " +
        "(see docs/s3.md).",
    );
  });
}

for (const [name, fresh] of backends) {
  describe(`probe on the real ${name} store`, () => {
    test("passes, writes only under probe/<16 hex>/, and leaves no key behind", async () => {
      const inner = fresh();
      const store = recording(inner);
      const result = await probeStore(store);
      expect(result).toEqual({ ok: true });
      expect(store.keys.size).toBeGreaterThan(0);
      const dirs = new Set([...store.keys].map((k) => /^probe\/([0-9a-f]{16})\/[a-z]+$/.exec(k)?.[1] ?? `bad key ${k}`));
      expect(dirs.size).toBe(1);
      expect([...dirs][0]).toMatch(/^[0-9a-f]{16}$/);
      expect(await inner.list("")).toEqual([]);
    });

    test("two probes at once (two processes starting together) both pass, on separate keys", async () => {
      const inner = fresh();
      const [a, b] = await Promise.all([probeStore(inner), probeStore(inner)]);
      expect(a).toEqual({ ok: true });
      expect(b).toEqual({ ok: true });
      expect(await inner.list("")).toEqual([]);
    });

    test("a store that ignores both conditions is refused, naming If-None-Match, and cleaned up", async () => {
      const inner = fresh();
      const result = await probeStore(ignoringConditions(inner, { ifNoneMatch: true, ifMatch: true }));
      expect(result.ok).toBe(false);
      if (!result.ok) expect(result.cause).toBe("the store ignored If-None-Match: a create-only write replaced an existing object");
      expectClean(result);
      expect(await inner.list("")).toEqual([]);
    });

    test("a store that ignores only If-Match is refused, naming If-Match", async () => {
      const inner = fresh();
      const result = await probeStore(ignoringConditions(inner, { ifNoneMatch: false, ifMatch: true }));
      expect(result.ok).toBe(false);
      if (!result.ok) expect(result.cause).toBe("the store ignored If-Match: a write with a wrong ETag succeeded");
      expectClean(result);
      expect(await inner.list("")).toEqual([]);
    });

    test("a store whose ETag does not change with the object is refused: a stale ETag still matches", async () => {
      const inner = fresh();
      const result = await probeStore(stableEtags(inner));
      expect(result).toEqual({ ok: false, cause: "the store ignored If-Match: a write with a stale ETag succeeded" });
      expect(await inner.list("")).toEqual([]);
    });

    test("a store that ignores only If-None-Match is refused, naming If-None-Match", async () => {
      const inner = fresh();
      const result = await probeStore(ignoringConditions(inner, { ifNoneMatch: true, ifMatch: false }));
      expect(result.ok).toBe(false);
      if (!result.ok) expect(result.cause).toContain("ignored If-None-Match");
      expect(await inner.list("")).toEqual([]);
    });

    test("a store whose conditions hold one writer at a time but not under concurrency is refused by the race", async () => {
      const inner = fresh();
      const result = await probeStore(checkThenWrite(inner, 6), { writers: 6 });
      expect(result.ok).toBe(false);
      // Every one of the 6 writers saw the condition hold and wrote.
      if (!result.ok) expect(result.cause).toBe("concurrent conditional writers (compare-and-swap): 6 winners");
      expectClean(result);
      expect(await inner.list("")).toEqual([]);
    });

    test("a store that answers 'unknown' (a 500) to every race loser still passes: the winner is proved by reading back", async () => {
      const inner = fresh();
      const store = raceLosersUnknown(inner);
      const result = await probeStore(store, { writers: 8 });
      expect(result).toEqual({ ok: true });
      // The fault really happened: both races had losers answered with a 500.
      expect(store.unknowns).toBeGreaterThanOrEqual(2);
      expect(await inner.list("")).toEqual([]);
    });
  });
}

// Independent of the backend; on the embedded store, so it costs only the
// probe's own clean-up bound. The test's timeout is only the backstop: a
// probe that waited for its clean-up would never answer.
test("a clean-up that hangs (the endpoint stopped answering) does not hold the answer back", async () => {
  const inner = freshSqlite();
  let deletes = 0;
  const hanging: ObjectStore = {
    ...ignoringConditions(inner, { ifNoneMatch: true, ifMatch: true }),
    delete: () => {
      deletes++;
      return new Promise<void>(() => {});
    },
  };
  const result = await probeStore(hanging);
  expect(result.ok).toBe(false);
  // The clean-up really ran, and every delete of it is still pending.
  expect(deletes).toBeGreaterThan(0);
}, 60_000);

test("an endpoint that stops answering: through a store bounded by the call deadline, the probe refuses by then, naming it", async () => {
  const inner = freshSqlite();
  // Every request of it hangs, as against a black-holed endpoint.
  const hung = new Promise<never>(() => {});
  const silent: ObjectStore = { ...inner, get: () => hung, putIfAbsent: () => hung, putIfMatch: () => hung, list: () => hung, delete: () => hung };
  const started = performance.now();
  const result = await probeStore(boundedStore(silent, deadlineIn(300)));
  expect(result).toEqual({ ok: false, cause: "the store did not answer within the call deadline (300 ms; --deadline)", advice: "check --endpoint (or AWS_ENDPOINT_URL_S3) and the network; a store this slow needs a longer --deadline", operational: true });
  // Its clean-up is not sent after the deadline either: no wait for CLEANUP_BOUND_MS.
  expect(performance.now() - started).toBeLessThan(3_000);
});

if (testBucket) {
  describe("probe: operational failures of the real S3 server are refusals that name the cause", () => {
    /** Run `fn` with these credentials in the SDK's default chain (the environment), then restore it. */
    async function withCredentials<T>(keyId: string | undefined, secret: string, fn: () => Promise<T>): Promise<T> {
      const saved = { id: env.AWS_ACCESS_KEY_ID, secret: env.AWS_SECRET_ACCESS_KEY, session: env.AWS_SESSION_TOKEN };
      if (keyId !== undefined) env.AWS_ACCESS_KEY_ID = keyId;
      env.AWS_SECRET_ACCESS_KEY = secret;
      delete env.AWS_SESSION_TOKEN;
      try {
        return await fn();
      } finally {
        env.AWS_ACCESS_KEY_ID = saved.id;
        env.AWS_SECRET_ACCESS_KEY = saved.secret;
        if (saved.session !== undefined) env.AWS_SESSION_TOKEN = saved.session;
      }
    }

    test("a wrong secret key: refused, the cause names the credentials and carries no key id or secret", async () => {
      const keyId = env.AWS_ACCESS_KEY_ID;
      const wrongSecret = "wRoNg0secret0key0that0must0never0appear0";
      // The store is created (and resolves credentials) inside the swap.
      const result = await withCredentials(keyId, wrongSecret, () => probeStore(freshS3()));
      expect(result.ok).toBe(false);
      if (!result.ok) {
        expect(result.cause).toMatch(/access|credential/i);
        // Ceph and AWS answer a wrong secret with SignatureDoesNotMatch (403).
        expect(result.cause).toContain("SignatureDoesNotMatch");
      }
      expectClean(result, [keyId, wrongSecret]);
    });

    test("an unknown access key id: refused as InvalidAccessKeyId, without the key id", async () => {
      const wrongKeyId = "AKIAWRONGKEYID000TEST";
      const wrongSecret = "wRoNg0secret0key0that0must0never0appear0";
      const result = await withCredentials(wrongKeyId, wrongSecret, () => probeStore(freshS3()));
      expect(result).toEqual({ ok: false, cause: "the access key id is not known to the store (InvalidAccessKeyId)", advice: "check AWS_ACCESS_KEY_ID (or the profile's key) against the store's users", operational: true });
      expectClean(result, [wrongKeyId, wrongSecret]);
    });

    test("a bucket that does not exist: refused, the cause says so without naming the bucket", async () => {
      const missing = `slivingdoc-missing-${runId}`;
      const store = testS3Store("x", { bucket: missing });
      opened.push(store);
      const result = await probeStore(store);
      expect(result).toEqual({ ok: false, cause: "the bucket does not exist (NoSuchBucket)", advice: "check the bucket in --store (or S3_BUCKET), and check --endpoint (or AWS_ENDPOINT_URL_S3)", operational: true });
      expectClean(result, [missing]);
    });

    test("a closed port: refused at the first request as 'the endpoint refused the connection'", async () => {
      const dead = "http://127.0.0.1:1";
      // maxAttempts 1: no SDK retries of the (idempotent) clean-up either. The
      // conditional writes are never retried, and a refused connection fails
      // at once; a black-holed address would take s3.ts's 10 s connect timeout.
      const store = testS3Store("x", { endpoint: dead, maxAttempts: 1 });
      opened.push(store);
      const calls: string[] = [];
      const counted: ObjectStore = {
        kind: store.kind,
        get: (k) => (calls.push("get"), store.get(k)),
        getIfNoneMatch: (k, e) => (calls.push("getIfNoneMatch"), store.getIfNoneMatch(k, e)),
        putIfAbsent: (k, b) => (calls.push("putIfAbsent"), store.putIfAbsent(k, b)),
        putIfMatch: (k, b, e) => (calls.push("putIfMatch"), store.putIfMatch(k, b, e)),
        list: (p) => (calls.push("list"), store.list(p)),
        delete: (k) => (calls.push("delete"), store.delete(k)),
        close: () => store.close(),
      };
      const result = await probeStore(counted);
      expect(result).toEqual({ ok: false, cause: "the endpoint refused the connection (ECONNREFUSED)", advice: "check --endpoint (or AWS_ENDPOINT_URL_S3): its host and port, and that the server runs", operational: true });
      // One request, then the answer: the probe goes no further, and a
      // connection that was refused wrote nothing, so there is nothing to delete.
      expect(calls).toEqual(["putIfAbsent"]);
      expectClean(result, [dead, "127.0.0.1"]);
    });
  });
}

test("an endpoint that accepts the request and never answers: the S3 client's idle timeout is named, and calling again is the advice", async () => {
  const server = createServer((socket) => {
    socket.on("data", () => {});
    socket.on("error", () => {});
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  try {
    const port = (server.address() as { port: number }).port;
    const store = createS3Store({ bucket: "b", prefix: "", region: "us-east-1", endpoint: `http://127.0.0.1:${port}`, forcePathStyle: true, maxAttempts: 1, socketTimeoutMs: 300, clock: SYSTEM_CLOCK });
    opened.push(store);
    const result = await probeStore(store);
    expect(result).toEqual({
      ok: false,
      cause: "the endpoint stopped answering in the middle of a request (TimeoutError)",
      advice: "call again; if it persists, check --endpoint (or AWS_ENDPOINT_URL_S3) and the server",
      operational: true,
    });
  } finally {
    server.close();
  }
});

describe("probe: the operator's sentence for operational failures", () => {
  // The messages exactly as s3.ts builds them ("s3 OP: CODE (STATUS)").
  test.each([
    ["s3 putIfAbsent: AccessDenied (403)", "access denied (AccessDenied, 403)"],
    ["s3 putIfAbsent: ExpiredToken (400)", "expired credentials (ExpiredToken)"],
    ["s3 putIfAbsent: InvalidAccessKeyId (403)", "the access key id is not known to the store (InvalidAccessKeyId)"],
    ["s3 putIfAbsent: NoSuchBucket (404)", "the bucket does not exist (NoSuchBucket)"],
    ["s3 putIfAbsent: ENOTFOUND", "the endpoint's host name does not resolve (ENOTFOUND)"],
    ["s3 putIfAbsent: RequestTimeTooSkewed (403)", "this machine's clock is too far from the store's (RequestTimeTooSkewed, 403)"],
    ["s3 putIfAbsent: RegionMissing", "no region is configured (the AWS SDK found none)"],
    ["s3 putIfAbsent: TimeoutError", "the endpoint did not accept a connection in time (TimeoutError)"],
    ["s3 get: SlowDown (503)", "the store failed with a server error (SlowDown, 503)"],
    ["s3 putIfAbsent: CredentialsProviderError", "no credentials were found (the AWS SDK's default chain gave none)"],
    ["sqlite putIfAbsent: SQLITE_READONLY", "the store refused the probe (SQLITE_READONLY)"],
  ])("%s → %s", (message, cause) => {
    expect(operationalCause(new StoreError("putIfAbsent", message))).toBe(cause);
  });

  test("nothing id- or key-shaped from a message reaches the cause", () => {
    for (const message of [
      "s3 get: AKIAABCDEFGHIJKLMNOP (403)",
      "s3 get: 0123456789abcdef0123 (404)",
      "s3 get: probe/0123456789abcdef/swap (404)",
    ]) {
      const cause = operationalCause(new StoreError("get", message));
      expectClean({ ok: false, cause });
    }
    expect(operationalCause(new TypeError("key probe/0123456789abcdef/swap failed"))).toBe("the probe failed unexpectedly (TypeError)");
  });
});
