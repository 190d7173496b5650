/**
 * The S3 object store (docs/decisions/0002-settings-flags-and-environment.md,
 * docs/decisions/0013-the-store-is-probed-before-use.md), for AWS S3 and the
 * S3-compatible servers users point slivingdoc at (MinIO, Cloudflare R2, Ceph
 * RGW; see docs/s3.md). This is the only module that imports the AWS SDK.
 *
 * Outcomes, as the engine needs them (src/store/object-store.ts):
 * - a lost precondition is `{ ok: false }`: 412, 409 ConditionalRequestConflict,
 *   and 404 NoSuchKey on `If-Match` (AWS and MinIO answer 404 for a missing
 *   key, Ceph 412);
 * - a conditional write whose outcome is not known — any 5xx (Ceph answers 500
 *   to some losers of a race), a socket timeout, a dropped connection or an
 *   abort by the caller's signal (a call's deadline) after the request went
 *   out — throws `StoreError` with `outcome: "unknown"`. It
 *   is never mapped to a loss here: the engine proves the outcome by reading
 *   `current` back (a write that landed must not be taken for a lost one);
 * - a conditional read answered 304 Not Modified is "unchanged";
 * - everything else throws `StoreError` with `outcome: "failed"`, among them
 *   every failure of the connect phase — refused, unreachable, a name that
 *   does not resolve, a connection not established in time — since the
 *   request provably never left (see `notSent`).
 *
 * Error messages carry the operation and the S3 error code / HTTP status only
 * ("s3 get: AccessDenied (403)") — never a key, the bucket, the endpoint or
 * anything credential-shaped; the SDK's error stays available as `cause`.
 */
import {
  DeleteObjectCommand,
  GetObjectCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  S3Client,
  type S3ClientConfig,
} from "@aws-sdk/client-s3";
import { Agent as HttpAgent } from "node:http";
import { Agent as HttpsAgent } from "node:https";
import {
  callerDigest,
  type ConditionalRead,
  type ConditionalWrite,
  type ListedObject,
  type ObjectStore,
  type ServerAnswer,
  type StoreClock,
  StoreError,
  type StoreOperation,
  type StoredObject,
} from "./object-store.ts";

export interface S3StoreOptions {
  bucket: string;
  /**
   * Key prefix of the notebook inside the bucket: empty, or segments joined by
   * "/". A missing trailing "/" is added ("team/notes" → "team/notes/"); a
   * leading "/", empty segments ("a//b"), "." or ".." segments and control
   * characters are refused with `StoreError("open")`.
   */
  prefix: string;
  /** Region; without it the SDK's own chain (AWS_REGION, profile) decides. */
  region?: string;
  /** Endpoint URL for non-AWS servers; without it the SDK's own default. */
  endpoint?: string;
  /** Path-style addressing (`host/bucket/key`), needed by MinIO and Ceph. */
  forcePathStyle?: boolean;
  /**
   * Attempts (first try plus SDK retries) for reads, lists and deletes, which
   * are idempotent. Conditional writes are always sent exactly once (below).
   * Default: the SDK's (3).
   */
  maxAttempts?: number;
  /** How long opening a connection may take (default 10 s); tests shorten it. */
  connectionTimeoutMs?: number;
  /** How long a connected socket may stay idle (default 20 s); tests shorten it. */
  socketTimeoutMs?: number;
  /** The wall clock the send and answer times of each request are read on (`lastAnswer`). */
  clock: StoreClock;
}

/** A connection that cannot be opened within this fails (nothing was sent). */
const CONNECTION_TIMEOUT_MS = 10_000;
/**
 * A socket idle this long (server stalled mid-request) is given up. Short
 * enough that one hung request leaves room in a call's deadline (60 s by
 * default) for the SDK to try a read again on a fresh connection; long
 * enough for any answer a working server gives (bytes of a large pack keep
 * the socket busy, they do not count).
 */
const SOCKET_IDLE_TIMEOUT_MS = 20_000;

/**
 * Normalises the key prefix (see `S3StoreOptions.prefix`), for a store
 * opened by any caller; a configured prefix is refused earlier, at start-up
 * and before any network work, by the kind's own rules (s3-kind.ts).
 */
export function normaliseS3Prefix(prefix: string): string {
  if (prefix === "") return "";
  const trimmed = prefix.endsWith("/") ? prefix.slice(0, -1) : prefix;
  const segments = trimmed.split("/");
  const bad =
    trimmed === "" ||
    /[\u0000-\u001f\u007f]/.test(trimmed) ||
    segments.some((s) => s === "" || s === "." || s === "..");
  if (bad) {
    throw new StoreError(
      "open",
      "s3 open: invalid key prefix (use segments separated by '/', without empty, '.' or '..' segments or a leading '/')",
    );
  }
  return `${trimmed}/`;
}

