/**
 * The TCP proxy of the tests and the bench (test/support/tcp-proxy.ts): its
 * delay is paid once per round trip and once per handshake, never per
 * chunk of a body, and its counts of requests and of the round trips waited
 * for in turn are right — against the real S3 server (Ceph RGW under `npm
 * test`), and for the body's chunks against a plain TCP source whose send
 * times the test knows. Only lower bounds on time are asserted, with one
 * exception far above any machine's noise: a body's last chunk is not late
 * by the delay times the chunks before it. Without SLIVINGDOC_TEST_S3_BUCKET
 * the S3 tests FAIL, as the other S3 suites do.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { connect, createServer, type Server } from "node:net";
import type { ObjectStore } from "../../src/store/object-store.ts";
import { removePrefixes, s3ServerMissing, testEndpoint, testS3Store } from "./s3-test-store.ts";
import { startTcpProxy, type TcpProxy } from "./tcp-proxy.ts";
import { waitFor } from "./wait.ts";

/** Large against a busy machine's scheduling noise, small enough to keep the file quick. */
const D = 100;

function body(bytes: number): Uint8Array {
  const out = new Uint8Array(bytes);
  for (let i = 0; i < bytes; i += 65536) crypto.getRandomValues(out.subarray(i, Math.min(bytes, i + 65536)));
  return out;
}

test("a body streams through at its own pace: each chunk is late by half the delay, never by the delay times the chunks before it", async () => {
  const CHUNKS = 32;
  const CHUNK = 16 * 1024;
  const SPACING_MS = 10;
  const sentAt: number[] = [];
  const source: Server = createServer(async (socket) => {
    for (let i = 0; i < CHUNKS; i++) {
      sentAt.push(performance.now());
      socket.write(Buffer.alloc(CHUNK, i));
      await Bun.sleep(SPACING_MS);
    }
    socket.end();
  });
  await new Promise<void>((resolve) => source.listen(0, "127.0.0.1", resolve));
  const proxy = await startTcpProxy(`http://127.0.0.1:${(source.address() as { port: number }).port}`, { delayMs: 2 * D });
  try {
    const reads: Array<{ at: number; bytes: Buffer }> = [];
    await new Promise<void>((resolve, reject) => {
      const client = connect({ host: "127.0.0.1", port: proxy.port });
      client.on("data", (bytes: Buffer) => reads.push({ at: performance.now(), bytes }));
      client.on("end", resolve);
      client.on("error", reject);
    });
    const got = Buffer.concat(reads.map((r) => r.bytes));
    // Everything, in order.
    expect(got.length).toBe(CHUNKS * CHUNK);
    for (let i = 0; i < CHUNKS; i++) expect(got[i * CHUNK]).toBe(i);
    // Passed on as it came, not gathered into one write.
    expect(reads.length).toBeGreaterThanOrEqual(CHUNKS / 2);
    // When the client had the last byte of chunk i, and how late that was.
    const lateness = sentAt.map((sent, i) => {
      const needed = (i + 1) * CHUNK;
      let seen = 0;
      const read = reads.find((r) => (seen += r.bytes.length) >= needed)!;
      return read.at - sent;
    });
    // The server→client half of the round trip, on every chunk…
    for (const late of lateness) expect(late).toBeGreaterThanOrEqual(D);
    // …and not once more for every chunk ahead of it: had the chunks paid
    // in turn, the last would be late by at least reads × D.
    expect(lateness.at(-1)!).toBeLessThan((reads.length * D) / 2);
  } finally {
    await proxy.close();
    source.close();
  }
});

if (!s3ServerMissing()) {
  const prefix = `slivingdoc-test/tcp-proxy-${crypto.randomUUID().slice(0, 8)}`;
  let proxy: TcpProxy;
  let store: ObjectStore;

  beforeAll(async () => {
    proxy = await startTcpProxy(testEndpoint!, { delayMs: D });
    store = testS3Store(prefix, { endpoint: proxy.url });
  });
  afterAll(async () => {
    await store.close();
    await proxy.close();
    await removePrefixes([`${prefix}/`]);
  });

  test("a request through the proxy takes a round trip, a new connection one more for its handshake; both are counted", async () => {
    proxy.resetCounts();
    const first = performance.now();
    expect(await store.get("absent")).toBeNull();
    expect(performance.now() - first).toBeGreaterThanOrEqual(2 * D);
    expect(proxy.counts()).toEqual({ requests: 1, sequential: 1, connections: 1 });

    // The connection is kept open: the next request pays its round trip only.
    const second = performance.now();
    expect(await store.get("absent")).toBeNull();
    expect(performance.now() - second).toBeGreaterThanOrEqual(D);
    expect(proxy.counts()).toEqual({ requests: 2, sequential: 2, connections: 1 });
  });

  test("requests sent one after another's answer are sequential round trips; requests in flight together are one", async () => {
    const written = await store.putIfAbsent("a", new TextEncoder().encode("a"));
    expect(written.ok).toBe(true);
    proxy.resetCounts();
    const started = performance.now();
    const read = await store.get("a");
    await store.putIfMatch("a", new TextEncoder().encode("b"), read!.etag);
    expect(performance.now() - started).toBeGreaterThanOrEqual(2 * D);
    expect(proxy.counts()).toMatchObject({ requests: 2, sequential: 2 });

    proxy.resetCounts();
    await Promise.all([store.get("a"), store.get("absent"), store.list("")]);
    expect(proxy.counts()).toMatchObject({ requests: 3, sequential: 1 });

    // Parallel, then one after both: two in turn.
    proxy.resetCounts();
    await Promise.all([store.get("a"), store.get("absent")]);
    await store.get("a");
    expect(proxy.counts()).toMatchObject({ requests: 3, sequential: 2 });
  });

  test("a request in flight when the count starts afresh is not counted, nor are requests sent after its answer chained to it", async () => {
    proxy.resetCounts();
    const before = store.get("absent");
    await waitFor(() => proxy.counts().requests === 1, "the request to reach the proxy");
    proxy.resetCounts();
    await before;
    await store.get("absent");
    expect(proxy.counts()).toMatchObject({ requests: 1, sequential: 1 });
  });

  test("a large body up and down is one request each way, its bytes never taken for a request", async () => {
    const big = body(6 * 1024 * 1024);
    proxy.resetCounts();
    const written = await store.putIfAbsent("big", big);
    expect(written.ok).toBe(true);
    const back = await store.get("big");
    expect(Buffer.compare(Buffer.from(back!.body), Buffer.from(big))).toBe(0);
    expect(proxy.counts()).toMatchObject({ requests: 2, sequential: 2 });
  });
}
