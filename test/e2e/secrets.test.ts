/**
 * Secrets, which no result may carry: credentials, AWS access key ids
 * (AKIA…, ASIA…), secret keys, session tokens, pack keys, probe keys, 40-
 * and 64-hex ids and URL user information are injected into failures — as
 * the messages, names and causes of store errors from a faulty wrapper
 * around the real SQLite store, as an exception from inside the engine, and
 * as the content of an invalid manifest — and none may reach a result's
 * structured object or its text item; credentials and access key ids may
 * not reach a log line either (logs may name store keys and local paths,
 * which the operator needs).
 *
 * Then through the built binary on a real S3 server (Ceph RGW under
 * `npm test`): a refused start with wrong, recognisable credentials prints
 * neither the key id nor the secret, and a whole session with the right ones
 * never writes either to stdout or stderr. Without SLIVINGDOC_TEST_S3_BUCKET
 * that part FAILS — it never skips (see test/e2e/s3-notebook.test.ts).
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { errorText, NO_PATH_SETS, successText } from "../../src/contract/results.ts";
import { commit } from "../../src/engine/commit.ts";
import { pull } from "../../src/engine/pull.ts";
import { deadlineIn } from "../../src/store/deadline.ts";
import type { ObjectStore, StoreOperation } from "../../src/store/object-store.ts";
import { createLog } from "../../src/surfaces/log.ts";
import type { OperationContext } from "../../src/surfaces/operation.ts";
import { runOperation } from "../../src/surfaces/run-operation.ts";
import { type Fault, faultyStore } from "../support/faulty-store.ts";
import { makeWorld, seedNotebook, type World, write } from "../support/fixture.ts";
import { spawnServe } from "../support/raw-mcp.ts";
import { removePrefixes, testBucket, testS3Store } from "../support/s3-test-store.ts";

// Recognisable fakes, each shaped like the real thing.
const SECRET_KEY = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYzSECRET0KEY";
const SESSION_TOKEN = "FwoGZXIvYXdzEXAMPLExSESSIONxTOKENx0123456789abcdefABCDEFghijklmnop==";
const KEY_ID = "AKIAZ7QSECRETKEYID42";
const TEMP_KEY_ID = "ASIAQ3TEMPSECRETID77";
const PASSWORD = "hunter2-Pa55word";
const URL_WITH_USER = `https://agent-user:${PASSWORD}@s3.internal.example:9000/notes`;
const HEX64 = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08";
const HEX40 = "0123456789abcdef0123456789abcdef01234567";
const PACK_KEY = `team/notes/packs/${HEX64}.pack`;
const PROBE_KEY = "team/notes/probe/3f2a9c0d1e4b5a69/swap";

/** The secret-laden text an injected failure carries, in the framings real errors use. */
const LEAKY_TEXT = [
  `s3 get: AccessDenied (403) for ${PACK_KEY}; AWSAccessKeyId=${KEY_ID}; Credential=${TEMP_KEY_ID}/20260101/us-east-1/s3/aws4_request`,
  `request to ${URL_WITH_USER}/packs/${HEX64}.pack failed`,
  `aws_secret_access_key = ${SECRET_KEY}`,
  `x-amz-security-token: ${SESSION_TOKEN}`,
  `probe key ${PROBE_KEY}, head ${HEX40}, tree ${HEX40.toUpperCase()}`,
  `{"key":"${PACK_KEY}","etag":"${HEX64}","keyId":"${KEY_ID}"}`,
].join("\n");

/** A cause chain carrying the secrets in messages, names and a plain string. */
function leakyCause(): Error {
  const inner = new Error(`inner: secret ${SECRET_KEY} for ${KEY_ID} via ${URL_WITH_USER}`, { cause: `string cause ${SESSION_TOKEN} ${TEMP_KEY_ID}` });
  inner.name = `CredentialsProviderError(${KEY_ID})`;
  return new Error(`outer: ${LEAKY_TEXT}`, { cause: inner });
}

/** Must never be in a result: every secret-shaped value, and the private root. */
function resultForbidden(privateRoot: string): string[] {
  return [SECRET_KEY, SESSION_TOKEN, KEY_ID, TEMP_KEY_ID, PASSWORD, "agent-user", HEX64, HEX40, HEX40.toUpperCase(), "packs/", "probe/", privateRoot];
}
/** Must never be in a log line: credentials and access key ids (store keys and paths may be). */
const LOG_CREDENTIALS = [SECRET_KEY, SESSION_TOKEN, PASSWORD];
const LOG_KEY_IDS = [KEY_ID, TEMP_KEY_ID];