export function createS3Store(options: S3StoreOptions): ObjectStore {
  if (typeof options.bucket !== "string" || options.bucket === "") {
    throw new StoreError("open", "s3 open: no bucket given");
  }
  if (options.maxAttempts !== undefined && !(Number.isInteger(options.maxAttempts) && options.maxAttempts >= 1)) {
    throw new StoreError("open", "s3 open: maxAttempts must be a positive integer");
  }
  const clients = s3Clients(options);
  const bucket = { name: options.bucket, prefix: normaliseS3Prefix(options.prefix), ...clients };
  return s3Store(bucket, noteServerDates(clients, options.clock));
}

/** The notebook's place (bucket and prefix), and the clients its requests go through. */
interface Bucket extends S3Clients {
  name: string;
  prefix: string;
}

interface S3Clients {
  /** For reads, lists and deletes, which are idempotent: the SDK may retry them. */
  client: S3Client;
  /** For conditional writes: sent exactly once. */
  writer: S3Client;
  /** Ends both clients and their connections. */
  destroy(): void;
}

function s3Clients(options: S3StoreOptions): S3Clients {
  // One pool of kept-alive connections for both clients below (the SDK's
  // own agent settings otherwise): a write that follows a read — a commit's
  // pack after its read of `current` — goes on a connection the read left
  // open rather than opening one of its own. Against AWS that is a TCP and
  // a TLS handshake, one to three round trips, saved on each process's
  // first write (every CLI commit).
  const httpAgent = new HttpAgent({ keepAlive: true, maxSockets: 50 });
  const httpsAgent = new HttpsAgent({ keepAlive: true, maxSockets: 50 });
  const base: S3ClientConfig = {
    // Credentials come only from the SDK's default chain (env, profiles, SSO,
    // container and instance roles): never a parameter, never logged.
    ...(options.region !== undefined ? { region: options.region } : {}),
    ...(options.endpoint !== undefined ? { endpoint: options.endpoint } : {}),
    forcePathStyle: options.forcePathStyle ?? false,
    // Recent SDKs add flexible checksums by default and then stream the body
    // with a trailer, which Ceph RGW 16 rejects with 411 MissingContentLength
    // (and some other S3-compatible servers refuse). Checksums only where an
    // operation requires them; bodies are plain Uint8Arrays with a length.
    // https://docs.aws.amazon.com/sdk-for-javascript/v3/developer-guide/s3-checksums.html
    requestChecksumCalculation: "WHEN_REQUIRED",
    responseChecksumValidation: "WHEN_REQUIRED",
    requestHandler: {
      connectionTimeout: options.connectionTimeoutMs ?? CONNECTION_TIMEOUT_MS,
      socketTimeout: options.socketTimeoutMs ?? SOCKET_IDLE_TIMEOUT_MS,
      httpAgent,
      httpsAgent,
    },
  };
  const client = new S3Client({ ...base, ...(options.maxAttempts !== undefined ? { maxAttempts: options.maxAttempts } : {}) });
  // Conditional writes are sent exactly once. If the SDK retried one whose
  // first attempt landed but whose response was lost (timeout, reset, 5xx),
  // the retry would meet our own write and answer 412 — reporting a win as a
  // loss, after which the engine could delete a pack that `current` now
  // names. Detecting that after the fact is not possible from the 412 alone,
  // so there is no SDK retry: the failure surfaces as outcome "unknown" and
  // the engine proves it by reading back, then retries with jitter itself.
  // https://docs.aws.amazon.com/AmazonS3/latest/userguide/conditional-writes.html
  const writer = new S3Client({ ...base, maxAttempts: 1 });
  const destroy = () => {
    client.destroy();
    writer.destroy();
    httpAgent.destroy();
    httpsAgent.destroy();
  };
  return { client, writer, destroy };
}

/**
 * The server's clock, from the `Date` header of each answer (`doctor`'s
 * clock skew): noted beside the request's own send and answer times, on
 * `clock`. Returns the last answer's.
 */
