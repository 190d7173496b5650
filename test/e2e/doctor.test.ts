/**
 * `slivingdoc doctor` as an operator runs it, against the built binary:
 * on the embedded store; on Ceph RGW (every number there, the notebook's
 * keys and the start-up probe's record left as they were); on s3rver, an
 * S3 server that ignores the conditional writes (a clear "no", exit 2); and
 * behind an endpoint that stops answering (an answer within --deadline).
 * Reader and writer credentials are told apart in least-privilege.test.ts.
 * Without SLIVINGDOC_TEST_S3_BUCKET the S3 part FAILS, as every S3 suite.
 */
import { afterAll, expect, test } from "bun:test";
import { Database } from "bun:sqlite";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { EXIT_CODES } from "../../src/contract/tokens.ts";
import type { DoctorReport } from "../../src/surfaces/doctor.ts";
import { snapshotStore } from "../support/fixture.ts";
import { runBinary } from "../support/mcp.ts";
import { removePrefixes, s3ServerMissing, testBucket, testEndpoint, testS3Store } from "../support/s3-test-store.ts";
import { S3RVER_KEY, startS3rver } from "../support/s3rver.ts";
import { startTcpProxy } from "../support/tcp-proxy.ts";

const env = process.env;
const root = mkdtempSync(join(tmpdir(), "slivingdoc-doctor-e2e-"));
const runId = crypto.randomUUID().slice(0, 8);
const prefixes: string[] = [];
afterAll(async () => {
  await removePrefixes(prefixes);
  rmSync(root, { recursive: true, force: true });
});

/** The binary with `vars` over a bare environment of its own; killed if it outlives `limitMs`. */
const run = (vars: Record<string, string>, args: string[], limitMs = 60_000) =>
  runBinary(args, { PATH: env.PATH ?? "/usr/bin:/bin", HOME: join(root, "home"), ...vars }, limitMs, root);

/** Exit 0; doctor's answer is all on stdout (pull and commit report on stderr). */
async function ok(vars: Record<string, string>, args: string[]) {
  const r = await run(vars, args);
  const stderr = args[0] === "doctor" || r.code !== 0 ? r.stderr : "";
  expect({ args: args.join(" "), code: r.code, stderr }).toEqual({ args: args.join(" "), code: 0, stderr: "" });
  return r;
}

/** Every file under a directory with its bytes and modification time: the private root before and after. */
function snapshot(dir: string): string[] {
  if (!existsSync(dir)) return [];
  return (readdirSync(dir, { recursive: true }) as string[])
    .filter((p) => statSync(join(dir, p)).isFile())
    .map((p) => `${p} ${statSync(join(dir, p)).mtimeMs} ${readFileSync(join(dir, p), "base64")}`)
    .sort();
}

test("the embedded store: ready, every number but the clock's, the notebook's keys as they were", async () => {
  const db = join(root, "embedded.db");
  const vars = { SLIVINGDOC_STORE: `sqlite:${db}`, XDG_STATE_HOME: join(root, "embedded-state") };
  const nb = join(root, "embedded-nb");
  await ok(vars, ["pull", nb]);
  writeFileSync(join(nb, "plan.md"), "goal: ship\n");
  await ok(vars, ["commit", nb, "-m", "plan"]);
  const keys = () => {
    const d = new Database(db, { readonly: true });
    try {
      return d.query<{ key: string; etag: string }, []>("SELECT key, etag FROM objects ORDER BY key").all().map((r) => `${r.key} ${r.etag}`);
    } finally {
      d.close();
    }
  };
  const before = keys();

  const human = await ok(vars, ["doctor", "--samples", "5"]);
  expect(human.stdout).toStartWith("doctor: the embedded store is ready for a notebook");
  expect(human.stdout).toContain("clock skew            does not apply: the store is on this machine");
  expect(human.stdout).toMatch(/^recommended: --commit-retries 30 --deadline 1m, as configured/m);

  const report = JSON.parse((await ok(vars, ["doctor", "--json", "--samples", "5"])).stdout) as DoctorReport;
  expect(report).toMatchObject({ verdict: "ok", access: "writer", kind: "sqlite", clockSkew: null, conditionalWrites: { proved: true }, leftovers: 0 });
  expect(report.latency.conditionalPut!.samples).toBe(5);
  expect(keys()).toEqual(before);
}, 30_000);

