/**
 * docs/s3.md's two policies, proven on Ceph RGW: a bucket of its own, the
 * writer's and the reader's policies from the doc applied as a bucket
 * policy naming two users who own nothing (test/support/ceph-rgw.sh makes
 * them), and the binary run with each user's credentials. The writer does
 * everything; the reader pulls, reads the history and exports, and its
 * commit and serve are refused at start-up, naming AccessDenied, with
 * nothing changed in the store.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { CreateBucketCommand, DeleteBucketCommand, DeleteObjectCommand, ListObjectsV2Command, PutBucketPolicyCommand, S3Client } from "@aws-sdk/client-s3";
import { EXIT_CODES } from "../../src/contract/tokens.ts";
import { BINARY, requireBinary } from "../support/mcp.ts";
import { startTcpProxy } from "../support/tcp-proxy.ts";
import { s3ServerMissing, testBucket, testEndpoint } from "../support/s3-test-store.ts";

const env = process.env;
const users = { writer: env.SLIVINGDOC_TEST_S3_WRITER, reader: env.SLIVINGDOC_TEST_S3_READER };
if (testBucket && (!users.writer || !users.reader)) {
  throw new Error("SLIVINGDOC_TEST_S3_WRITER and _READER are not set: start the S3 server with test/support/ceph-rgw.sh, which makes the two users");
}
// No S3 server configured is a failure, not a skip: CI runs every S3 test.
const s3Test = s3ServerMissing() ? () => {} : test;

const root = mkdtempSync(join(tmpdir(), "slivingdoc-least-"));
const bucket = `slivingdoc-lp-${Math.random().toString(16).slice(2, 10)}`;
const PREFIX = "team/notes";
const admin = new S3Client({ endpoint: testEndpoint, region: env.AWS_REGION ?? "us-east-1", forcePathStyle: true });

/** A fenced JSON block of docs/s3.md, by its tag, with BUCKET and PREFIX filled in. */
function docPolicy(tag: string): { Version: string; Statement: Array<Record<string, unknown>> } {
  const doc = readFileSync(join(import.meta.dir, "../../docs/s3.md"), "utf8");
  const block = new RegExp(`^\`\`\`json ${tag}\\n([\\s\\S]*?)^\`\`\`$`, "m").exec(doc)![1]!;
  return JSON.parse(block.replaceAll("BUCKET", bucket).replaceAll("PREFIX", PREFIX));
}

beforeAll(async () => {
  if (!testBucket) return;
  await admin.send(new CreateBucketCommand({ Bucket: bucket }));
  // An identity policy, given to a user by naming them in a bucket policy (RGW has no IAM users' policies).
  const statements = (["writer", "reader"] as const).flatMap((role) =>
    docPolicy(`${role}-policy`).Statement.map((s) => ({ ...s, Sid: `${role}${s.Sid}`, Principal: { AWS: [`arn:aws:iam:::user/slivingdoc-${role}`] } })),
  );
  await admin.send(new PutBucketPolicyCommand({ Bucket: bucket, Policy: JSON.stringify({ Version: "2012-10-17", Statement: statements }) }));
});

afterAll(async () => {
  rmSync(root, { recursive: true, force: true });
  if (!testBucket) return;
  for (;;) {
    const listed = await admin.send(new ListObjectsV2Command({ Bucket: bucket }));
    for (const o of listed.Contents ?? []) await admin.send(new DeleteObjectCommand({ Bucket: bucket, Key: o.Key! }));
    if (!listed.IsTruncated) break;
  }
  await admin.send(new DeleteBucketCommand({ Bucket: bucket }));
  admin.destroy();
});

/** The binary as `role`, with its own home and private state. */
function as(role: "writer" | "reader", ...args: string[]): Promise<{ stdout: string; stderr: string; code: number }> {
  return through(testEndpoint!, role, "", ...args);
}

/** The same, through `endpoint`, with a private state of its own (`state`: a suffix; "" is the role's usual one). */
async function through(endpoint: string, role: "writer" | "reader", state: string, ...args: string[]): Promise<{ stdout: string; stderr: string; code: number }> {
  const [id, secret] = users[role]!.split(":");
  const p = Bun.spawn([BINARY, ...args], {
    cwd: root,
    env: {
      PATH: env.PATH ?? "/usr/bin:/bin",
      HOME: join(root, `${role}-home`),
      XDG_STATE_HOME: join(root, `${role}-state${state}`),
      AWS_ACCESS_KEY_ID: id!,
      AWS_SECRET_ACCESS_KEY: secret!,
      AWS_REGION: env.AWS_REGION ?? "us-east-1",
      AWS_ENDPOINT_URL_S3: endpoint,
      S3_FORCE_PATH_STYLE: "1",
      SLIVINGDOC_STORE: `s3://${bucket}/${PREFIX}`,
    },
    stdin: "pipe",
    stdout: "pipe",
    stderr: "pipe",
  });
  p.stdin.end();
  const [stdout, stderr, code] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited]);
  return { stdout, stderr, code };
}

