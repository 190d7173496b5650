/**
 * Every operational cause of a refused S3 start, named in the one
 * INCOMPATIBLE_STORE line with what to set, and named alike by `doctor`,
 * whose advice says "call again" only where calling again can help. Each
 * cause is produced for real: by the real S3 server of the tests (a wrong
 * key, a missing bucket, a user without rights), by a real socket (a closed
 * port, a TLS port with a self-signed certificate, a name under `.invalid`
 * that the resolver refuses), by the AWS SDK's own refusal (no region, no
 * credentials), or, where the S3 server cannot give it (expired
 * credentials, a clock off, a request timed out), by a local server that
 * answers as S3 does (test/support/s3-refusing.ts).
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { EXIT_CODES } from "../../src/contract/tokens.ts";
import { BINARY, requireBinary } from "../support/mcp.ts";
import { closedPort, type RefusingServer, s3Refusing, selfSignedTls } from "../support/s3-refusing.ts";
import { s3ServerMissing, testBucket, testEndpoint } from "../support/s3-test-store.ts";

const env = process.env;
const root = mkdtempSync(join(tmpdir(), "slivingdoc-causes-"));
const servers: RefusingServer[] = [];
afterAll(() => {
  for (const s of servers) s.stop();
  rmSync(root, { recursive: true, force: true });
});

/** Secrets that must appear in no line: the test server's and the ones made up here. */
const WRONG_KEY_ID = "AKIAWRONGKEYID000TEST";
const WRONG_SECRET = "wRoNg0secret0key0that0must0never0appear0";
const secrets = () => [env.AWS_ACCESS_KEY_ID, env.AWS_SECRET_ACCESS_KEY, WRONG_KEY_ID, WRONG_SECRET, ...(env.SLIVINGDOC_TEST_S3_READER ?? "").split(":")].filter((s): s is string => !!s);

let runs = 0;

/**
 * The binary with the test server's credentials and store, changed by
 * `change` (undefined removes a variable); nothing read from this user's
 * AWS files, nor from an instance role.
 */
async function run(change: Record<string, string | undefined>, ...args: string[]): Promise<{ stdout: string; stderr: string; code: number }> {
  const n = runs++;
  const e: Record<string, string | undefined> = {
    PATH: env.PATH ?? "/usr/bin:/bin",
    HOME: join(root, `home-${n}`),
    TMPDIR: tmpdir(),
    XDG_STATE_HOME: join(root, `state-${n}`),
    AWS_CONFIG_FILE: join(root, "no-config"),
    AWS_SHARED_CREDENTIALS_FILE: join(root, "no-credentials"),
    AWS_EC2_METADATA_DISABLED: "true",
    AWS_ACCESS_KEY_ID: env.AWS_ACCESS_KEY_ID,
    AWS_SECRET_ACCESS_KEY: env.AWS_SECRET_ACCESS_KEY,
    AWS_REGION: env.AWS_REGION ?? "us-east-1",
    AWS_ENDPOINT_URL_S3: testEndpoint,
    S3_FORCE_PATH_STYLE: "1",
    SLIVINGDOC_STORE: `s3://${testBucket}/slivingdoc-test/causes-${n}`,
    ...change,
  };
  const p = Bun.spawn([BINARY, ...args], {
    cwd: root,
    env: Object.fromEntries(Object.entries(e).filter((kv): kv is [string, string] => kv[1] !== undefined)),
    stdin: "pipe",
    stdout: "pipe",
    stderr: "pipe",
  });
  p.stdin.end();
  const [stdout, stderr, code] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited]);
  return { stdout, stderr, code };
}

interface Cause {
  name: string;
  /** What differs from the test server's environment. */
  change: () => Record<string, string | undefined>;
  /** The cause's sentence, and the advice's: both are in the line, "cause; advice". */
  cause: string | RegExp;
  advice: string;
  /** Whether calling again can help, so doctor may say so. */
  retryHelps?: boolean;
}

let tlsUrl = "";
let closed = 0;
const refusing: Record<string, string> = {};

beforeAll(async () => {
  const tls = selfSignedTls();
  servers.push(tls);
  tlsUrl = tls.url;
  closed = await closedPort();
  for (const [code, status] of [["ExpiredToken", 400], ["RequestTimeTooSkewed", 403], ["RequestTimeout", 400]] as const) {
    const s = s3Refusing(code, status);
    servers.push(s);
    refusing[code] = s.url;
  }
});