test("--samples takes a whole number from 1 to 1000", async () => {
  const vars = { SLIVINGDOC_STORE: `sqlite:${join(root, "samples.db")}`, XDG_STATE_HOME: join(root, "samples-state") };
  for (const bad of ["0", "1001", "many"]) {
    const r = await run(vars, ["doctor", "--samples", bad]);
    expect({ bad, code: r.code, stdout: r.stdout }).toEqual({ bad, code: EXIT_CODES.STARTUP, stdout: "" });
    expect(r.stderr).toContain("--samples must be a whole number from 1 to 1000");
  }
});

if (!s3ServerMissing()) {
  const s3Vars = (prefix: string, privateRoot: string, endpoint = testEndpoint!) => ({
    AWS_ACCESS_KEY_ID: env.AWS_ACCESS_KEY_ID ?? "",
    AWS_SECRET_ACCESS_KEY: env.AWS_SECRET_ACCESS_KEY ?? "",
    AWS_REGION: env.AWS_REGION ?? "us-east-1",
    AWS_ENDPOINT_URL_S3: endpoint,
    S3_FORCE_PATH_STYLE: "1",
    SLIVINGDOC_STORE: `s3://${testBucket}/${prefix}`,
    SLIVINGDOC_PRIVATE_ROOT: join(root, privateRoot),
  });
  const freshPrefix = (name: string) => {
    const prefix = `slivingdoc-test/doctor-${runId}-${name}`;
    prefixes.push(`${prefix}/`);
    return prefix;
  };
  /** Every key under `prefix` with its ETag and size (fixture.ts snapshotStore). */
  async function keysUnder(prefix: string): Promise<string> {
    const store = testS3Store(`${prefix}/`);
    try {
      return await snapshotStore(store);
    } finally {
      await store.close();
    }
  }

  test("Ceph RGW: a writer, the conditions proved, every number measured; the notebook's keys and the probe's record untouched, nothing left", async () => {
    const prefix = freshPrefix("rgw");
    const vars = s3Vars(prefix, "rgw-private");
    const nb = join(root, "rgw-nb");
    await ok(vars, ["pull", nb]);
    writeFileSync(join(nb, "plan.md"), "goal: ship\n");
    await ok(vars, ["commit", nb, "-m", "plan"]);
    const keys = await keysUnder(prefix);
    const privateRoot = snapshot(join(root, "rgw-private"));
    expect(privateRoot.some((f) => f.startsWith("probes/"))).toBe(true);

    const r = await ok(vars, ["doctor", "--json"]);
    const report = JSON.parse(r.stdout) as DoctorReport;
    expect(report).toMatchObject({
      verdict: "ok",
      access: "writer",
      kind: "s3",
      permissions: { read: "allowed", list: "allowed", write: "allowed", delete: "allowed" },
      conditionalWrites: { proved: true },
      listAfterWrite: { rounds: 5, missed: 0 },
      stopped: null,
      leftovers: 0,
      problems: [],
      recommended: { commitRetries: 30, deadlineMs: 60_000, asConfigured: true },
    });
    for (const kind of ["get", "put", "conditionalPut"] as const) expect(report.latency[kind]).toMatchObject({ samples: 20 });
    expect(report.conditionalWritesPerSecond!).toBeGreaterThan(0);
    // The server runs on this machine: the skew found holds zero within its uncertainty.
    expect(Math.abs(report.clockSkew!.offsetMs)).toBeLessThanOrEqual(report.clockSkew!.uncertaintyMs + 50);

    const human = await ok(vars, ["doctor"]);
    expect(human.stdout).toStartWith("doctor: the S3 store is ready for a notebook");
    // Nothing of the configuration is printed: not the bucket, the prefix, the endpoint or a key.
    for (const secret of [testBucket!, prefix, testEndpoint!, env.AWS_ACCESS_KEY_ID!, env.AWS_SECRET_ACCESS_KEY!]) {
      expect(r.stdout + human.stdout).not.toContain(secret);
    }
    expect(await keysUnder(prefix)).toEqual(keys);
    expect(snapshot(join(root, "rgw-private"))).toEqual(privateRoot);
  }, 60_000);

  test("a doctor before any pull writes no probe record: the next start still probes", async () => {
    const vars = s3Vars(freshPrefix("first"), "first-private");
    await ok(vars, ["doctor", "--json", "--samples", "3"]);
    expect(snapshot(join(root, "first-private"))).toEqual([]);
    expect(await keysUnder(vars.SLIVINGDOC_STORE.slice(`s3://${testBucket}/`.length))).toBe("");
  }, 30_000);

  test("an endpoint that stops answering: the verdict within --deadline, exit 2", async () => {
    const proxy = await startTcpProxy(testEndpoint!);
    try {
      const vars = { ...s3Vars(freshPrefix("hung"), "hung-private", proxy.url), SLIVINGDOC_DEADLINE: "3s" };
      proxy.blackHole();
      const r = await run(vars, ["doctor", "--json"], 15_000);
      expect(r.stillRunning).toBe(false);
      // The deadline counts from the start of the process; its runtime's own start comes before that.
      expect(r.ms).toBeLessThan(3_000 + 2_000);
      expect(r.code).toBe(EXIT_CODES.STARTUP);
      const report = JSON.parse(r.stdout) as DoctorReport;
      expect(report).toMatchObject({ verdict: "unusable", access: "unknown", stopped: "the store did not answer within the call deadline (3 s; --deadline); check --endpoint (or AWS_ENDPOINT_URL_S3) and the network; a store this slow needs a longer --deadline" });
      expect(r.stderr).toBe("");
    } finally {
      await proxy.close();
    }
  }, 30_000);
}