function noteServerDates({ client, writer }: S3Clients, clock: StoreClock): () => ServerAnswer | null {
  let lastAnswer: ServerAnswer | null = null;
  for (const c of [client, writer]) {
    c.middlewareStack.add(
      (next) => async (args) => {
        const sentAt = clock.now().getTime();
        const out = await next(args);
        const date = Date.parse(String((out.response as { headers?: Record<string, string> } | undefined)?.headers?.date ?? ""));
        if (Number.isFinite(date)) lastAnswer = { sentAt, answeredAt: clock.now().getTime(), serverDate: date };
        return out;
      },
      // Inside the deserializer: every answer, an error status's too, before it is parsed.
      { step: "deserialize", priority: "low", name: "slivingdocServerDate" },
    );
  }
  return () => lastAnswer;
}

function s3Store(bucket: Bucket, lastAnswer: () => ServerAnswer | null): ObjectStore {
  const full = (key: string) => bucket.prefix + key;
  return {
    kind: "s3",

    get: (key, signal) => read(bucket, key, undefined, signal) as Promise<StoredObject | null>,

    // `If-None-Match` with the ETag unquoted, as `If-Match` below (Ceph RGW
    // unquotes it on reads, AWS and MinIO accept either form). A 304 Not
    // Modified carries no body.
    // https://docs.aws.amazon.com/AmazonS3/latest/API/API_GetObject.html#API_GetObject_RequestSyntax
    getIfNoneMatch: (key, etag, signal) => read(bucket, key, unquote(etag), signal),

    // Create-only: `If-None-Match: *`. 412 when the key exists; 409
    // ConditionalRequestConflict when AWS saw a concurrent write (a loss here;
    // the engine decides whether to try again).
    // https://docs.aws.amazon.com/AmazonS3/latest/API/API_PutObject.html#API_PutObject_RequestSyntax
    putIfAbsent: (key, body, signal) => conditionalPut(bucket, "putIfAbsent", { Bucket: bucket.name, Key: full(key), Body: body, IfNoneMatch: "*" }, signal),

    // Compare-and-swap: `If-Match` with the ETag WITHOUT quotes. Ceph RGW 16
    // compares the header to its stored ETag byte for byte, so a quoted value
    // never matches there; AWS and MinIO accept the unquoted form too. Always
    // the strong ETag as the server returned it (R2 compares strong ETags).
    // A missing key: 404 NoSuchKey on AWS and MinIO, 412 on Ceph — a loss.
    // https://docs.aws.amazon.com/AmazonS3/latest/userguide/conditional-writes.html
    putIfMatch: (key, body, etag, signal) =>
      conditionalPut(bucket, "putIfMatch", { Bucket: bucket.name, Key: full(key), Body: body, IfMatch: unquote(etag) }, signal),

    list: (listPrefix, signal) => list(bucket, listPrefix, signal),

    async delete(key, signal) {
      try {
        // S3 answers 204 for an absent key too.
        await bucket.client.send(new DeleteObjectCommand({ Bucket: bucket.name, Key: full(key) }), { abortSignal: signal });
      } catch (error) {
        const { status, code } = describeError(error);
        if (status === 404 && code === "NoSuchKey") return;
        throw storeError("delete", error, isAmbiguous(error) ? "unknown" : "failed");
      }
    },

    lastAnswer,

    // The chain the requests are signed with, resolved as for a request
    // (the SDK keeps what it resolved); a chain that gives nothing is no one.
    async caller(): Promise<string | null> {
      try {
        const credentials = await bucket.client.config.credentials();
        return credentials.accessKeyId ? callerDigest(credentials.accessKeyId) : null;
      } catch {
        return null;
      }
    },

    close: async () => bucket.destroy(),
  };
}

/** Every object under the notebook's prefix and `listPrefix`, sorted by key. */
async function list(bucket: Bucket, listPrefix: string, signal: AbortSignal | undefined): Promise<ListedObject[]> {
  const objects: ListedObject[] = [];
  let token: string | undefined;
  try {
    // ListObjectsV2 returns at most 1000 keys a page; follow the
    // continuation token until the listing is complete.
    // https://docs.aws.amazon.com/AmazonS3/latest/API/API_ListObjectsV2.html
    do {
      const page = await bucket.client.send(
        new ListObjectsV2Command({ Bucket: bucket.name, Prefix: bucket.prefix + listPrefix, ContinuationToken: token }),
        { abortSignal: signal },
      );
      for (const item of page.Contents ?? []) {
        if (item.Key === undefined || !item.Key.startsWith(bucket.prefix)) continue;
        objects.push({
          key: item.Key.slice(bucket.prefix.length),
          size: item.Size ?? 0,
          modified: item.LastModified ?? new Date(0),
        });
      }
      token = page.IsTruncated ? page.NextContinuationToken : undefined;
      if (page.IsTruncated && !token) {
        throw new StoreError("list", "s3 list: truncated listing without a continuation token");
      }
    } while (token);
  } catch (error) {
    if (error instanceof StoreError) throw error;
    throw storeError("list", error, "failed");
  }
  return objects.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
}