const found = (text: string, needles: string[]) => needles.filter((n) => text.includes(n));

interface Observed {
  name: string;
  reasons: string[];
  verdict: string;
  result: string;
  text: string;
  log: string;
}

describe("in process: faults that carry secrets", () => {
  let world: World;
  let poisoned: World;
  const observed: Observed[] = [];

  beforeAll(async () => {
    world = makeWorld();
    poisoned = makeWorld();
    const logLines: string[] = [];
    const log = createLog({ write: (t) => logLines.push(t), isTTY: false });
    // One fault at a time, armed by each scenario.
    let armed: ((op: StoreOperation, key: string) => Fault | null) | null = null;
    let throwAt: string | null = null;
    const store = faultyStore(world.store, (op, key) => armed?.(op, key) ?? null, {
      message: () => LEAKY_TEXT,
      cause: () => leakyCause(),
    });
    const ctx = (w: World, s: ObjectStore): OperationContext => ({
      deps: w.deps({
        store: s,
        // Every commit reads `current`, where some of the faults below are aimed.
        guessCurrent: false,
        sleep: async () => {},
        onStage: (stage) => {
          if (stage === throwAt) throw leakyCause();
        },
      }),
      deadline: () => deadlineIn(60_000),
      sets: NO_PATH_SETS,
      paths: { defaultDir: w.checkout("a"), cwd: w.root, home: w.root, workspaceRoot: join(w.root, "ws") },
      log,
      // What a server with these credentials passes (serve.ts: the private root, then runtimeSecrets).
      secrets: [w.privateRoot, SECRET_KEY, SESSION_TOKEN, KEY_ID],
      requireAbsolute: true,
    });

    const run = async (name: string, reasons: string[], tool: "notes_pull" | "notes_commit", args: Record<string, unknown>, w = world, s: ObjectStore = store) => {
      const before = logLines.length;
      const r = await runOperation(ctx(w, s), tool, args);
      observed.push({
        name,
        reasons,
        verdict: r.ok ? "OK" : r.envelope.reason,
        result: JSON.stringify(r.ok ? r.result : r.envelope),
        text: r.ok ? successText(r.result) : errorText(r.envelope),
        log: logLines.slice(before).join(""),
      });
    };

    const a = world.checkout("a");
    await seedNotebook(world.deps(), a, { "seed.md": "seed\n" });

    armed = (op, key) => (op === "get" && key === "current" ? "fail-before" : null);
    await run("manifest read on pull", ["MANIFEST_READ"], "notes_pull", { path: a });
    write(a, "seed.md", "seed, edited\n");
    await run("manifest read on commit", ["MANIFEST_READ"], "notes_commit", { path: a, message: "m" });

    armed = (op, key) => (op === "get" && key.startsWith("packs/") ? "answer-500" : null);
    await run("pack download", ["PACK_DOWNLOAD"], "notes_pull", { path: world.checkout("fresh") });

    armed = (op, key) => (op === "putIfAbsent" && key.startsWith("packs/") ? "fail-before" : null);
    await run("pack upload", ["PACK_UPLOAD"], "notes_commit", { path: a, message: "m" });

    armed = (op, key) => (op === "putIfMatch" && key === "current" ? "fail-before" : null);
    await run("manifest write", ["MANIFEST_WRITE"], "notes_commit", { path: a, message: "m" });

    // The write lands, its answer is lost, and `current` cannot be read back.
    let wrote = false;
    armed = (op, key) => {
      if (op === "putIfMatch" && key === "current") {
        wrote = true;
        return "lose-response";
      }
      return wrote && op === "get" && key === "current" ? "fail-before" : null;
    };
    await run("publication unproven", ["PUBLICATION_UNPROVEN"], "notes_commit", { path: a, message: "m" });
    armed = null;

    // An exception from inside the engine, before and after visible files change.
    write(a, "other.md", "other\n");
    throwAt = "merge";
    await run("engine exception at merge", ["INTERNAL"], "notes_commit", { path: a, message: "m" });
    // Something accepted that A lacks, so the commit has visible files to rewrite.
    const b = world.checkout("b");
    await pull(world.deps(), { path: b });
    write(b, "from-b.md", "b\n");
    await commit(world.deps(), { path: b, message: "b" });
    throwAt = "materialize";
    await run("engine exception at materialize", ["INTERNAL", "LOCAL_MUTATION_FAILED"], "notes_commit", { path: a, message: "m" });
    throwAt = null;

    // A manifest carrying secrets as field names and values, and one that is not even JSON.
    const manifest = JSON.stringify({
      format: 1,
      generation: 1,
      head: HEX40,
      publication: "0".repeat(32),
      packs: [{ key: `packs/${HEX64}.pack`, size: 1, sha256: HEX64 }],
      [KEY_ID]: SECRET_KEY,
      [`${SECRET_KEY}`]: URL_WITH_USER,
      [`url ${URL_WITH_USER}`]: SESSION_TOKEN,
      [TEMP_KEY_ID]: PROBE_KEY,
    });
    await poisoned.store.putIfAbsent("current", new TextEncoder().encode(manifest));
    await run("manifest with secrets", ["MANIFEST_INVALID"], "notes_pull", { path: poisoned.checkout("a") }, poisoned, poisoned.store);
    const raw = (await poisoned.store.get("current"))!;
    await poisoned.store.putIfMatch("current", new TextEncoder().encode(`${SECRET_KEY} ${KEY_ID} ${URL_WITH_USER} not json`), raw.etag);
    await run("manifest that is not JSON", ["MANIFEST_INVALID"], "notes_pull", { path: poisoned.checkout("a") }, poisoned, poisoned.store);
  });

  afterAll(async () => {
    await world?.close();
    await poisoned?.close();
  });

  test("each fault reached the path it aims at, and its cause reached the log", () => {
    expect(observed.map((o) => [o.name, o.reasons.includes(o.verdict) ? "as aimed" : o.verdict])).toEqual(observed.map((o) => [o.name, "as aimed"]));
    // The injected text got as far as the operator's log record (scrubbed or not):
    // otherwise the log assertions below would prove nothing.
    // (The two manifests carry their secrets in the store object, not in a store error.)
    for (const o of observed.filter((o) => !o.reasons.includes("MANIFEST_INVALID"))) {
      expect({ name: o.name, logged: o.log.includes("inner:") }).toEqual({ name: o.name, logged: true });
    }
  });

  test("no result — structured object or text item — carries a credential, key id, pack or probe key, hex id, URL user information or private path", () => {
    const leaks = observed.flatMap((o) => [
      ...found(o.result, resultForbidden(world.privateRoot)).map((s) => `${o.name}: structured object has ${s}`),
      ...found(o.text, resultForbidden(world.privateRoot)).map((s) => `${o.name}: text item has ${s}`),
    ]);
    expect(leaks).toEqual([]);
  });

  test("no log line carries an access key id", () => {
    const leaks = observed.flatMap((o) => found(o.log, LOG_KEY_IDS).map((s) => `${o.name}: log has ${s}`));
    expect(leaks).toEqual([]);
  });

  // Regression: log records were scrubbed by shape only, so a secret key, a
  // session token or a URL password inside a cause reached the log verbatim;
  // the runtime's own credentials are now scrubbed from every record.
  test("no log line carries a credential: secret key, session token, URL password", () => {
    const leaks = observed.flatMap((o) => found(o.log, LOG_CREDENTIALS).map((s) => `${o.name}: log has ${s === SECRET_KEY ? "the secret key" : s === SESSION_TOKEN ? "the session token" : "the URL password"}`));
    expect(leaks).toEqual([]);
  });
});

