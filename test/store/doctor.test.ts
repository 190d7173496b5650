/**
 * What `doctor` measures (src/store/doctor.ts) and how it judges it
 * (src/surfaces/doctor.ts), on the real embedded store and on wrappers
 * around it that refuse, hang or ignore the conditions as a store would
 * (test/support/faulty-store.ts). The S3 side, with Ceph RGW, s3rver and a
 * black-holed endpoint, is test/e2e/doctor.test.ts.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { longestCommitMs } from "../../src/engine/publish/contention.ts";
import { deadlineIn } from "../../src/store/deadline.ts";
import { clockSkew, type Examination, examineStore, percentile } from "../../src/store/doctor.ts";
import { type ObjectStore, type ServerAnswer, StoreError } from "../../src/store/object-store.ts";
import { openSqliteStore } from "../../src/store/sqlite.ts";
import { judge, recommend } from "../../src/surfaces/doctor.ts";
import { faultyStore } from "../support/faulty-store.ts";
import { snapshotStore } from "../support/fixture.ts";
import { mulberry32 } from "../support/seeded.ts";
import { SYSTEM_CLOCK } from "../../src/surfaces/system-clock.ts";

const tmp = mkdtempSync(join(tmpdir(), "slivingdoc-doctor-"));
const opened: ObjectStore[] = [];
afterAll(async () => {
  await Promise.all(opened.map((s) => s.close()));
  rmSync(tmp, { recursive: true, force: true });
});

const bytes = (s: string) => new TextEncoder().encode(s);
const CURRENT = { commitRetries: 30, deadlineMs: 60_000 };
/** A store holding no notebook yet: what the judgement of the store itself is made beside. */
const NO_NOTEBOOK = { state: "none" } as const;

/** A real embedded store holding a notebook's keys, which the examination must leave as they are. */
async function notebookStore(): Promise<ObjectStore> {
  const store = openSqliteStore(join(tmp, `${crypto.randomUUID()}.db`), SYSTEM_CLOCK);
  opened.push(store);
  await store.putIfAbsent("packs/one.pack", bytes("pack"));
  await store.putIfAbsent("current", bytes('{"generation":1}'));
  return store;
}

/** The real store, with the requests in `denied` refused for access as S3 words it. */
function denying(store: ObjectStore, denied: ReadonlyArray<"putIfAbsent" | "putIfMatch" | "delete">): ObjectStore {
  const refuse = (op: string) => Promise.reject(new StoreError("putIfAbsent", `s3 ${op}: AccessDenied (403)`));
  return {
    kind: store.kind,
    get: (k) => store.get(k),
    getIfNoneMatch: (k, e) => store.getIfNoneMatch(k, e),
    list: (p) => store.list(p),
    putIfAbsent: (k, b) => (denied.includes("putIfAbsent") ? refuse("putIfAbsent") : store.putIfAbsent(k, b)),
    putIfMatch: (k, b, e) => (denied.includes("putIfMatch") ? refuse("putIfMatch") : store.putIfMatch(k, b, e)),
    delete: (k) => (denied.includes("delete") ? refuse("delete") : store.delete(k)),
    close: async () => {},
  };
}

const examine = (store: ObjectStore, deadlineMs = 30_000) => examineStore(store, { deadline: deadlineIn(deadlineMs), samples: 5, rateMs: 100, clock: SYSTEM_CLOCK });

