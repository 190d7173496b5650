/**
 * The notebook on a real S3 server (Ceph RGW under `npm test`): checkouts in
 * separate processes committing at once, a multi-process race in which every
 * acknowledged edit must survive, lost and dropped manifest writes around the
 * real S3 store, and C git accepting every pack that lands on S3.
 *
 * Each test works under its own random prefix of the test bucket, removed
 * afterwards. Without SLIVINGDOC_TEST_S3_BUCKET this file FAILS — it never
 * skips (see test/store/s3.test.ts and docs/s3.md).
 */
import { afterAll, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { commit } from "../../src/engine/commit.ts";
import { MANIFEST_KEY, parseManifest } from "../../src/engine/publish/manifest.ts";
import { pull } from "../../src/engine/pull.ts";
import type { StoreOperation } from "../../src/store/object-store.ts";
import { git, withPacksInGit } from "../support/cgit.ts";
import { faultyStore } from "../support/faulty-store.ts";
import { call, connect } from "../support/mcp.ts";
import { expectRaceSurvived, raceSeed, runRacers } from "../support/race.ts";
import { makeWorld, read, seedNotebookByCli, write } from "../support/fixture.ts";
import { removePrefixes, testBucket, testEndpoint, testS3Store } from "../support/s3-test-store.ts";

const env = process.env;

const root = mkdtempSync(join(tmpdir(), "slivingdoc-s3-e2e-"));
const main = join(import.meta.dir, "../../src/main.ts");
const runId = crypto.randomUUID().slice(0, 8);
const usedPrefixes: string[] = [];

/** A prefix of the test bucket nobody else uses (without the trailing "/"). */
function freshPrefix(name: string): string {
  const prefix = `slivingdoc-test/e2e-${runId}-${name}`;
  usedPrefixes.push(`${prefix}/`);
  return prefix;
}

afterAll(async () => {
  // Leave the bucket as we found it (matters on a shared MinIO/AWS bucket).
  await removePrefixes(usedPrefixes);
  rmSync(root, { recursive: true, force: true });
});

/**
 * The CLI's environment for one checkout: the store on S3 from the
 * SLIVINGDOC_STORE URL (the AWS_* variables of the test server are inherited:
 * credentials only ever come from the SDK's default chain), and a private
 * root of its own — agents on different hosts share nothing but the bucket.
 */
function cliEnv(prefix: string, privateRoot: string): Record<string, string> {
  return {
    ...(env as Record<string, string>),
    SLIVINGDOC_STORE: `s3://${testBucket}/${prefix}`,
    SLIVINGDOC_PRIVATE_ROOT: privateRoot,
  };
}

async function cli(e: Record<string, string>, ...args: string[]) {
  const p = Bun.spawn([process.execPath, main, ...args], { env: e, stdout: "pipe", stderr: "pipe" });
  const [stdout, stderr, code] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited]);
  return { stdout, stderr, code };
}

/** Exit code 0, or fail showing what the process said. */
function expectOk(r: { stdout: string; stderr: string; code: number }): void {
  if (r.code !== 0) console.error(`exit ${r.code}\n${r.stdout}\n${r.stderr}`);
  expect(r.code).toBe(0);
}

/**
 * Every pack under this prefix — the accepted ones and the orphans of lost
 * races alike — is a real git pack that C git verifies, and the accepted
 * history, one commit per generation, passes `git fsck --strict`. Returns
 * how many packs.
 */
async function expectPacksVerify(prefix: string): Promise<number> {
  const store = testS3Store(prefix);
  try {
    return await withPacksInGit(store, ({ repo, packs, manifest }) => {
      expect(git(repo, "rev-list", "--count", "main").out.trim()).toBe(String(manifest.generation));
      return packs;
    });
  } finally {
    await store.close();
  }
}

