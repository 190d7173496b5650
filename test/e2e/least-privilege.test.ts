/**
 * docs/s3.md's two policies, proven on Ceph RGW: a bucket of its own, the
 * writer's and the reader's policies from the doc applied as a bucket
 * policy naming two users who own nothing (test/support/ceph-rgw.sh makes
 * them), and the binary run with each user's credentials. The writer does
 * everything; the reader pulls, reads the history and exports, and its
 * commit and serve are refused at start-up, naming AccessDenied, with
 * nothing changed in the store — also when it shares its private root with
 * the writer, whose passed probe is not the reader's. And a writer whose
 * rights are taken away while its server runs gets the store's refusal
 * named in the call's answer, and is refused at the next start.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { CreateBucketCommand, DeleteBucketCommand, DeleteObjectCommand, ListObjectsV2Command, PutBucketPolicyCommand, S3Client } from "@aws-sdk/client-s3";
import { EXIT_CODES } from "../../src/contract/tokens.ts";
import { BINARY, requireBinary } from "../support/mcp.ts";
import { spawnServe } from "../support/raw-mcp.ts";
import { startWeb } from "../support/web.ts";
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

/** A fenced JSON block of docs/s3.md, by its tag, with BUCKET (`name`) and PREFIX filled in. */
function docPolicy(tag: string, name = bucket): { Version: string; Statement: Array<Record<string, unknown>> } {
  const doc = readFileSync(join(import.meta.dir, "../../docs/s3.md"), "utf8");
  const block = new RegExp(`^\`\`\`json ${tag}\\n([\\s\\S]*?)^\`\`\`$`, "m").exec(doc)![1]!;
  return JSON.parse(block.replaceAll("BUCKET", name).replaceAll("PREFIX", PREFIX));
}

type Role = "writer" | "reader";

/**
 * Bucket `name`'s policy: each user given the doc's policy `grants` names
 * for it (an identity policy, given to a user by naming them in a bucket
 * policy: RGW has no IAM users' policies).
 */
async function grant(name: string, grants: Record<Role, Role>): Promise<void> {
  const statements = (["writer", "reader"] as const).flatMap((user) =>
    docPolicy(`${grants[user]}-policy`, name).Statement.map((s) => ({ ...s, Sid: `${user}${s.Sid}`, Principal: { AWS: [`arn:aws:iam:::user/slivingdoc-${user}`] } })),
  );
  await admin.send(new PutBucketPolicyCommand({ Bucket: name, Policy: JSON.stringify({ Version: "2012-10-17", Statement: statements }) }));
}

/** Buckets made here, removed at the end. */
const buckets: string[] = [];

async function makeBucket(name: string): Promise<void> {
  await admin.send(new CreateBucketCommand({ Bucket: name }));
  buckets.push(name);
  await grant(name, { writer: "writer", reader: "reader" });
}

beforeAll(async () => {
  if (!testBucket) return;
  await makeBucket(bucket);
});

afterAll(async () => {
  rmSync(root, { recursive: true, force: true });
  if (!testBucket) return;
  for (const name of buckets) {
    for (;;) {
      const listed = await admin.send(new ListObjectsV2Command({ Bucket: name }));
      for (const o of listed.Contents ?? []) await admin.send(new DeleteObjectCommand({ Bucket: name, Key: o.Key! }));
      if (!listed.IsTruncated) break;
    }
    await admin.send(new DeleteBucketCommand({ Bucket: name }));
  }
  admin.destroy();
});

/** The binary as `role`, with its own home and private state. */
function as(role: "writer" | "reader", ...args: string[]): Promise<{ stdout: string; stderr: string; code: number }> {
  return through(testEndpoint!, role, "", ...args);
}