describe("on the embedded store", () => {
  test("everything is allowed and measured, nothing applies to the clock, and the notebook's keys are as they were", async () => {
    const store = await notebookStore();
    const before = await snapshotStore(store);
    const exam = await examine(store);
    expect(exam).toMatchObject({
      kind: "sqlite",
      permissions: { read: "allowed", list: "allowed", write: "allowed", delete: "allowed" },
      conditionalWrites: { proved: true },
      listAfterWrite: { rounds: 5, missed: 0 },
      clockSkew: null,
      stopped: null,
      leftovers: 0,
    });
    for (const kind of ["get", "put", "conditionalPut"] as const) {
      expect(exam.latency[kind]!.samples).toBe(5);
      expect(exam.latency[kind]!.p99Ms).toBeGreaterThanOrEqual(exam.latency[kind]!.p50Ms);
    }
    expect(exam.conditionalWritesPerSecond!).toBeGreaterThan(0);
    // Every scratch key is gone, and nothing else changed.
    expect(await snapshotStore(store)).toEqual(before);
    const report = judge(exam, CURRENT, 10, NO_NOTEBOOK);
    expect(report).toMatchObject({ verdict: "ok", access: "writer", problems: [], recommended: { commitRetries: 30, deadlineMs: 60_000, asConfigured: true } });
  });

  test("credentials that may read but not write are a reader: reads are timed, writes are not tried, and nothing is left", async () => {
    const store = await notebookStore();
    const before = await snapshotStore(store);
    const exam = await examine(denying(store, ["putIfAbsent", "putIfMatch", "delete"]));
    expect(exam.permissions).toEqual({ read: "allowed", list: "allowed", write: "denied", delete: "denied" });
    expect(exam.conditionalWrites).toBeNull();
    expect(exam.latency.get!.samples).toBe(5);
    expect([exam.latency.put, exam.latency.conditionalPut, exam.conditionalWritesPerSecond, exam.listAfterWrite]).toEqual([null, null, null, null]);
    const report = judge(exam, CURRENT, 10, NO_NOTEBOOK);
    expect(report.access).toBe("reader");
    expect(report.verdict).toBe("warnings");
    expect(report.problems.map((p) => p.text).join("\n")).toContain("may read the notebook but not write it");
    expect(report.recommended).toBeNull();
    // The refused writes wrote nothing: no leftover to report.
    expect(exam.leftovers).toBe(0);
    expect(report.problems).toHaveLength(1);
    expect(await snapshotStore(store)).toEqual(before);
  });

  test("a writer that may not delete is told what that costs", async () => {
    const store = await notebookStore();
    const exam = await examine(denying(store, ["delete"]));
    const report = judge(exam, CURRENT, 10, NO_NOTEBOOK);
    expect(report.access).toBe("writer");
    expect(report.verdict).toBe("warnings");
    expect(report.problems.map((p) => p.text).join("\n")).toContain("gc cannot remove packs");
    // What it wrote it could not delete: counted, not hidden.
    expect(exam.leftovers).toBeGreaterThan(0);
  });

  test("a store that ignores If-None-Match is not usable, and its writes are not timed", async () => {
    const store = await notebookStore();
    // Check-then-write through the real store: an existing key is replaced, as a store that drops the condition does.
    const ignoring: ObjectStore = {
      ...store,
      kind: store.kind,
      get: (k) => store.get(k),
      list: (p) => store.list(p),
      delete: (k) => store.delete(k),
      putIfMatch: (k, b, e) => store.putIfMatch(k, b, e),
      putIfAbsent: async (k, b) => {
        const held = await store.get(k);
        return held === null ? store.putIfAbsent(k, b) : store.putIfMatch(k, b, held.etag);
      },
      close: async () => {},
    };
    const before = await snapshotStore(store);
    const exam = await examine(ignoring);
    expect(exam.conditionalWrites).toMatchObject({ proved: false });
    expect((exam.conditionalWrites as { cause: string }).cause).toContain("If-None-Match");
    expect(exam.latency.put).toBeNull();
    const report = judge(exam, CURRENT, 10, NO_NOTEBOOK);
    expect(report.verdict).toBe("unusable");
    expect(report.problems[0]!.text).toContain("INCOMPATIBLE_STORE");
    expect(await snapshotStore(store)).toEqual(before);
  });

  test("a store that stops answering mid-way: the answer comes by the call's deadline, and the clean-up still deletes what was written", async () => {
    const store = await notebookStore();
    const before = await snapshotStore(store);
    // Compare-and-swaps hang: the probe's second check never gets its answer.
    const hung = faultyStore(store, (op) => (op === "putIfMatch" ? "delay" : null), { delayMs: 600_000 });
    const started = performance.now();
    const exam = await examine(hung, 2_000);
    expect(performance.now() - started).toBeLessThan(2_000);
    expect(exam.stopped).toBe("the store did not answer within the call deadline (2 s; --deadline); check --endpoint (or AWS_ENDPOINT_URL_S3) and the network; a store this slow needs a longer --deadline");
    expect(exam.permissions.write).toBe("allowed");
    expect(judge(exam, CURRENT, 10, NO_NOTEBOOK).verdict).toBe("unusable");
    expect(await snapshotStore(store)).toEqual(before);
  });

  test("a slow store gets fewer samples, not a verdict of the deadline doctor ran out of", async () => {
    const store = await notebookStore();
    // Every read and write takes 100 ms: 50 samples of each would take 15 s, the deadline is 10.
    const slow = faultyStore(store, (op) => (op === "get" || op === "putIfAbsent" || op === "putIfMatch" ? "delay" : null), { delayMs: 100 });
    const started = performance.now();
    const exam = await examineStore(slow, { deadline: deadlineIn(10_000), samples: 50, clock: SYSTEM_CLOCK });
    expect(performance.now() - started).toBeLessThan(10_000);
    expect(exam.stopped).toBeNull();
    expect(exam.conditionalWrites).toEqual({ proved: true });
    for (const kind of ["get", "put", "conditionalPut"] as const) {
      expect(exam.latency[kind]!.samples).toBeGreaterThan(1);
      expect(exam.latency[kind]!.samples).toBeLessThan(50);
      expect(exam.latency[kind]!.p50Ms).toBeGreaterThanOrEqual(100);
    }
    expect(judge(exam, CURRENT, 0, NO_NOTEBOOK).verdict).toBe("ok");
  }, 20_000);
});