/**
 * The other side of scrubbing: only the values the product knows are
 * replaced. A caller's own names that look like a pack key, a probe key or
 * an id — a file under `packs/`, a directory `probe`, a file named with 40
 * or 64 hex digits — reach the message, the text item, human output and the
 * log as they are, full stop included (they were "<pack>", "/<probe>/ws" and
 * "<id>", and the full stop after one was swallowed).
 */
describe("through the binary: a caller's names that look like keys or ids pass unchanged", () => {
  const root = mkdtempSync(join(tmpdir(), "slivingdoc-lookalikes-"));
  afterAll(() => rmSync(root, { recursive: true, force: true }));
  const binary = join(import.meta.dir, "../../dist/slivingdoc");
  const local = {
    PATH: process.env.PATH ?? "/usr/bin:/bin",
    HOME: join(root, "home"),
    TMPDIR: root,
    SLIVINGDOC_STORE: `sqlite:${join(root, "store.db")}`,
    SLIVINGDOC_PRIVATE_ROOT: join(root, "private"),
  };
  // A workspace under `probe/` and a 64-hex directory, as the report had it.
  const workspace = join(root, "probe", "paths", HEX64, "ws");
  const names = [`${HEX40}.md`, `packs/${HEX64}.txt`, "packs/x.md", "probe/notes.md"];
  const refusal = `The notebook holds UTF-8 text files only; these are not: ${names.join(", ")}. Delete or replace them, then call again.`;
  const outside = `The path is not at or below the workspace root ${workspace}; address a directory there, or omit path.`;
  const cli = async (...args: string[]) => {
    const p = Bun.spawn([binary, ...args], { env: local, stdout: "pipe", stderr: "pipe" });
    const [stdout, stderr] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited]);
    return { stdout, stderr };
  };

  test("in an error's message, its text item and the CLI's human output", async () => {
    mkdirSync(workspace, { recursive: true });
    expect(JSON.parse((await cli("pull", "--json", workspace)).stdout).code).toBe("OK");
    for (const name of names) {
      mkdirSync(join(workspace, name, ".."), { recursive: true });
      writeFileSync(join(workspace, name), "binary\u0000\n");
    }
    const json = JSON.parse((await cli("commit", "-m", "m", "--json", workspace)).stdout);
    expect({ reason: json.reason, files: json.files.map((f: { path: string }) => f.path), message: json.message }).toEqual({ reason: "INVALID_CONTENT", files: names, message: refusal });
    expect((await cli("commit", "-m", "m", workspace)).stderr).toContain(`\n${refusal}\n`);
    const away = JSON.parse((await cli("pull", "--json", "--workspace-root", workspace, join(root, "elsewhere"))).stdout);
    expect({ reason: away.reason, message: away.message }).toEqual({ reason: "PATH_OUTSIDE_ROOT", message: outside });

    const server = spawnServe(local, ["--workspace-root", workspace]);
    await server.initialize();
    server.send({ jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "notes_commit", arguments: { message: "m" } } });
    const answer = await server.answer(1);
    expect(answer.result!.structuredContent.message).toBe(refusal);
    expect(answer.result!.content[0]!.text.split("\n")[1]).toBe(refusal);
    server.send({ jsonrpc: "2.0", id: 2, method: "tools/call", params: { name: "notes_pull", arguments: { path: join(root, "elsewhere") } } });
    expect((await server.answer(2)).result!.structuredContent.message).toBe(outside);
    const { stderr } = await server.finish();
    // The log names the notebook directory as it is.
    const started = stderr.split("\n").filter((l) => l.includes('"server started"')).map((l) => JSON.parse(l));
    expect(started.map((r) => r.notebook)).toEqual([workspace]);
  }, 60_000);

  // restore's refusal lists the unpublished files in its message only (they are not in `files`),
  // and export's refusal quotes DIR as typed: names the caller gave or owns, exactly ids or not.
  test("in restore's refusal to overwrite unpublished edits and of a path naming nothing, and export's refusal of DIR", async () => {
    const nb = join(root, "restore-lookalikes");
    expect(JSON.parse((await cli("pull", "--json", nb)).stdout).code).toBe("OK");
    writeFileSync(join(nb, HEX40), "one\n");
    writeFileSync(join(nb, HEX64), "one\n");
    expect(JSON.parse((await cli("commit", "-m", "ids", "--json", nb)).stdout).code).toBe("OK");
    writeFileSync(join(nb, HEX40), "two\n");
    writeFileSync(join(nb, HEX64), "two\n");
    const overwrite = `The restore would overwrite unpublished local edits (${HEX40}, ${HEX64}); nothing was restored. Commit them first, leave those paths out, or add --force to overwrite them.`;
    const refused = await cli("restore", "--from", "1", "--dir", nb, "--json");
    expect(JSON.parse(refused.stdout)).toMatchObject({ reason: "MALFORMED_INPUT", files: [], message: overwrite });
    expect((await cli("restore", "--from", "1", "--dir", nb)).stderr).toContain(`\n${overwrite}\n`);
    const missing = HEX40.split("").reverse().join("");
    const nothing = await cli("restore", "--from", "1", "--dir", nb, "--json", missing);
    expect(JSON.parse(nothing.stdout).message).toBe(`"${missing}" names no file in generation 1 nor in the checkout; nothing was restored.`);
    writeFileSync(join(root, HEX64), "a file, not a directory\n");
    const p = Bun.spawn([binary, "export", HEX64], { cwd: root, env: local, stdout: "pipe", stderr: "pipe" });
    const [stderr] = await Promise.all([new Response(p.stderr).text(), p.exited]);
    expect(stderr).toBe(`slivingdoc: argument refusal: export DIR "${HEX64}" is a regular file, not a directory; export writes only into a new or empty directory, or an earlier export of this notebook\n`);
  }, 60_000);
});