if (!testBucket) {
  test("S3 test server is configured", () => {
    throw new Error(
      "SLIVINGDOC_TEST_S3_BUCKET is not set, so the S3 notebook tests cannot run. Run `npm test` (it starts a " +
        "throwaway Ceph RGW), or start one with `bash test/support/ceph-rgw.sh start DIR` and load it with " +
        "`set -a; . DIR/env; set +a` (see docs/s3.md).",
    );
  });
} else {
  test("two checkouts in two processes on one bucket commit at the same moment: both edits land, and C git accepts the packs", async () => {
    const prefix = freshPrefix("pair");
    const dir = join(root, "pair");
    const ea = cliEnv(prefix, join(dir, "private-a"));
    const eb = cliEnv(prefix, join(dir, "private-b"));
    const a = join(dir, "a");
    const b = join(dir, "b");
    await seedNotebookByCli((args) => cli(ea, ...args), a, { "shared.md": "top\n\n\n\nmiddle\n\n\n\nbottom\n" });
    expectOk(await cli(eb, "pull", b));
    expect(read(b, "shared.md")).toBe("top\n\n\n\nmiddle\n\n\n\nbottom\n");

    write(a, "shared.md", "top by a\n\n\n\nmiddle\n\n\n\nbottom\n");
    write(a, "a.md", "a\n");
    write(b, "shared.md", "top\n\n\n\nmiddle\n\n\n\nbottom by b\n");
    write(b, "b.md", "b\n");
    const [ra, rb] = await Promise.all([cli(ea, "commit", "--json", "-m", "a", a), cli(eb, "commit", "--json", "-m", "b", b)]);
    expectOk(ra);
    expectOk(rb);
    // Both acknowledged, each with its own generation after the seed's.
    const generations = [JSON.parse(ra.stdout).generation, JSON.parse(rb.stdout).generation].sort();
    expect(generations).toEqual([2, 3]);

    const c = join(dir, "c");
    const pulled = await cli(cliEnv(prefix, join(dir, "private-c")), "pull", "--json", c);
    expectOk(pulled);
    expect(JSON.parse(pulled.stdout).generation).toBe(3);
    expect(readFileSync(join(c, "shared.md"), "utf8")).toBe("top by a\n\n\n\nmiddle\n\n\n\nbottom by b\n");
    expect(readFileSync(join(c, "a.md"), "utf8")).toBe("a\n");
    expect(readFileSync(join(c, "b.md"), "utf8")).toBe("b\n");
    expect(await expectPacksVerify(prefix)).toBeGreaterThanOrEqual(3);
  }, 120_000);

  test("4 processes × 5 commits racing on one S3 notebook: every acknowledged edit is in the final state", async () => {
    const prefix = freshPrefix("race");
    const dir = join(root, "race");
    const racers = 4;
    const commits = 5;
    const seed = join(dir, "seed");
    const seedEnv = cliEnv(prefix, join(dir, "private-seed"));
    await seedNotebookByCli((args) => cli(seedEnv, ...args), seed, { "shared.md": raceSeed(racers) });

    // race-worker.ts reads the store from the environment (resolveConfig),
    // exactly as the CLI does.
    const acked = await runRacers(racers, commits, (i) => join(dir, `w${i}`), (i) => cliEnv(prefix, join(dir, `private-w${i}`)));
    expect(acked.length).toBe(racers * commits);
    // Every acknowledged commit got its own generation.
    expect(new Set(acked.map((a) => a.generation)).size).toBe(racers * commits);

    const check = join(dir, "check");
    const pulled = await cli(cliEnv(prefix, join(dir, "private-check")), "pull", "--json", check);
    expectOk(pulled);
    expect(JSON.parse(pulled.stdout).generation).toBe(1 + racers * commits);
    expectRaceSurvived(check, racers, commits);
    // Lost races leave orphan packs behind; those must be valid git too.
    expect(await expectPacksVerify(prefix)).toBeGreaterThanOrEqual(1 + racers * commits);
  }, 240_000);

  test("on the real S3 store: a manifest write that landed but lost its response is OK with the right generation; one dropped before it landed is retried and lands once", async () => {
    const prefix = freshPrefix("faults");
    const inner = testS3Store(prefix);
    // One fault, on the next write of `current` of the kind the test arms.
    let armed: { operation: StoreOperation; fault: "lose-response" | "drop-request" } | null = null;
    const manifestWrites: StoreOperation[] = [];
    const store = faultyStore(inner, (operation, key) => {
      if (key !== MANIFEST_KEY || (operation !== "putIfAbsent" && operation !== "putIfMatch")) return null;
      manifestWrites.push(operation);
      if (armed === null || armed.operation !== operation) return null;
      const fault = armed.fault;
      armed = null;
      return fault;
    });
    const world = makeWorld(store, `s3://${testBucket}/${prefix}/@${testEndpoint ?? "aws"}`);
    const stored = async () => parseManifest((await inner.get(MANIFEST_KEY))!.body);
    try {
      const a = world.checkout("a");
      const b = world.checkout("b");
      await pull(world.deps(), { path: a });

      // The first publication (create-only write of `current`): it lands, the answer is lost.
      write(a, "one.md", "one\n");
      armed = { operation: "putIfAbsent", fault: "lose-response" };
      const first = await commit(world.deps(), { path: a, message: "one" });
      expect(store.injected).toBe(1);
      expect(first.generation).toBe(1);
      expect((await stored()).generation).toBe(1);
      expect(manifestWrites).toEqual(["putIfAbsent"]);

      // A compare-and-swap that lands, and whose answer is lost: proved by reading back, not retried.
      manifestWrites.length = 0;
      write(a, "two.md", "two\n");
      armed = { operation: "putIfMatch", fault: "lose-response" };
      const second = await commit(world.deps(), { path: a, message: "two" });
      expect(store.injected).toBe(2);
      expect(second.generation).toBe(2);
      expect(manifestWrites).toEqual(["putIfMatch"]);
      const afterSecond = await stored();
      expect(afterSecond.generation).toBe(2);
      expect(afterSecond.packs.length).toBe(2);

      // A compare-and-swap dropped before it landed (a timeout: outcome
      // unknown): the read-back shows it did not land, the commit tries
      // again and lands exactly once — one new generation, one new pack.
      manifestWrites.length = 0;
      write(a, "three.md", "three\n");
      armed = { operation: "putIfMatch", fault: "drop-request" };
      const third = await commit(world.deps(), { path: a, message: "three" });
      expect(store.injected).toBe(3);
      expect(third.generation).toBe(3);
      expect(manifestWrites).toEqual(["putIfMatch", "putIfMatch"]);
      const afterThird = await stored();
      expect(afterThird.generation).toBe(3);
      expect(afterThird.packs.length).toBe(3);
      expect(afterThird.packs.slice(0, 2)).toEqual(afterSecond.packs);

      // Another checkout sees exactly the three commits.
      const pulled = await pull(world.deps(), { path: b });
      expect(pulled.generation).toBe(3);
      expect([read(b, "one.md"), read(b, "two.md"), read(b, "three.md")]).toEqual(["one\n", "two\n", "three\n"]);
      // The retry after the dropped write rebuilds its commit; when the clock
      // moved on to the next second in between, that is a new pack and the
      // first one stays behind as an orphan (never named by a manifest).
      const packs = await expectPacksVerify(prefix);
      expect(packs).toBeGreaterThanOrEqual(3);
      expect(packs).toBeLessThanOrEqual(4);
    } finally {
      await world.close();
    }
  }, 120_000);

  test("start-up probe: an incompatible or unreachable store is one redacted INCOMPATIBLE_STORE line and a non-zero exit", async () => {
    const privateRoot = join(root, "probe-refusal");
    const cases: Array<[Record<string, string>, RegExp]> = [
      [{ SLIVINGDOC_STORE: `s3://no-such-bucket-${runId}/x` }, /the bucket does not exist/],
      [{ SLIVINGDOC_STORE: `s3://${testBucket}/p`, AWS_SECRET_ACCESS_KEY: "wrong-secret-wrong-secret-wrong-secret" }, /credentials were refused|access denied/],
    ];
    for (const [extra, pattern] of cases) {
      for (const args of [["pull", join(root, "never")], ["serve"]]) {
        const r = await cli({ ...(env as Record<string, string>), SLIVINGDOC_PRIVATE_ROOT: privateRoot, ...extra }, ...args);
        expect(r.code).toBe(2);
        expect(r.stdout).toBe("");
        const lines = r.stderr.trim().split("\n");
        expect(lines.length).toBe(1);
        expect(lines[0]).toStartWith("slivingdoc: INCOMPATIBLE_STORE: the S3 compatibility probe failed: ");
        expect(lines[0]).toMatch(pattern);
        for (const secret of [env.AWS_ACCESS_KEY_ID!, env.AWS_SECRET_ACCESS_KEY!, ...(extra.AWS_SECRET_ACCESS_KEY !== undefined ? [extra.AWS_SECRET_ACCESS_KEY] : []), "probe/"]) {
          expect(lines[0]).not.toContain(secret);
        }
        expect(lines[0]).not.toMatch(/[0-9a-f]{16}/);
      }
    }
  });

  test("start-up probe: a passed probe is remembered per store under the private root, and a new store is probed again", async () => {
    const privateRoot = join(root, "probe-cache");
    const prefix = freshPrefix("probe-cache");
    const first = await cli(cliEnv(prefix, privateRoot), "pull", join(root, "probe-cache-a"));
    expectOk(first);
    const { readdirSync } = await import("node:fs");
    const markers = readdirSync(join(privateRoot, "probes"));
    expect(markers.length).toBe(1);
    // The probe cleaned up after itself: only the notebook's own keys remain.
    const store = testS3Store(prefix);
    expect((await store.list("probe/")).length).toBe(0);
    await store.close();
    expectOk(await cli(cliEnv(prefix, privateRoot), "pull", join(root, "probe-cache-a")));
    expect(readdirSync(join(privateRoot, "probes"))).toEqual(markers);
    expectOk(await cli(cliEnv(freshPrefix("probe-cache-2"), privateRoot), "pull", join(root, "probe-cache-b")));
    expect(readdirSync(join(privateRoot, "probes")).length).toBe(2);
  });

  test("MCP on S3: two servers through the SDK client pull, commit, conflict, resolve and commit", async () => {
    const prefix = freshPrefix("mcp");
    const e = { ...cliEnv(prefix, join(root, "mcp-private")), TMPDIR: join(root, "mcp-tmp") };
    mkdirSync(e.TMPDIR, { recursive: true });
    const a = await connect(e);
    const b = await connect(e);
    try {
      const da = (await call(a, "notes_pull")).data.path as string;
      const db = (await call(b, "notes_pull")).data.path as string;
      writeFileSync(join(da, "log.md"), "one\ntwo\n");
      expect((await call(a, "notes_commit", { message: "a" })).data.generation).toBe(1);
      expect((await call(b, "notes_pull")).data.files).toEqual([{ path: "log.md", insertions: 2, deletions: 0 }]);
      writeFileSync(join(da, "log.md"), "one\ntwo by a\n");
      writeFileSync(join(db, "log.md"), "one\ntwo by b\n");
      expect((await call(a, "notes_commit", { message: "a2" })).isError).toBe(false);
      const conflict = await call(b, "notes_commit", { message: "b2" });
      expect(conflict.data).toMatchObject({ code: "CONTENT_CONFLICT", reason: "MERGE_CONFLICT", files: [{ path: "log.md", reason: "TEXT_CONFLICT", ranges: [{ start: 2, end: 6 }] }] });
      writeFileSync(join(db, "log.md"), "one\ntwo by a and b\n");
      expect((await call(b, "notes_commit", { message: "resolved" })).data.generation).toBe(3);
      await call(a, "notes_pull");
      expect(readFileSync(join(da, "log.md"), "utf8")).toBe("one\ntwo by a and b\n");
    } finally {
      await a.close();
      await b.close();
    }
  });
}
