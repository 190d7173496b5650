/**
 * The torture run, faults and contention at once, on a real S3 server (Ceph
 * RGW under `npm test`): 8 processes, 25 commits each, 200 in all, on one
 * notebook. Half of the workers run behind the fault-injecting store with a
 * seeded PRNG: about 10% of their reads and conditional writes fail before
 * taking effect, are dropped, land with the answer lost, lose the race,
 * answer 500 or stall. Every commit appends a unique line `wI cJ` to one of
 * three shared files (which every worker appends to, so conflicts are the
 * rule) and to the worker's own file; conflicts are resolved by keeping
 * both sides.
 *
 * At the end: every acknowledged commit's line is in the accepted state (a
 * fresh checkout pulled without faults), no unpublished line ever vanished
 * from a worker's visible files, and each worker's last, deliberately
 * unpublished edit survived its final pull. Prints
 * `torture: tried N, acknowledged N, conflicted N, retried N, faults injected N, lost 0`.
 *
 * SLIVINGDOC_TORTURE_SEED=N replays the fault and edit choices (timing still
 * varies). Without SLIVINGDOC_TEST_S3_BUCKET this file FAILS — it never
 * skips (see test/e2e/s3-notebook.test.ts).
 */
import { afterAll, expect, test } from "bun:test";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pull } from "../../src/engine/pull.ts";
import { makeWorld } from "../support/fixture.ts";
import { removePrefixes, testBucket, testEndpoint, testS3Store } from "../support/s3-test-store.ts";

const env = process.env;

const WORKERS = 8;
const COMMITS = 25;
const SHARED_FILES = 3;
const SEED = env.SLIVINGDOC_TORTURE_SEED !== undefined ? Number(env.SLIVINGDOC_TORTURE_SEED) : Math.floor(Math.random() * 2 ** 31);

const root = mkdtempSync(join(tmpdir(), "slivingdoc-torture-"));
const prefix = `slivingdoc-test/torture-${crypto.randomUUID().slice(0, 8)}`;

afterAll(async () => {
  // Leave the bucket as we found it.
  await removePrefixes([`${prefix}/`]);
  rmSync(root, { recursive: true, force: true });
});

interface Summary {
  id: number;
  faulty: boolean;
  tried: number;
  conflicted: number;
  retried: number;
  pulls: number;
  lostLocal: number;
  faults: number;
  faultKinds: Record<string, number>;
  lostLines: string[];
}

const lines = (text: string) => text.split("\n").filter((l) => l !== "");