const env = process.env;

if (!testBucket) {
  describe("through the binary on S3", () => {
    test("S3 test server is configured", () => {
      throw new Error(
        "SLIVINGDOC_TEST_S3_BUCKET is not set, so the binary's secrets tests on S3 cannot run. Run `npm test` (it starts a " +
          "throwaway Ceph RGW), or start one with `bash test/support/ceph-rgw.sh start DIR` and load it with " +
          "`set -a; . DIR/env; set +a` (see docs/s3.md).",
      );
    });
  });
} else {
  describe("through the binary on S3", () => {
    const root = mkdtempSync(join(tmpdir(), "slivingdoc-secrets-"));
    const runId = crypto.randomUUID().slice(0, 8);
    const usedPrefixes: string[] = [];
    const realKeyId = env.AWS_ACCESS_KEY_ID!;
    const realSecret = env.AWS_SECRET_ACCESS_KEY!;

    const freshPrefix = (name: string) => {
      const prefix = `slivingdoc-test/secrets-${runId}-${name}`;
      usedPrefixes.push(`${prefix}/`);
      return prefix;
    };
    const serveEnv = (name: string, prefix: string, extra: Record<string, string> = {}): Record<string, string> => {
      const dir = join(root, name);
      mkdirSync(join(dir, "tmp"), { recursive: true });
      return {
        ...(env as Record<string, string>),
        HOME: join(dir, "home"),
        TMPDIR: join(dir, "tmp"),
        SLIVINGDOC_STORE: `s3://${testBucket}/${prefix}`,
        SLIVINGDOC_PRIVATE_ROOT: join(dir, "private"),
        ...extra,
      };
    };

    afterAll(async () => {
      await removePrefixes(usedPrefixes);
      rmSync(root, { recursive: true, force: true });
    });

    test("wrong, recognisable credentials: one INCOMPATIBLE_STORE line that names neither the key id nor the secret", async () => {
      const fakeSecret = "Recognisable/Wrong+Secret/Key+0123456789abcdefXYZ";
      const fakeToken = "IQoJRecognisableSessionToken0123456789abcdefTOKENxTOKENxTOKEN==";
      const cases: Array<Record<string, string>> = [
        // A key id the server does not know (AKIA-shaped, so also scrubbed by shape).
        { AWS_ACCESS_KEY_ID: "AKIAFAKEKEYID0SECRET", AWS_SECRET_ACCESS_KEY: fakeSecret },
        // The real key id (not AKIA-shaped on Ceph) with a wrong secret and a session token.
        { AWS_ACCESS_KEY_ID: realKeyId, AWS_SECRET_ACCESS_KEY: fakeSecret, AWS_SESSION_TOKEN: fakeToken },
        { AWS_ACCESS_KEY_ID: realKeyId, AWS_SECRET_ACCESS_KEY: `${realSecret.slice(0, -4)}XXXX` },
      ];
      for (const [i, creds] of cases.entries()) {
        for (const args of [["serve"], ["pull", join(root, `never-${i}`)]]) {
          const e = serveEnv(`refused-${i}`, freshPrefix(`refused-${i}`), creds);
          const p = Bun.spawn([join(import.meta.dir, "../../dist/slivingdoc"), ...args], { env: e, stdin: "pipe", stdout: "pipe", stderr: "pipe" });
          p.stdin.end();
          const [stdout, stderr, code] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited]);
          expect(code).toBe(2);
          expect(stdout).toBe("");
          const lines = stderr.trim().split("\n");
          expect(lines.length).toBe(1);
          expect(lines[0]).toStartWith("slivingdoc: INCOMPATIBLE_STORE: the S3 compatibility probe failed: ");
          // An operational cause is named (which one depends on the server), the secrets are not.
          expect(lines[0]).toMatch(/credentials were refused|access denied|access key id is not known/);
          const leaked = found(stderr, [creds.AWS_ACCESS_KEY_ID!, creds.AWS_SECRET_ACCESS_KEY!, fakeToken, realSecret, "probe/"]);
          expect({ case: i, args: args[0], leaked }).toEqual({ case: i, args: args[0], leaked: [] });
        }
      }
    }, 120_000);

    test("a whole session with the right credentials: neither the secret nor the key id on stdout or stderr", async () => {
      const server = spawnServe(serveEnv("session", freshPrefix("session")));
      await server.initialize();
      let id = 1;
      const callTool = async (name: string, args?: unknown) => {
        const n = id++;
        server.send({ jsonrpc: "2.0", id: n, method: "tools/call", params: { name, ...(args !== undefined ? { arguments: args } : {}) } });
        return server.answer(n);
      };
      server.send({ jsonrpc: "2.0", id: id++, method: "tools/list" });
      const pulled = await callTool("notes_pull", {});
      const dir = pulled.result!.structuredContent.path as string;
      writeFileSync(join(dir, "plan.md"), "goal: ship\n");
      const committed = await callTool("notes_commit", { message: "plan" });
      expect(committed.result!.structuredContent).toMatchObject({ code: "OK", generation: 1 });
      writeFileSync(join(dir, "plan.md"), "goal: ship on Friday\n");
      expect((await callTool("notes_commit", { message: "date" })).result!.structuredContent.generation).toBe(2);
      // Refusals and errors of every kind the session can meet without breaking the store.
      expect((await callTool("notes_commit", { message: " " })).result!.structuredContent.reason).toBe("MESSAGE_BLANK");
      expect((await callTool("notes_commit", { message: "a\u0000b" })).result!.structuredContent.reason).toBe("MESSAGE_INVALID");
      expect((await callTool("notes_pull", { path: "/" })).result!.structuredContent.reason).toBe("PATH_OUTSIDE_ROOT");
      expect((await callTool("notes_pull", { bogus: realKeyId })).result!.structuredContent.reason).toBe("MALFORMED_INPUT");
      writeFileSync(join(dir, "blob.bin"), Buffer.from([0, 1, 2]));
      expect((await callTool("notes_commit", { message: "bin" })).result!.structuredContent.reason).toBe("INVALID_CONTENT");
      rmSync(join(dir, "blob.bin"));
      expect((await callTool("no_such_tool", {})).error).toBeDefined();
      expect((await callTool("notes_pull")).result!.structuredContent.code).toBe("OK");
      const { code, stdout, stderr } = await server.finish();
      expect(code).toBe(0);
      expect(stderr).toContain("tool call completed");
      const leaked = [...found(stdout, [realSecret, realKeyId]).map((s) => `stdout: ${s === realSecret ? "secret" : "key id"}`), ...found(stderr, [realSecret, realKeyId]).map((s) => `stderr: ${s === realSecret ? "secret" : "key id"}`)];
      expect(leaked).toEqual([]);
    }, 120_000);

    // Regression: the log record of a MANIFEST_INVALID quotes the validator's
    // message, which names the manifest's unknown fields; a key id that is not
    // AKIA-shaped (Ceph's are not) or a base64 secret reached stderr until the
    // process's own credentials were scrubbed from every log record.
    test("a manifest carrying the process's own credentials: they reach neither the result nor the log", async () => {
      const prefix = freshPrefix("poisoned");
      const store = testS3Store(prefix);
      const manifest = {
        format: 1,
        generation: 1,
        head: HEX40,
        publication: "0".repeat(32),
        packs: [{ key: `packs/${HEX64}.pack`, size: 1, sha256: HEX64 }],
        [realKeyId]: realSecret,
        [realSecret]: "x",
      };
      expect((await store.putIfAbsent("current", new TextEncoder().encode(JSON.stringify(manifest)))).ok).toBe(true);
      await store.close();
      const server = spawnServe(serveEnv("poisoned", prefix));
      await server.initialize();
      server.send({ jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "notes_pull", arguments: {} } });
      const answer = await server.answer(1);
      expect(answer.result!.structuredContent.reason).toBe("MANIFEST_INVALID");
      const { stdout, stderr } = await server.finish();
      expect(found(stdout, [realSecret, realKeyId])).toEqual([]);
      expect(found(stderr, [realSecret, realKeyId]).map((s) => (s === realSecret ? "secret" : "key id"))).toEqual([]);
    }, 60_000);
  });
}