test("s3rver, which ignores If-None-Match and If-Match: a clear no, exit 2, and nothing left in its bucket", async () => {
  const server = await startS3rver();
  try {
    const vars = {
      AWS_ACCESS_KEY_ID: S3RVER_KEY,
      AWS_SECRET_ACCESS_KEY: S3RVER_KEY,
      AWS_REGION: "us-east-1",
      AWS_ENDPOINT_URL_S3: server.url,
      S3_FORCE_PATH_STYLE: "1",
      SLIVINGDOC_STORE: `s3://${server.bucket}/team`,
      SLIVINGDOC_PRIVATE_ROOT: join(root, "s3rver-private"),
    };
    const r = await run(vars, ["doctor", "--json"]);
    expect(r.code).toBe(EXIT_CODES.STARTUP);
    const report = JSON.parse(r.stdout) as DoctorReport;
    expect(report).toMatchObject({ verdict: "unusable", access: "writer", conditionalWrites: { proved: false }, leftovers: 0 });
    expect((report.conditionalWrites as { cause: string }).cause).toContain("ignored If-None-Match");
    expect(report.latency.put).toBeNull();
    const human = await run(vars, ["doctor"]);
    expect(human.code).toBe(EXIT_CODES.STARTUP);
    expect(human.stdout).toStartWith("doctor: the S3 store is not usable as configured");
    expect(human.stdout).toContain("conditional writes    NOT ENFORCED: the store ignored If-None-Match");
    // The bucket is empty again.
    const { S3Client, ListObjectsV2Command } = await import("@aws-sdk/client-s3");
    const client = new S3Client({ endpoint: server.url, region: "us-east-1", forcePathStyle: true, credentials: { accessKeyId: S3RVER_KEY, secretAccessKey: S3RVER_KEY } });
    expect((await client.send(new ListObjectsV2Command({ Bucket: server.bucket }))).Contents ?? []).toEqual([]);
    client.destroy();
  } finally {
    await server.close();
  }
}, 120_000);