/** GetObject, with `If-None-Match: ifNoneMatch` when given: "unchanged" on its 304. */
async function read(bucket: Bucket, key: string, ifNoneMatch: string | undefined, signal: AbortSignal | undefined): Promise<ConditionalRead> {
  let out;
  try {
    const input = { Bucket: bucket.name, Key: bucket.prefix + key, ...(ifNoneMatch !== undefined ? { IfNoneMatch: ifNoneMatch } : {}) };
    out = await bucket.client.send(new GetObjectCommand(input), { abortSignal: signal });
  } catch (error) {
    const { status, code } = describeError(error);
    // The SDK throws for a 304; known by its status alone, which only a conditional read is answered.
    if (status === 304 && ifNoneMatch !== undefined) return "unchanged";
    // NoSuchKey on GET; "NotFound" where a server sends no error body.
    if (status === 404 && (code === "NoSuchKey" || code === "NotFound")) return null;
    throw storeError("get", error, "failed");
  }
  try {
    const body = out.Body ? await out.Body.transformToByteArray() : new Uint8Array();
    return { body, etag: requireEtag("get", out.ETag, "failed") };
  } catch (error) {
    if (error instanceof StoreError) throw error;
    throw storeError("get", error, "failed");
  }
}

async function conditionalPut(
  bucket: Bucket,
  operation: "putIfAbsent" | "putIfMatch",
  input: { Bucket: string; Key: string; Body: Uint8Array; IfNoneMatch?: string; IfMatch?: string },
  signal: AbortSignal | undefined,
): Promise<ConditionalWrite> {
  let out;
  try {
    // Aborted once sent, the write may have landed: an unknown outcome (isAmbiguous).
    out = await bucket.writer.send(new PutObjectCommand({ ...input, ContentLength: input.Body.byteLength }), { abortSignal: signal });
  } catch (error) {
    const { status, code } = describeError(error);
    if (status === 412) return { ok: false };
    if (status === 409 && code === "ConditionalRequestConflict") return { ok: false };
    if (operation === "putIfMatch" && status === 404 && code === "NoSuchKey") return { ok: false };
    throw storeError(operation, error, isAmbiguous(error) ? "unknown" : "failed");
  }
  // 200: the write landed. Without an ETag we could not swap on it later;
  // the write did happen, so the caller must prove what is stored.
  return { ok: true, etag: requireEtag(operation, out.ETag, "unknown") };
}

/** `"abc"` → `abc`; S3 returns ETags quoted (RFC 7232 entity tags). */
function unquote(etag: string): string {
  return etag.length >= 2 && etag.startsWith('"') && etag.endsWith('"') ? etag.slice(1, -1) : etag;
}

function requireEtag(operation: StoreOperation, etag: string | undefined, outcome: "failed" | "unknown"): string {
  const value = etag === undefined ? "" : unquote(etag);
  if (value === "") throw new StoreError(operation, `s3 ${operation}: response without ETag`, outcome);
  return value;
}

interface ErrorFacts {
  /** HTTP status of the server's answer, if one arrived. */
  status: number | undefined;
  /** S3 error code ("NoSuchKey") when the server answered, else the error's name. */
  code: string | undefined;
  /** System error code of a socket failure ("ECONNREFUSED"), if any. */
  sys: string | undefined;
  /** The system call that failed ("connect", "getaddrinfo", "read"), if any. */
  syscall: string | undefined;
}

function describeError(error: unknown): ErrorFacts {
  if (typeof error !== "object" || error === null) return { status: undefined, code: undefined, sys: undefined, syscall: undefined };
  const e = error as {
    $metadata?: { httpStatusCode?: number };
    $response?: { statusCode?: number };
    Code?: unknown;
    code?: unknown;
    name?: unknown;
    syscall?: unknown;
  };
  const status = e.$metadata?.httpStatusCode ?? e.$response?.statusCode;
  const named = typeof e.Code === "string" ? e.Code : typeof e.name === "string" ? e.name : undefined;
  const code = named === "Error" && error instanceof Error && REGION_MISSING.test(error.message) ? "RegionMissing" : named;
  const sys = typeof e.code === "string" ? e.code : undefined;
  const syscall = typeof e.syscall === "string" ? e.syscall : undefined;
  return { status, code, sys, syscall };
}