describe("clock skew", () => {
  /** Answers from a server whose clock is `offset` ms off this machine's, read somewhere inside each round trip. */
  function answers(offset: number, count: number, random: () => number): ServerAnswer[] {
    let t = 1_780_000_000_000 + Math.floor(random() * 1000);
    return Array.from({ length: count }, () => {
      const sentAt = (t += Math.floor(random() * 400));
      const answeredAt = (t += 1 + Math.floor(random() * 80));
      const readAt = sentAt + random() * (answeredAt - sentAt) + offset;
      return { sentAt, answeredAt, serverDate: Math.floor(readAt / 1000) * 1000 };
    });
  }

  test("the offset found holds the true one within its uncertainty, which narrows as answers cross seconds", () => {
    const random = mulberry32(7);
    for (const offset of [0, 250, -7_300, 5_300, 16 * 60_000, -3_600_000]) {
      const one = clockSkew(answers(offset, 1, random))!;
      const many = clockSkew(answers(offset, 40, random))!;
      for (const s of [one, many]) expect(Math.abs(s.offsetMs - offset)).toBeLessThanOrEqual(s.uncertaintyMs + 1);
      expect(one.uncertaintyMs).toBeGreaterThanOrEqual(500);
      expect(many.uncertaintyMs).toBeLessThan(150);
    }
  });

  test("no answers, or answers that contradict each other (a clock that jumped), give no skew", () => {
    expect(clockSkew([])).toBeNull();
    expect(clockSkew([
      { sentAt: 1_000_000, answeredAt: 1_000_010, serverDate: 1_000_000 },
      { sentAt: 1_000_020, answeredAt: 1_000_030, serverDate: 1_060_000 },
    ])).toBeNull();
  });

  const withSkew = (offsetMs: number): Examination => ({
    kind: "s3",
    permissions: { read: "allowed", list: "allowed", write: "allowed", delete: "allowed" },
    conditionalWrites: { proved: true },
    latency: { get: null, put: null, conditionalPut: null },
    conditionalWritesPerSecond: null,
    listAfterWrite: null,
    clockSkew: { offsetMs, uncertaintyMs: 500 },
    stopped: null,
    leftovers: 0,
  });

  test("a minute off warns, fifteen minutes off makes the store unusable, either way", () => {
    expect(judge(withSkew(30_000), CURRENT, 0, NO_NOTEBOOK).verdict).toBe("ok");
    expect(judge(withSkew(-120_000), CURRENT, 0, NO_NOTEBOOK)).toMatchObject({ verdict: "warnings", problems: [{ level: "warn" }] });
    expect(judge(withSkew(120_000), CURRENT, 0, NO_NOTEBOOK).problems[0]!.text).toContain("behind the server's");
    expect(judge(withSkew(-120_000), CURRENT, 0, NO_NOTEBOOK).problems[0]!.text).toContain("ahead of the server's");
    expect(judge(withSkew(20 * 60_000), CURRENT, 0, NO_NOTEBOOK)).toMatchObject({ verdict: "unusable", problems: [{ level: "fail" }] });
  });
});