const CAUSES: Cause[] = [
  { name: "no region", change: () => ({ AWS_REGION: undefined }), cause: "no region is configured (the AWS SDK found none)", advice: "set --region or S3_REGION (or AWS_REGION, or a region in the AWS profile)" },
  {
    name: "no credentials",
    change: () => ({ AWS_ACCESS_KEY_ID: undefined, AWS_SECRET_ACCESS_KEY: undefined }),
    cause: "no credentials were found (the AWS SDK's default chain gave none)",
    advice: "set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or AWS_PROFILE, or give the machine a role",
  },
  {
    name: "an access key id the store does not know",
    change: () => ({ AWS_ACCESS_KEY_ID: WRONG_KEY_ID, AWS_SECRET_ACCESS_KEY: WRONG_SECRET }),
    cause: "the access key id is not known to the store (InvalidAccessKeyId)",
    advice: "check AWS_ACCESS_KEY_ID (or the profile's key) against the store's users",
  },
  {
    name: "a wrong secret",
    change: () => ({ AWS_SECRET_ACCESS_KEY: WRONG_SECRET }),
    cause: "the credentials were refused: the secret access key does not match the access key id (SignatureDoesNotMatch)",
    advice: "check AWS_SECRET_ACCESS_KEY (or the profile's secret)",
  },
  { name: "expired credentials", change: () => ({ AWS_ENDPOINT_URL_S3: refusing.ExpiredToken }), cause: "expired credentials (ExpiredToken)", advice: "renew them: log in again, or get a new AWS_SESSION_TOKEN" },
  {
    name: "a host name that does not resolve",
    change: () => ({ AWS_ENDPOINT_URL_S3: "http://slivingdoc-nowhere.invalid:9000" }),
    cause: "the endpoint's host name does not resolve (ENOTFOUND)",
    advice: "check --endpoint (or AWS_ENDPOINT_URL_S3) and this machine's DNS",
  },
  {
    name: "a closed port",
    change: () => ({ AWS_ENDPOINT_URL_S3: `http://127.0.0.1:${closed}` }),
    cause: /^the endpoint refused the connection \((ECONNREFUSED|ConnectionRefused)\)$/,
    advice: "check --endpoint (or AWS_ENDPOINT_URL_S3): its host and port, and that the server runs",
  },
  {
    name: "a self-signed TLS certificate",
    change: () => ({ AWS_ENDPOINT_URL_S3: tlsUrl }),
    cause: "the endpoint's TLS certificate is not trusted (DEPTH_ZERO_SELF_SIGNED_CERT)",
    advice: "give its CA's PEM file in NODE_EXTRA_CA_CERTS (never turn verification off), or check --endpoint",
  },
  {
    name: "no such bucket",
    change: () => ({ SLIVINGDOC_STORE: `s3://slivingdoc-missing-${root.slice(-6).toLowerCase()}/x` }),
    cause: "the bucket does not exist (NoSuchBucket)",
    advice: "check the bucket in --store (or S3_BUCKET), and check --endpoint (or AWS_ENDPOINT_URL_S3)",
  },
  {
    name: "access denied",
    change: () => {
      const [id, secret] = (env.SLIVINGDOC_TEST_S3_READER ?? ":").split(":");
      return { AWS_ACCESS_KEY_ID: id, AWS_SECRET_ACCESS_KEY: secret };
    },
    cause: "access denied (AccessDenied, 403)",
    advice: "give these credentials docs/s3.md's writer's policy (Least privilege), or its reader's for an agent that only reads",
  },
  {
    name: "a clock too far off",
    change: () => ({ AWS_ENDPOINT_URL_S3: refusing.RequestTimeTooSkewed }),
    cause: "this machine's clock is too far from the store's (RequestTimeTooSkewed, 403)",
    advice: "set this machine's clock (NTP): signed requests more than 15 minutes off are refused",
  },
  {
    name: "a request timed out",
    change: () => ({ AWS_ENDPOINT_URL_S3: refusing.RequestTimeout }),
    cause: "the store timed out waiting for the request's bytes (RequestTimeout)",
    advice: "call again; if it persists, look at the network between (a slow or lossy link)",
    retryHelps: true,
  },
];

/** The line's cause and advice, split where the probe joins them. */
function causeAndAdvice(text: string, prefix: string): { cause: string; advice: string } {
  expect(text).toStartWith(prefix);
  const rest = text.slice(prefix.length);
  const at = rest.indexOf("; ");
  return { cause: rest.slice(0, at), advice: rest.slice(at + 2) };
}

function expectNoSecret(text: string): void {
  for (const secret of secrets()) expect(text).not.toContain(secret);
  expect(text).not.toContain("probe/");
}

const s3Test = s3ServerMissing() ? () => {} : test;

describe("an S3 start refused for an operational cause names it, with what to set", () => {
  for (const c of CAUSES) {
    s3Test(`${c.name}: the INCOMPATIBLE_STORE line, and doctor's stop`, async () => {
      requireBinary();
      const refused = await run(c.change(), "pull", join(root, "never"));
      expect({ code: refused.code, stdout: refused.stdout }).toEqual({ code: EXIT_CODES.STARTUP, stdout: "" });
      const lines = refused.stderr.trimEnd().split("\n");
      expect(lines.length).toBe(1);
      const line = causeAndAdvice(lines[0]!, "slivingdoc: INCOMPATIBLE_STORE: the S3 compatibility probe failed: ");
      expect(line.cause).toMatch(typeof c.cause === "string" ? new RegExp(`^${RegExp.escape(c.cause)}$`) : c.cause);
      expect(line.advice).toBe(c.advice);
      expectNoSecret(refused.stderr);

      // doctor: the same cause, the same advice; "call again" only where it can help.
      const doctor = await run(c.change(), "doctor", "--json", "--samples", "1");
      expect(doctor.code).toBe(EXIT_CODES.STARTUP);
      const report = JSON.parse(doctor.stdout);
      expect(report.verdict).toBe("unusable");
      expectNoSecret(doctor.stdout + doctor.stderr);
      if (c.name === "access denied") {
        // Refusals for access are what doctor examines: each request's permission, and what to grant.
        expect(report.permissions).toMatchObject({ read: "denied", write: "denied" });
        return;
      }
      expect(causeAndAdvice(report.stopped, "")).toEqual(line);
      expect(report.problems.map((p: { text: string }) => p.text)).toEqual([`the examination stopped: ${report.stopped}`]);
      expect(/call again/i.test(report.problems[0].text)).toBe(c.retryHelps === true);
    }, 60_000);
  }
});