async function ok(role: "writer" | "reader", ...args: string[]) {
  const r = await as(role, ...args);
  expect({ role, args: args.join(" "), code: r.code, stderr: r.code === 0 ? "" : r.stderr }).toEqual({ role, args: args.join(" "), code: 0, stderr: "" });
  return r;
}

async function storeKeys(): Promise<string[]> {
  const listed = await admin.send(new ListObjectsV2Command({ Bucket: bucket }));
  return (listed.Contents ?? []).map((o) => `${o.Key} ${o.ETag}`).sort();
}

s3Test("the writer's policy is enough for every command: pull, commit, gc, log, export", async () => {
  requireBinary();
  const nb = join(root, "writer-nb");
  await ok("writer", "pull", nb);
  writeFileSync(join(nb, "plan.md"), "goal: ship\n");
  await ok("writer", "commit", nb, "-m", "plan");
  writeFileSync(join(nb, "plan.md"), "goal: ship\nstatus: review\n");
  await ok("writer", "commit", nb, "-m", "review");
  await ok("writer", "gc");
  expect((await ok("writer", "log")).stdout).toContain("generation 2 · ");
  await ok("writer", "export", join(root, "writer-export.git"));
  expect((await ok("writer", "generation")).stdout).toBe("generation 2\n");
});

s3Test("the reader's policy pulls, reads the history and exports; its commit and serve are refused naming AccessDenied, and nothing changes", async () => {
  requireBinary();
  const nb = join(root, "reader-nb");
  await ok("reader", "pull", nb);
  expect(readFileSync(join(nb, "plan.md"), "utf8")).toBe("goal: ship\nstatus: review\n");
  expect((await ok("reader", "log")).stdout).toContain("generation 2 · ");
  expect((await ok("reader", "show", "2")).stdout).toContain("+status: review");
  await ok("reader", "export", join(root, "reader-export.git"));

  const before = await storeKeys();
  writeFileSync(join(nb, "plan.md"), "goal: ship\nstatus: done\n");
  for (const args of [["commit", nb, "-m", "done"], ["serve"]]) {
    const refused = await as("reader", ...args);
    expect({ args: args[0], code: refused.code }).toEqual({ args: args[0], code: EXIT_CODES.STARTUP });
    expect(refused.stderr).toContain("INCOMPATIBLE_STORE");
    expect(refused.stderr).toContain("AccessDenied");
    expect(refused.stderr).toContain("may read the notebook but not write it");
  }
  expect(await storeKeys()).toEqual(before);
  expect((await ok("writer", "generation")).stdout).toBe("generation 2\n");
});

s3Test("doctor tells the two apart: the writer's policy is a writer, the reader's a reader, and neither run changes the store", async () => {
  requireBinary();
  const before = await storeKeys();
  const writer = JSON.parse((await ok("writer", "doctor", "--json", "--samples", "3")).stdout);
  expect(writer).toMatchObject({
    verdict: "ok",
    access: "writer",
    permissions: { read: "allowed", list: "allowed", write: "allowed", delete: "allowed" },
    conditionalWrites: { proved: true },
    leftovers: 0,
  });
  // A reader is a working configuration for reading: a warning that says what it cannot do, exit 0.
  const reader = JSON.parse((await ok("reader", "doctor", "--json", "--samples", "3")).stdout);
  expect(reader).toMatchObject({
    verdict: "warnings",
    access: "reader",
    permissions: { read: "allowed", list: "allowed", write: "denied", delete: "denied" },
    conditionalWrites: null,
    recommended: null,
    leftovers: 0,
  });
  expect(reader.problems).toHaveLength(1);
  expect(reader.latency.get.samples).toBe(3);
  expect(reader.problems[0].text).toContain("may read the notebook but not write it");
  const human = await ok("reader", "doctor", "--samples", "3");
  expect(human.stdout).toContain("access                a reader (read yes, list yes, write DENIED, delete DENIED)");
  expect(await storeKeys()).toEqual(before);
}, 60_000);

s3Test("a reader's probe is remembered: the next command that only reads sends its own requests alone, and a commit is still refused", async () => {
  requireBinary();
  const proxy = await startTcpProxy(testEndpoint!);
  try {
    const requests = async (...args: string[]) => {
      proxy.resetCounts();
      const r = await through(proxy.url, "reader", "-remembered", ...args);
      expect({ args: args.join(" "), code: r.code }).toEqual({ args: args.join(" "), code: 0 });
      return proxy.counts().requests;
    };
    const first = await requests("generation");
    const second = await requests("generation");
    // The probe's refused write and its read and listing, once; then `current` alone.
    expect([first, second]).toEqual([4, 1]);
    const commit = await through(proxy.url, "reader", "-remembered", "commit", join(root, "reader-nb"), "-m", "no");
    expect(commit.code).toBe(EXIT_CODES.STARTUP);
    expect(commit.stderr).toContain("may read the notebook but not write it");
  } finally {
    await proxy.close();
  }
}, 60_000);