/**
 * Errors that prove the request never reached the server: nothing can have
 * been written. Every other failure of a write after it was handed to the
 * network (5xx, socket timeout, reset, unparsable answer) leaves the outcome
 * unknown.
 */
const NOT_SENT = new Set([
  "ECONNREFUSED",
  "ConnectionRefused",
  "ENOTFOUND",
  "EAI_AGAIN",
  "EHOSTUNREACH",
  "ENETUNREACH",
  "CredentialsProviderError",
  "FailedToOpenSocket",
  "RegionMissing",
]);

/**
 * The SDK's refusal to sign a request without a region, before anything is
 * sent. It has no code of its own, so it is known by its wording and named
 * "RegionMissing"; a change of wording makes it a plain "Error" again, and
 * test/e2e/startup-causes.test.ts, which starts with no region, fails.
 */
const REGION_MISSING = /^Region is missing$/;

/**
 * TLS failures of the handshake, which comes before any byte of the
 * request: the certificate is not trusted or does not name the endpoint, or
 * the endpoint does not speak TLS at all (https to a plain-http port). Named
 * one by one: an SSL error once the session is up may come after the
 * request went out.
 */
const TLS_HANDSHAKE = new Set([
  "DEPTH_ZERO_SELF_SIGNED_CERT",
  "SELF_SIGNED_CERT_IN_CHAIN",
  "UNABLE_TO_VERIFY_LEAF_SIGNATURE",
  "UNABLE_TO_GET_ISSUER_CERT",
  "UNABLE_TO_GET_ISSUER_CERT_LOCALLY",
  "CERT_HAS_EXPIRED",
  "CERT_NOT_YET_VALID",
  "CERT_REVOKED",
  "CERT_UNTRUSTED",
  "CERT_REJECTED",
  "ERR_TLS_CERT_ALTNAME_INVALID",
  "HOSTNAME_MISMATCH",
  "ERR_SSL_WRONG_VERSION_NUMBER",
  "ERR_SSL_SSLV3_ALERT_HANDSHAKE_FAILURE",
  "ERR_SSL_TLSV1_ALERT_PROTOCOL_VERSION",
  "ERR_SSL_UNSUPPORTED_PROTOCOL",
]);

/** The system calls of the connect phase: a failure there means no byte of the request was sent. */
const CONNECT_PHASE = new Set(["connect", "getaddrinfo"]);

/**
 * The HTTP handler's own connect timeout: it fires only while the socket is
 * still connecting, and names that in its message (its socket timeout, once
 * connected, says "timed out after … of inactivity" instead). Matched on the
 * wording because the SDK gives it no code; a change of wording makes such
 * a timeout "unknown" again — the safe side — and test/store/s3.test.ts,
 * which times out a connect to a listener that never accepts, fails.
 */
const CONNECT_TIMEOUT = /did not establish a connection with the server/;

function notSent(error: unknown): boolean {
  const { code, sys, syscall } = describeError(error);
  if ((sys !== undefined && NOT_SENT.has(sys)) || (code !== undefined && NOT_SENT.has(code))) return true;
  if (sys !== undefined && TLS_HANDSHAKE.has(sys)) return true;
  if (syscall !== undefined && CONNECT_PHASE.has(syscall)) return true;
  return code === "TimeoutError" && error instanceof Error && CONNECT_TIMEOUT.test(error.message);
}

function isAmbiguous(error: unknown, depth = 0): boolean {
  const { status } = describeError(error);
  if (status !== undefined) return status >= 500;
  if (notSent(error)) return false;
  const cause = (error as { cause?: unknown } | null)?.cause;
  if (depth < 3 && cause !== undefined && cause !== error && !isAmbiguous(cause, depth + 1)) return false;
  return true;
}

/** Only the code and the status go into the message (see the header). */
function storeError(operation: StoreOperation, error: unknown, outcome: "failed" | "unknown"): StoreError {
  const { status, code, sys } = describeError(error);
  // A code is a short identifier; anything else (a server echoing text) is
  // not put into a message, nor anything shaped like an access key id.
  const safe = (s: string | undefined) =>
    s !== undefined && /^[A-Za-z][A-Za-z0-9_.-]{0,63}$/.test(s) && !/[A-Z0-9]{16}/.test(s) ? s : undefined;
  const what = status !== undefined ? `${safe(code) ?? "error"} (${status})` : (safe(sys) ?? safe(code) ?? "error");
  const suffix = outcome === "unknown" ? "; the write may have landed" : "";
  return new StoreError(operation, `s3 ${operation}: ${what}${suffix}`, outcome, { cause: error });
}