/** `role`'s environment: its credentials, a home of its own, the private state under `stateHome`, the store in bucket `name`. */
function roleEnv(role: Role, stateHome: string, endpoint = testEndpoint!, name = bucket): Record<string, string> {
  const [id, secret] = users[role]!.split(":");
  return {
    PATH: env.PATH ?? "/usr/bin:/bin",
    HOME: join(root, `${role}-home`),
    TMPDIR: tmpdir(),
    XDG_STATE_HOME: stateHome,
    AWS_ACCESS_KEY_ID: id!,
    AWS_SECRET_ACCESS_KEY: secret!,
    AWS_REGION: env.AWS_REGION ?? "us-east-1",
    AWS_ENDPOINT_URL_S3: endpoint,
    S3_FORCE_PATH_STYLE: "1",
    SLIVINGDOC_STORE: `s3://${name}/${PREFIX}`,
  };
}

/** The same, through `endpoint`, with a private state of its own (`state`: a suffix; "" is the role's usual one). */
function through(endpoint: string, role: "writer" | "reader", state: string, ...args: string[]): Promise<{ stdout: string; stderr: string; code: number }> {
  return run(roleEnv(role, join(root, `${role}-state${state}`), endpoint), ...args);
}

/** The binary with `e`, stdin closed at once. */
async function run(e: Record<string, string>, ...args: string[]): Promise<{ stdout: string; stderr: string; code: number }> {
  const p = Bun.spawn([BINARY, ...args], { cwd: root, env: e, stdin: "pipe", stdout: "pipe", stderr: "pipe" });
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

s3Test("the reader's policy serves slivingdoc web: its state, log, show, tree, file, blame and agents, and nothing changes", async () => {
  const before = await storeKeys();
  const web = await startWeb(roleEnv("reader", join(root, "reader-state")));
  try {
    const get = async (path: string) => {
      const r = await web.get(path);
      expect({ path, status: r.status }).toEqual({ path, status: 200 });
      return (await r.json()) as any;
    };
    expect(await get("/api/state")).toMatchObject({ notebook: true, generation: 2, error: null });
    expect((await get("/api/log")).entries.map((e: { generation: number }) => e.generation)).toEqual([2, 1]);
    expect((await get("/api/show?generation=2")).patch).toContain("+status: review");
    expect((await get("/api/tree")).files).toEqual([{ path: "plan.md", size: 26 }]);
    expect((await get("/api/file?path=plan.md")).text).toBe("goal: ship\nstatus: review\n");
    expect((await get("/api/blame?path=plan.md")).lines.map((l: { generation: number }) => l.generation)).toEqual([1, 2]);
    expect((await get("/api/agents")).publications.length).toBe(2);
  } finally {
    expect((await web.stop()).code).toBe(EXIT_CODES.OK);
  }
  expect(await storeKeys()).toEqual(before);
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

/** The line a command that writes gets at start from a reader's credentials. */
function expectReaderRefused(r: { stdout: string; stderr: string; code: number }, what: string): void {
  expect({ what, code: r.code, stdout: r.stdout }).toEqual({ what, code: EXIT_CODES.STARTUP, stdout: "" });
  expect(r.stderr).toStartWith("slivingdoc: INCOMPATIBLE_STORE: ");
  expect(r.stderr).toContain("AccessDenied");
  expect(r.stderr).toContain("may read the notebook but not write it");
}

s3Test("a writer and a reader sharing one private root: the writer's passed probe does not serve the reader, whose commit, gc and serve are refused at start", async () => {
  requireBinary();
  const state = join(root, "shared-state");
  const writer = roleEnv("writer", state);
  const reader = roleEnv("reader", state);
  const nb = join(root, "shared-nb");
  expect((await run(writer, "pull", nb)).code).toBe(0);
  writeFileSync(join(nb, "shared.md"), "by the writer\n");
  expect((await run(writer, "commit", nb, "-m", "shared")).code).toBe(0);
  // The record names who passed by a digest, never by the key id.
  const records = readdirSync(join(state, "slivingdoc", "probes"));
  expect(records.length).toBe(1);
  for (const role of ["writer", "reader"] as const) {
    const [id, secret] = users[role]!.split(":");
    for (const file of records) {
      expect(file).not.toContain(id!);
      expect(readFileSync(join(state, "slivingdoc", "probes", file), "utf8")).not.toContain(id!);
      expect(readFileSync(join(state, "slivingdoc", "probes", file), "utf8")).not.toContain(secret!);
    }
  }

  const before = await storeKeys();
  writeFileSync(join(nb, "shared.md"), "by the reader\n");
  expectReaderRefused(await run(reader, "commit", nb, "-m", "no"), "commit");
  expectReaderRefused(await run(reader, "gc"), "gc");
  expectReaderRefused(await run(reader, "serve"), "serve");
  // A reader's pass is remembered beside the writer's, and serves its reads.
  expect((await run(reader, "generation")).code).toBe(0);
  expect(readdirSync(join(state, "slivingdoc", "probes")).length).toBe(2);
  expectReaderRefused(await run(reader, "commit", nb, "-m", "no"), "commit after a read");
  expect(await storeKeys()).toEqual(before);
  // The writer's own pass still serves the writer.
  expect((await run(writer, "commit", nb, "-m", "the writer again")).code).toBe(0);

  // The same keys from a profile are the same caller (the SDK's chain says who, not the environment):
  // the writer's record serves the writer, the reader's commit is refused, and no record is added.
  const profiles = join(root, "credentials");
  writeFileSync(profiles, (["writer", "reader"] as const).map((r) => `[${r}]\naws_access_key_id = ${users[r]!.split(":")[0]}\naws_secret_access_key = ${users[r]!.split(":")[1]}\n`).join(""));
  const byProfile = (role: Role, e: Record<string, string>) => {
    const { AWS_ACCESS_KEY_ID: _id, AWS_SECRET_ACCESS_KEY: _secret, ...rest } = e;
    return { ...rest, AWS_SHARED_CREDENTIALS_FILE: profiles, AWS_CONFIG_FILE: join(root, "no-config"), AWS_PROFILE: role };
  };
  writeFileSync(join(nb, "shared.md"), "by the writer's profile\n");
  const profiled = await run(byProfile("writer", writer), "commit", nb, "-m", "by profile");
  expect({ code: profiled.code, stderr: profiled.stderr }).toEqual({ code: 0, stderr: expect.any(String) });
  expectReaderRefused(await run(byProfile("reader", reader), "commit", nb, "-m", "no"), "commit by profile");
  expect(readdirSync(join(state, "slivingdoc", "probes")).length).toBe(2);
}, 60_000);

s3Test("write access withdrawn while serve runs: the commit answers STORAGE_FAILURE naming AccessDenied, the probe's record goes, and the next start refuses", async () => {
  requireBinary();
  const name = `${bucket}-w`;
  await makeBucket(name);
  const state = join(root, "withdrawn-state");
  const e = roleEnv("writer", state, testEndpoint!, name);
  const ws = join(root, "withdrawn-ws");
  const server = spawnServe(e, ["--workspace-root", ws]);
  try {
    await server.initialize();
    server.callTool(1, "notes_pull", {});
    expect((await server.answer(1)).result?.structuredContent).toMatchObject({ generation: 0 });
    expect(readdirSync(join(state, "slivingdoc", "probes")).length).toBe(1);

    // The writer keeps only a reader's rights.
    await grant(name, { writer: "reader", reader: "reader" });
    writeFileSync(join(ws, "late.md"), "after the policy changed\n");
    server.callTool(2, "notes_commit", { message: "late" });
    const answer = (await server.answer(2)).result;
    expect(answer?.isError).toBe(true);
    expect(answer?.structuredContent).toMatchObject({ code: "STORAGE_FAILURE", retryable: true, action: "RETRY" });
    expect(answer?.structuredContent.message).toContain("The store refused the credentials: access denied (AccessDenied, 403)");
    expect(answer?.structuredContent.message).toContain("Calling again cannot help");
    expect(readdirSync(join(state, "slivingdoc", "probes"))).toEqual([]);
  } finally {
    expect((await server.finish()).code).toBe(0);
  }
  const again = await run(e, "serve");
  expect(again.code).toBe(EXIT_CODES.STARTUP);
  expect(again.stderr).toStartWith("slivingdoc: INCOMPATIBLE_STORE: ");
  expect(again.stderr).toContain("AccessDenied");
}, 60_000);