if (!testBucket) {
  test("S3 test server is configured", () => {
    throw new Error(
      "SLIVINGDOC_TEST_S3_BUCKET is not set, so the torture run cannot run. Run `npm test` (it starts a " +
        "throwaway Ceph RGW), or start one with `bash test/support/ceph-rgw.sh start DIR` and load it with " +
        "`set -a; . DIR/env; set +a` (see docs/s3.md).",
    );
  });
} else {
  test(`torture: ${WORKERS} processes × ${COMMITS} commits on S3, faults in half of them: nothing acknowledged or unpublished is lost`, async () => {
    console.log(`torture: seed ${SEED} (replay the choices with SLIVINGDOC_TORTURE_SEED=${SEED})`);
    const started = performance.now();
    const workers = Array.from({ length: WORKERS }, (_, i) => {
      const dir = join(root, `w${i}`);
      const p = Bun.spawn(
        [process.execPath, join(import.meta.dir, "torture-worker.ts"), String(i), dir, String(COMMITS), String(SEED), i % 2 === 0 ? "1" : "0", String(SHARED_FILES)],
        {
          env: {
            ...(env as Record<string, string>),
            SLIVINGDOC_STORE: `s3://${testBucket}/${prefix}`,
            // Agents on different hosts share nothing but the bucket.
            SLIVINGDOC_PRIVATE_ROOT: join(root, `private-w${i}`),
          },
          stdout: "pipe",
          stderr: "pipe",
        },
      );
      return { i, dir, p };
    });
    const outputs = await Promise.all(
      workers.map(async (w) => ({ ...w, out: await new Response(w.p.stdout).text(), err: await new Response(w.p.stderr).text(), code: await w.p.exited })),
    );
    for (const o of outputs) {
      if (o.code !== 0) console.error(`worker ${o.i} exited ${o.code}:\n${o.err}`);
      expect({ worker: o.i, code: o.code }).toEqual({ worker: o.i, code: 0 });
    }

    const acks: Array<{ ack: string; shared: string; generation: number; worker: number }> = [];
    const summaries: Summary[] = [];
    for (const o of outputs) {
      for (const l of lines(o.out)) {
        const record = JSON.parse(l) as { ack?: string; shared?: string; generation?: number; summary?: Summary };
        if (record.summary) summaries.push(record.summary);
        else acks.push({ ack: record.ack!, shared: record.shared!, generation: record.generation!, worker: o.i });
      }
    }
    expect(summaries.length).toBe(WORKERS);

    // The accepted state, read by a fresh checkout through the plain store.
    const world = makeWorld(testS3Store(prefix), `s3://${testBucket}/${prefix}/@${testEndpoint ?? "aws"}`);
    const check = world.checkout("check");
    const final = await pull(world.deps(), { path: check });
    const read = (dir: string, f: string) => (existsSync(join(dir, f)) ? readFileSync(join(dir, f), "utf8") : "");
    const accepted = new Map<string, string[]>();
    for (let s = 0; s < SHARED_FILES; s++) accepted.set(`shared-${s}.md`, lines(read(check, `shared-${s}.md`)));
    for (let i = 0; i < WORKERS; i++) accepted.set(`own-w${i}.md`, lines(read(check, `own-w${i}.md`)));
    await world.close();

    const lost: string[] = [];
    for (const a of acks) {
      if (!accepted.get(a.shared)!.includes(a.ack)) lost.push(`${a.ack} missing from accepted ${a.shared}`);
      if (!accepted.get(`own-w${a.worker}.md`)!.includes(a.ack)) lost.push(`${a.ack} missing from accepted own-w${a.worker}.md`);
    }
    for (const s of summaries) lost.push(...s.lostLines.map((l) => `w${s.id} lost unpublished ${l}`));
    // Each checkout still holds its own acknowledged lines and its unpublished last edit.
    for (const o of outputs) {
      const ownLines = lines(read(o.dir, `own-w${o.i}.md`));
      for (const a of acks.filter((x) => x.worker === o.i)) if (!ownLines.includes(a.ack)) lost.push(`${a.ack} missing from checkout w${o.i}`);
      if (!ownLines.includes(`w${o.i} pending`)) lost.push(`w${o.i} pending missing from its own file`);
      if (!lines(read(o.dir, "shared-0.md")).includes(`w${o.i} pending`)) lost.push(`w${o.i} pending missing from shared-0.md`);
    }

    // The accepted state holds only what was written: unique lines, no markers, nothing unpublished.
    const all = [...accepted.values()].flat();
    const strays = all.filter((l) => !/^w\d+ c\d+$/.test(l));
    const shared = [...accepted.entries()].filter(([f]) => f.startsWith("shared-")).flatMap(([, ls]) => ls);
    const duplicates = shared.length - new Set(shared).size;

    const total = (k: "tried" | "conflicted" | "retried" | "faults") => summaries.reduce((n, s) => n + s[k], 0);
    const kinds: Record<string, number> = {};
    for (const s of summaries) for (const [k, n] of Object.entries(s.faultKinds)) kinds[k] = (kinds[k] ?? 0) + n;
    console.log(
      `torture: tried ${total("tried")}, acknowledged ${acks.length}, conflicted ${total("conflicted")}, retried ${total("retried")}, faults injected ${total("faults")}, lost ${lost.length}`,
    );
    console.log(
      `torture: generation ${final.generation}, ${duplicates} duplicate shared lines, faults by kind ${JSON.stringify(kinds)}, ${Math.round((performance.now() - started) / 1000)} s`,
    );
    if (lost.length > 0) console.error(lost.slice(0, 20).join("\n"));

    expect(lost).toEqual([]);
    expect(acks.length).toBe(WORKERS * COMMITS);
    expect(new Set(acks.map((a) => a.ack)).size).toBe(WORKERS * COMMITS);
    expect(strays).toEqual([]);
    // Every acknowledged line needed a publication of its own.
    expect(final.generation).toBeGreaterThanOrEqual(WORKERS * COMMITS);
    // The faults really happened, in every kind asked for.
    expect(total("faults")).toBeGreaterThan(0);
    for (const k of ["fail-before", "drop-request", "lose-response", "lose-race", "answer-500", "delay"]) expect(kinds[k] ?? 0).toBeGreaterThan(0);
  }, 300_000);
}
