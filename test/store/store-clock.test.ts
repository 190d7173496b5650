/**
 * A store reads the clock it is given, never the system's: the times the
 * embedded store records, the heartbeats its writer queue judges, the send
 * and answer times the S3 store notes beside the server's `Date`, and the
 * latencies doctor's examination measures all follow a clock the test
 * sets, so each is checked here to the millisecond.
 */
import { afterAll, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { deadlineIn } from "../../src/store/deadline.ts";
import { examineStore } from "../../src/store/doctor.ts";
import type { StoreClock } from "../../src/store/object-store.ts";
import { createS3Store } from "../../src/store/s3.ts";
import { openSqliteStore } from "../../src/store/sqlite.ts";
import { waitFor } from "../support/wait.ts";

const root = mkdtempSync(join(tmpdir(), "slivingdoc-store-clock-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));
let n = 0;
const file = () => join(root, `store-${n++}.db`);
const bytes = (s: string) => new TextEncoder().encode(s);

const T0 = Date.UTC(2030, 0, 1);
/** A wall clock stopped at `ms`. */
const stoppedAt = (ms: number): StoreClock => ({ now: () => new Date(ms), monotonic: () => 0 });

test("the embedded store records each object's time on its clock, for writes alone and together", async () => {
  const store = openSqliteStore(file(), stoppedAt(T0));
  await store.putIfAbsent("a", bytes("1"));
  await store.putWith!([{ key: "b", body: bytes("2") }], "current", bytes("3"), null);
  expect((await store.list("")).map((o) => [o.key, o.modified.getTime()])).toEqual([
    ["a", T0],
    ["b", T0],
    ["current", T0],
  ]);
  await store.close();
});

test("a writer whose clock puts the turn's last heartbeat over 3 s ago skips it at once", async () => {
  const at = file();
  const holder = openSqliteStore(at, stoppedAt(T0), { writer: { holder: "holder" } });
  const held = await holder.queue!.enter();
  const late = openSqliteStore(at, stoppedAt(T0 + 3_001), { writer: { holder: "late" } });
  let waited = 0;
  // With the system's clock the holder's heartbeat is fresh: this writer would wait (and prepare) first.
  const turn = await late.queue!.enter(async () => void waited++);
  expect(waited).toBe(0);
  turn.end();
  held.end();
  await late.close();
  await holder.close();
});

test("a writer whose clock puts that heartbeat within 3 s waits for the turn", async () => {
  const at = file();
  const holder = openSqliteStore(at, stoppedAt(T0), { writer: { holder: "holder" } });
  const held = await holder.queue!.enter();
  const soon = openSqliteStore(at, stoppedAt(T0 + 2_999), { writer: { holder: "soon" } });
  let waited = 0;
  const stop = new AbortController();
  const entering = soon.queue!.enter(async () => void waited++, stop.signal).then(
    () => "entered",
    () => "gave up",
  );
  // Its clock stopped, it prepares once (at most every 20 ms by that clock), and waits on.
  await waitFor(() => waited >= 1, "the second writer waiting and preparing");
  stop.abort();
  expect(await entering).toBe("gave up");
  held.end();
  await soon.close();
  await holder.close();
});

test("the S3 store notes each answer's send and answer times on its clock, beside the server's Date", async () => {
  const serverDate = "Tue, 01 Jan 2030 00:00:07 GMT";
  const server = Bun.serve({ port: 0, fetch: () => new Response("x", { headers: { etag: '"e1"', date: serverDate } }) });
  const saved = { id: process.env.AWS_ACCESS_KEY_ID, secret: process.env.AWS_SECRET_ACCESS_KEY, profile: process.env.AWS_PROFILE };
  // The requests are signed, so a pair must be there; the server checks nothing.
  Object.assign(process.env, { AWS_ACCESS_KEY_ID: "AKIDTESTCLOCK", AWS_SECRET_ACCESS_KEY: "test-clock-secret" });
  delete process.env.AWS_PROFILE;
  const store = createS3Store({ bucket: "b", prefix: "", region: "us-east-1", endpoint: `http://127.0.0.1:${server.port}`, forcePathStyle: true, clock: stoppedAt(T0) });
  try {
    expect(await store.get("k")).toEqual({ body: bytes("x"), etag: "e1" });
    expect(store.lastAnswer?.()).toEqual({ sentAt: T0, answeredAt: T0, serverDate: Date.parse(serverDate) });
  } finally {
    await store.close();
    server.stop(true);
    for (const [name, value] of [["AWS_ACCESS_KEY_ID", saved.id], ["AWS_SECRET_ACCESS_KEY", saved.secret], ["AWS_PROFILE", saved.profile]] as const) {
      if (value === undefined) delete process.env[name];
      else process.env[name] = value;
    }
  }
});

test("doctor times each request on the clock it is given", async () => {
  const store = openSqliteStore(file(), stoppedAt(T0));
  // Every reading 5 ms after the last: each request takes exactly 5 ms.
  let t = 0;
  const exam = await examineStore(store, { deadline: deadlineIn(30_000), samples: 4, rateMs: 100, clock: { monotonic: () => (t += 5) } });
  const fiveMs = { samples: 4, p50Ms: 5, p99Ms: 5 };
  expect(exam.latency).toEqual({ get: fiveMs, put: fiveMs, conditionalPut: fiveMs });
  await store.close();
});