test("percentiles are nearest-rank", () => {
  const values = Array.from({ length: 100 }, (_, i) => 100 - i);
  expect([percentile(values, 50), percentile(values, 99), percentile(values, 100)]).toEqual([50, 99, 100]);
  expect(percentile([3.14159], 99)).toBe(3.14);
  expect(() => percentile([], 50)).toThrow(RangeError);
});

describe("the settings advised", () => {
  const timed = (p50Ms: number, p99Ms: number): Examination => ({
    kind: "s3",
    permissions: { read: "allowed", list: "allowed", write: "allowed", delete: "allowed" },
    conditionalWrites: { proved: true },
    latency: { get: { samples: 20, p50Ms, p99Ms }, put: { samples: 20, p50Ms, p99Ms }, conditionalPut: { samples: 20, p50Ms, p99Ms } },
    conditionalWritesPerSecond: 1000 / p50Ms,
    listAfterWrite: { rounds: 5, missed: 0 },
    clockSkew: { offsetMs: 0, uncertaintyMs: 10 },
    stopped: null,
    leftovers: 0,
  });
  const longest = (retries: number, p50: number, p99: number) => longestCommitMs(retries, 3 * p99, 2 * p50);

  test("a quick store keeps the configured settings", () => {
    expect(recommend(timed(5, 20), CURRENT)).toMatchObject({ commitRetries: 30, deadlineMs: 60_000, asConfigured: true });
  });

  test("the advice always fits its own deadline, with the most retries that fit, down to five; below that the deadline grows", () => {
    for (const [p50, p99] of [[5, 20], [40, 300], [100, 700], [200, 1_500], [500, 4_000], [900, 12_000]] as const) {
      const r = recommend(timed(p50, p99), CURRENT)!;
      expect(1.5 * r.longestCommitMs).toBeLessThanOrEqual(r.deadlineMs);
      expect(r.longestCommitMs).toBe(Math.round(longest(r.commitRetries, p50, p99)));
      if (r.deadlineMs === CURRENT.deadlineMs && r.commitRetries < CURRENT.commitRetries) {
        expect(1.5 * Math.round(longest(r.commitRetries + 1, p50, p99))).toBeGreaterThan(CURRENT.deadlineMs);
      }
      if (r.deadlineMs > CURRENT.deadlineMs) expect(r.commitRetries).toBe(5);
    }
    expect(recommend(timed(900, 12_000), CURRENT)!.deadlineMs).toBeGreaterThan(60_000);
  });

  test("nothing is advised where no write was timed", () => {
    expect(recommend({ ...timed(5, 20), latency: { get: { samples: 20, p50Ms: 5, p99Ms: 20 }, put: null, conditionalPut: null } }, CURRENT)).toBeNull();
  });
});
