/**
 * The startup compatibility probe
 * (docs/decisions/0013-the-store-is-probed-before-use.md; docs/errors.md,
 * "Startup refusals"). Before serving, prove on the configured store — under
 * a dedicated, random key that no notebook uses — that it enforces the three
 * conditional-write guarantees the publication protocol rests on:
 *
 * 1. create-only (`If-None-Match: *`): a second create of an existing key loses;
 * 2. compare-and-swap (`If-Match`): a wrong or stale ETag loses, the current one wins;
 * 3. exactly one winner among concurrent conditional writers.
 *
 * Some backends (the S3 layer of GCS, some proxies) ignore the conditions and
 * answer 200 to everything; on such a store two commits would silently
 * overwrite each other and acknowledged edits would be lost. The probe is the
 * only defence (docs/decisions/0013-the-store-is-probed-before-use.md). An
 * operational failure (denied access, unknown key id, expired login, missing
 * bucket, unreachable endpoint, an endpoint that does not answer within the
 * call deadline of a store bounded by one, store/deadline.ts) also refuses,
 * with a cause that names it and advice that says what to set
 * (operationalFailure).
 *
 * The result's `cause` is one short sentence for the operator. It is built
 * only from fixed text and the S3 error code / HTTP status that s3.ts puts in
 * its messages — never the probe key, an object key, an id, a credential or
 * the endpoint — so it is safe to print as the INCOMPATIBLE_STORE diagnostic.
 *
 * Every key the probe may have written is deleted afterwards, whatever
 * happened; a failed delete is ignored (the refusal or the success is what
 * matters, and a leftover `probe/…` key is never read by the engine).
 */
import { randomHex } from "../contract/random-hex.ts";
import { DeadlinePassed, deadlineText } from "./deadline.ts";
import { type ConditionalWrite, type ObjectStore, StoreError } from "./object-store.ts";

/**
 * `writeDenied`: the store refused the probe's first write for access
 * (AccessDenied and the like) — these credentials may still read it
 * (probeReads). `operational`: the cause is not a verdict on the
 * conditions but a failure to reach or use the store (operationalCause).
 */
export type ProbeResult = { ok: true } | { ok: false; cause: string; advice?: string; writeDenied?: true; operational?: true };

export interface ProbeOptions {
  /** How many writers race for one key in the concurrency checks (default 8). */
  writers?: number;
  /** Source of the probe id's randomness (tests); default: crypto. */
  random?: () => number;
}

const DEFAULT_WRITERS = 8;
/**
 * A race in which no writer landed (every answer a loss or an unknown
 * outcome) proves nothing either way; it is run again this many times in all
 * before the probe gives up on it.
 */
const RACE_ROUNDS = 3;

/** The longest the probe waits for its clean-up before answering. */
const CLEANUP_BOUND_MS = 5_000;

/** A property of the store that contradicts the protocol: the probe's verdict. */
class Incompatible extends Error {
  override readonly name = "Incompatible";
}

const encode = (s: string) => new TextEncoder().encode(s);
const decode = (b: Uint8Array) => new TextDecoder().decode(b);

function probeId(random: (() => number) | undefined): string {
  if (random !== undefined) {
    return Array.from({ length: 16 }, () => Math.min(15, Math.floor(random() * 16)).toString(16)).join("");
  }
  return randomHex(8);
}

export async function probeStore(store: ObjectStore, options: ProbeOptions = {}): Promise<ProbeResult> {
  const writers = options.writers ?? DEFAULT_WRITERS;
  if (!Number.isInteger(writers) || writers < 2) throw new RangeError("probeStore: writers must be an integer of at least 2");
  // Under `probe/`, which the scrubber redacts and no notebook key uses; the
  // random id keeps probes of concurrently starting processes apart.
  const base = `probe/${probeId(options.random)}/`;
  const swapKey = `${base}swap`;
  const createKey = `${base}create`;
  // Keys a write may have landed on (won, or outcome unknown): deleted at the end.
  const written = new Set<string>();
  const track = async (key: string, write: () => Promise<ConditionalWrite>): Promise<ConditionalWrite> => {
    try {
      const result = await write();
      if (result.ok) written.add(key);
      return result;
    } catch (e) {
      // A definite failure wrote nothing; anything else may have landed.
      if (!(e instanceof StoreError && e.outcome === "failed")) written.add(key);
      throw e;
    }
  };

  try {
    await checkCreateOnly(store, swapKey, track);
    await checkCompareAndSwap(store, swapKey, track);
    await race(store, swapKey, writers, "compare-and-swap", track);
    await race(store, createKey, writers, "create-only", track);
    return { ok: true };
  } catch (e) {
    if (e instanceof Incompatible) return { ok: false, cause: e.message };
    return { ok: false, ...operationalFailure(e), operational: true, ...(isAccessDenial(e) && written.size === 0 ? { writeDenied: true as const } : {}) };
  } finally {
    await cleanUp(store, written);
  }
}

/**
 * What read access alone can prove, for the commands that only read the
 * store (a reader's pull, log, show, export): the credentials, the bucket
 * and the permission to read and list under the prefix. A read of a key no
 * notebook uses answers "absent" only with list permission (S3 answers 403
 * for a missing key without it), and the listing of its directory is
 * empty. Nothing is written, so the conditional writes are not proved:
 * these commands make none.
 */
export async function probeReads(store: ObjectStore, options: Pick<ProbeOptions, "random"> = {}): Promise<ProbeResult> {
  const base = `probe/${probeId(options.random)}/`;
  try {
    if ((await store.get(`${base}read`)) !== null) throw new Incompatible("the store answered a read of a key no one wrote with an object");
    await store.list(base);
    return { ok: true };
  } catch (e) {
    if (e instanceof Incompatible) return { ok: false, cause: e.message };
    return { ok: false, ...operationalFailure(e) };
  }
}

/** An answer refusing access by name (not a bad key or an expired login): the permissions are the matter. */
function isAccessDenial(error: unknown): boolean {
  if (!(error instanceof StoreError)) return false;
  const { code } = storeAnswer(error);
  return code === "AccessDenied" || code === "AllAccessDisabled";
}

/**
 * Whether the store refused a request for access, as operationalCause
 * words it: an access code, or a 403 that names no other cause. doctor
 * counts such a request as a permission denied, not as a failure.
 */
export function deniesAccess(error: unknown): boolean {
  return error instanceof StoreError && operationalCause(error).startsWith(ACCESS_DENIED);
}

/**
 * The store's refusal of the credentials a call went as — access denied, an
 * unknown key id, a wrong secret, expired or invalid credentials, none at
 * all — in operationalCause's words, found on `error` or its causes; null
 * for any other failure. A retry cannot fix such a refusal, though the
 * failure's code may call itself retryable: the surfaces say so, and drop
 * the probe's record of these credentials, so the next start probes again.
 */
export function credentialsRefusal(error: unknown): string | null {
  for (let e = error, depth = 0; e instanceof Error && depth < 8; e = e.cause, depth++) {
    if (!(e instanceof StoreError) || e instanceof DeadlinePassed) continue;
    const failure = operationalFailure(e);
    if (failure.cause.startsWith(ACCESS_DENIED) || CREDENTIAL_CODES.has(storeAnswer(e).code ?? "")) return operationalSentence(failure);
  }
  return null;
}

/** The codes of operationalCause that refuse the credentials themselves (access denials aside). */
const CREDENTIAL_CODES = new Set([
  "InvalidAccessKeyId",
  "SignatureDoesNotMatch",
  "ExpiredToken",
  "ExpiredTokenException",
  "TokenRefreshRequired",
  "RequestExpired",
  "InvalidToken",
  "InvalidClientTokenId",
  "UnrecognizedClientException",
  "CredentialsProviderError",
]);

/**
 * The error code and HTTP status a store puts in its messages, and nothing
 * else (s3.ts: "s3 get: AccessDenied (403)", "s3 putIfAbsent: ECONNREFUSED";
 * sqlite.ts: "sqlite get: SQLITE_BUSY").
 */
function storeAnswer(error: StoreError): { code: string | undefined; status: number | undefined } {
  const m = /^\S+ \w+: ([^\s;(]+)(?: \((\d{3})\))?/.exec(error.message);
  return { code: m?.[1], status: m?.[2] !== undefined ? Number(m[2]) : undefined };
}

/**
 * Delete every key the probe may have written, ignoring failures. Bounded in
 * time: when the endpoint stopped answering (a black-holed address costs the
 * S3 store's connect timeout on every SDK attempt of every delete), waiting
 * would only delay the refusal; a leftover `probe/…` key is harmless, and the
 * deletes still in flight end when the caller closes the store.
 */
async function cleanUp(store: ObjectStore, keys: Set<string>): Promise<void> {
  const deletes = Promise.allSettled([...keys].map((key) => store.delete(key)));
  let timer: ReturnType<typeof setTimeout> | undefined;
  const bound = new Promise<void>((resolve) => {
    timer = setTimeout(resolve, CLEANUP_BOUND_MS);
  });
  try {
    await Promise.race([deletes, bound]);
  } finally {
    clearTimeout(timer);
  }
}

type Track = (key: string, write: () => Promise<ConditionalWrite>) => Promise<ConditionalWrite>;

async function readBack(store: ObjectStore, key: string): Promise<{ body: string; etag: string }> {
  const got = await store.get(key);
  // Without read-after-write consistency `current` could not be proved either.
  if (got === null) throw new Incompatible("the store lost an object it had just written (no read-after-write consistency)");
  return { body: decode(got.body), etag: got.etag };
}

async function checkCreateOnly(store: ObjectStore, key: string, track: Track): Promise<void> {
  const first = await track(key, () => store.putIfAbsent(key, encode("probe 1")));
  if (!first.ok) throw new Incompatible("the store refused a create-only write (If-None-Match) of a new object");
  const second = await track(key, () => store.putIfAbsent(key, encode("probe 2")));
  if (second.ok) throw new Incompatible("the store ignored If-None-Match: a create-only write replaced an existing object");
  // A store may also answer "lost" and write anyway.
  if ((await readBack(store, key)).body !== "probe 1") {
    throw new Incompatible("the store ignored If-None-Match: a refused create-only write replaced the object");
  }
}

async function checkCompareAndSwap(store: ObjectStore, key: string, track: Track): Promise<void> {
  // The engine swaps on the ETag it read, so the probe does too.
  const held = await readBack(store, key);
  // An ETag the object never had (S3 ETags of small objects are 32 hex digits).
  const wrong = held.etag === "0".repeat(32) ? "f".repeat(32) : "0".repeat(32);
  const guessed = await track(key, () => store.putIfMatch(key, encode("probe 3"), wrong));
  if (guessed.ok) throw new Incompatible("the store ignored If-Match: a write with a wrong ETag succeeded");
  if ((await readBack(store, key)).body !== "probe 1") {
    throw new Incompatible("the store ignored If-Match: a refused write with a wrong ETag replaced the object");
  }
  const swapped = await track(key, () => store.putIfMatch(key, encode("probe 4"), held.etag));
  if (!swapped.ok) throw new Incompatible("the store refused a compare-and-swap (If-Match) with the current ETag");
  // `held.etag` is stale now: a store that ignores If-Match, or that gives
  // different contents the same ETag, lets this through.
  const stale = await track(key, () => store.putIfMatch(key, encode("probe 5"), held.etag));
  if (stale.ok) throw new Incompatible("the store ignored If-Match: a write with a stale ETag succeeded");
  if ((await readBack(store, key)).body !== "probe 4") {
    throw new Incompatible("the store ignored If-Match: a refused write with a stale ETag replaced the object");
  }
}

/**
 * `writers` conditional writes at once — compare-and-swap on the current
 * ETag of `key`, or create-only on the absent `key` — and exactly one may
 * land. A writer may answer StoreError "unknown" (Ceph RGW answers 500 to
 * some losers of a race; a response may be lost): the stored body says who
 * won. No writer other than the one stored may claim the win, and no writer
 * that was told it lost may be the one stored.
 */
async function race(store: ObjectStore, key: string, writers: number, kind: "compare-and-swap" | "create-only", track: Track): Promise<void> {
  for (let round = 1; ; round++) {
    const before = kind === "compare-and-swap" ? await readBack(store, key) : null;
    const tag = `probe race ${round} writer `;
    const settled = await Promise.allSettled(
      Array.from({ length: writers }, (_, i) =>
        track(key, () =>
          before === null ? store.putIfAbsent(key, encode(`${tag}${i}`)) : store.putIfMatch(key, encode(`${tag}${i}`), before.etag),
        ),
      ),
    );
    for (const r of settled) {
      if (r.status === "rejected" && !(r.reason instanceof StoreError && r.reason.outcome === "unknown")) throw r.reason;
    }
    const claimed = settled.flatMap((r, i) => (r.status === "fulfilled" && r.value.ok ? [i] : []));
    if (claimed.length > 1) throw new Incompatible(`concurrent conditional writers (${kind}): ${claimed.length} winners`);

    const stored = await store.get(key);
    const body = stored === null ? null : decode(stored.body);
    const writer = body !== null && body.startsWith(tag) ? body.slice(tag.length) : null;
    const landed = writer !== null && /^\d+$/.test(writer) && Number(writer) < writers ? Number(writer) : null;
    if (landed === null) {
      // Nobody landed. A writer that claimed the win is contradicted by the
      // stored bytes; with no claim, the round proved nothing: run it again.
      if (claimed.length === 1) {
        throw new Incompatible(`concurrent conditional writers (${kind}): the winner's write is not what the store holds`);
      }
      if (body !== null && body !== before?.body) {
        throw new Incompatible(`concurrent conditional writers (${kind}): the store holds bytes no writer sent`);
      }
      if (round >= RACE_ROUNDS) throw new Incompatible(`concurrent conditional writers (${kind}): no writer won in ${RACE_ROUNDS} rounds`);
      continue;
    }
    if (claimed.length === 1 && claimed[0] !== landed) {
      throw new Incompatible(`concurrent conditional writers (${kind}): 2 winners (one claimed the win, another one's write is stored)`);
    }
    const own = settled[landed];
    if (own?.status === "fulfilled" && !own.value.ok) {
      throw new Incompatible(`concurrent conditional writers (${kind}): a writer was told it lost, yet its write is stored`);
    }
    return;
  }
}

/** How operationalCause's sentence for a refusal for access begins (deniesAccess reads it). */
const ACCESS_DENIED = "access denied";

/**
 * An operational failure in words: `cause` names it, `advice` says what to
 * set or do — "call again" only where a retry can help (a server error, a
 * lost connection), never for a cause a retry cannot fix (no region, bad
 * credentials, a wrong endpoint or bucket, an untrusted certificate, a
 * clock off). Built from the error code and HTTP status only (storeAnswer).
 */
export interface OperationalFailure {
  cause: string;
  advice: string;
}

const CHECK_ENDPOINT = "check --endpoint (or AWS_ENDPOINT_URL_S3)";
const CALL_AGAIN = "call again; if it persists, look at the store";

/** Each known code's cause (`what`: the code and status in parentheses) and advice. */
const FAILURES: Record<string, (what: string) => OperationalFailure> = {
  RegionMissing: () => ({ cause: "no region is configured (the AWS SDK found none)", advice: "set --region or S3_REGION (or AWS_REGION, or a region in the AWS profile)" }),
  CredentialsProviderError: () => ({
    cause: "no credentials were found (the AWS SDK's default chain gave none)",
    advice: "set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or AWS_PROFILE, or give the machine a role",
  }),
  InvalidAccessKeyId: (w) => ({ cause: `the access key id is not known to the store${w}`, advice: "check AWS_ACCESS_KEY_ID (or the profile's key) against the store's users" }),
  SignatureDoesNotMatch: (w) => ({
    cause: `the credentials were refused: the secret access key does not match the access key id${w}`,
    advice: "check AWS_SECRET_ACCESS_KEY (or the profile's secret)",
  }),
  ExpiredToken: (w) => ({ cause: `expired credentials${w}`, advice: "renew them: log in again, or get a new AWS_SESSION_TOKEN" }),
  InvalidToken: (w) => ({ cause: `the credentials' session token is not valid${w}`, advice: "renew the session (AWS_SESSION_TOKEN), or unset it for long-term keys" }),
  AccessDenied: (w) => ({ cause: `${ACCESS_DENIED}${w}`, advice: "give these credentials docs/s3.md's writer's policy (Least privilege), or its reader's for an agent that only reads" }),
  RequestTimeTooSkewed: (w) => ({
    cause: `this machine's clock is too far from the store's${w}`,
    advice: "set this machine's clock (NTP): signed requests more than 15 minutes off are refused",
  }),
  NoSuchBucket: (w) => ({ cause: `the bucket does not exist${w}`, advice: `check the bucket in --store (or S3_BUCKET), and ${CHECK_ENDPOINT}` }),
  PermanentRedirect: (w) => ({ cause: `the bucket is in another region or behind another endpoint${w}`, advice: `set --region to the bucket's region, or ${CHECK_ENDPOINT}` }),
  ENOTFOUND: (w) => ({ cause: `the endpoint's host name does not resolve${w}`, advice: `${CHECK_ENDPOINT} and this machine's DNS` }),
  EAI_AGAIN: (w) => ({ cause: `the endpoint's host name could not be resolved for now${w}`, advice: `call again; if it persists, ${CHECK_ENDPOINT} and this machine's DNS` }),
  ECONNREFUSED: (w) => ({ cause: `the endpoint refused the connection${w}`, advice: `${CHECK_ENDPOINT}: its host and port, and that the server runs` }),
  EHOSTUNREACH: (w) => ({ cause: `the endpoint cannot be reached${w}`, advice: `${CHECK_ENDPOINT} and the network between` }),
  ECONNRESET: (w) => ({ cause: `the endpoint dropped the connection${w}`, advice: `call again; if it persists, ${CHECK_ENDPOINT} and any proxy between` }),
  ConnectTimeout: (w) => ({ cause: `the endpoint did not accept a connection in time${w}`, advice: `${CHECK_ENDPOINT}, and the network or firewall between` }),
  IdleTimeout: (w) => ({ cause: `the endpoint stopped answering in the middle of a request${w}`, advice: `call again; if it persists, ${CHECK_ENDPOINT} and the server` }),
  RequestTimeout: (w) => ({ cause: `the store timed out waiting for the request's bytes${w}`, advice: "call again; if it persists, look at the network between (a slow or lossy link)" }),
  UntrustedCertificate: (w) => ({
    cause: `the endpoint's TLS certificate is not trusted${w}`,
    advice: "give its CA's PEM file in NODE_EXTRA_CA_CERTS (never turn verification off), or check --endpoint",
  }),
  CertificateName: (w) => ({ cause: `the endpoint's TLS certificate does not name its host${w}`, advice: "use in --endpoint the host name the certificate names" }),
  NotTls: (w) => ({ cause: `the endpoint does not speak TLS${w}`, advice: "use http:// in --endpoint, or the server's TLS port" }),
  TlsRefused: (w) => ({ cause: `the endpoint refused the TLS handshake${w}`, advice: `${CHECK_ENDPOINT}: it must offer TLS 1.2 or later` }),
};

/** Codes that say the same as one of FAILURES. */
const SAME_AS: Record<string, string> = {
  AllAccessDisabled: "AccessDenied",
  AccountProblem: "AccessDenied",
  ExpiredTokenException: "ExpiredToken",
  TokenRefreshRequired: "ExpiredToken",
  RequestExpired: "ExpiredToken",
  InvalidClientTokenId: "InvalidToken",
  UnrecognizedClientException: "InvalidToken",
  AuthorizationHeaderMalformed: "PermanentRedirect",
  IllegalLocationConstraintException: "PermanentRedirect",
  ConnectionRefused: "ECONNREFUSED",
  ENETUNREACH: "EHOSTUNREACH",
  FailedToOpenSocket: "ECONNREFUSED",
  DEPTH_ZERO_SELF_SIGNED_CERT: "UntrustedCertificate",
  SELF_SIGNED_CERT_IN_CHAIN: "UntrustedCertificate",
  UNABLE_TO_VERIFY_LEAF_SIGNATURE: "UntrustedCertificate",
  UNABLE_TO_GET_ISSUER_CERT: "UntrustedCertificate",
  UNABLE_TO_GET_ISSUER_CERT_LOCALLY: "UntrustedCertificate",
  CERT_HAS_EXPIRED: "UntrustedCertificate",
  CERT_NOT_YET_VALID: "UntrustedCertificate",
  CERT_REVOKED: "UntrustedCertificate",
  CERT_UNTRUSTED: "UntrustedCertificate",
  CERT_REJECTED: "UntrustedCertificate",
  ERR_TLS_CERT_ALTNAME_INVALID: "CertificateName",
  HOSTNAME_MISMATCH: "CertificateName",
  ERR_SSL_WRONG_VERSION_NUMBER: "NotTls",
  ERR_SSL_SSLV3_ALERT_HANDSHAKE_FAILURE: "TlsRefused",
  ERR_SSL_TLSV1_ALERT_PROTOCOL_VERSION: "TlsRefused",
  ERR_SSL_UNSUPPORTED_PROTOCOL: "TlsRefused",
};

/** The entry of FAILURES a code stands for, if any. */
function knownFailure(code: string | undefined, outcome: StoreError["outcome"]): string | undefined {
  if (code === undefined) return undefined;
  // A timeout before the connection opened is a definite failure (s3.ts), one after it an unknown outcome.
  if (code === "TimeoutError") return outcome === "failed" ? "ConnectTimeout" : "IdleTimeout";
  const known = Object.hasOwn(SAME_AS, code) ? SAME_AS[code]! : code;
  return Object.hasOwn(FAILURES, known) ? known : undefined;
}

/**
 * The operator's sentence for a failure that is not a verdict on the
 * conditions: denied access, bad credentials, a missing bucket, an endpoint
 * that cannot be reached (operationalFailure's cause).
 */
export function operationalCause(error: unknown): string {
  return operationalFailure(error).cause;
}

/** operationalFailure's cause and advice, as one sentence: what the INCOMPATIBLE_STORE line and doctor print. */
export function operationalSentence(failure: OperationalFailure): string {
  return `${failure.cause}; ${failure.advice}`;
}

/** An operational failure's cause and what to do about it (OperationalFailure). */
export function operationalFailure(error: unknown): OperationalFailure {
  if (error instanceof DeadlinePassed) {
    return {
      cause: `the store did not answer within the call deadline (${deadlineText(error.deadlineMs)}; --deadline)`,
      advice: `${CHECK_ENDPOINT} and the network; a store this slow needs a longer --deadline`,
    };
  }
  if (!(error instanceof StoreError)) {
    // Not the store's answer (a bug, or a wrapper's own error): its message
    // could hold anything, so only a well-formed error name is shown.
    const name = error instanceof Error ? safeCode(error.name) : undefined;
    return { cause: `the probe failed unexpectedly${name ? ` (${name})` : ""}`, advice: CALL_AGAIN };
  }
  const answer = storeAnswer(error);
  const code = safeCode(answer.code);
  const { status } = answer;
  const what = [code, status].filter((x) => x !== undefined).join(", ");
  const paren = what === "" ? "" : ` (${what})`;
  const known = knownFailure(code, error.outcome);
  // A refusal for access shows its status (a 403 names no other cause); the other codes say it all alone.
  if (known !== undefined) return FAILURES[known]!(known === "AccessDenied" || known === "RequestTimeTooSkewed" ? paren : ` (${code})`);
  if (status === 403) return FAILURES.AccessDenied!(paren);
  if (status !== undefined && status >= 500) return { cause: `the store failed with a server error${paren}`, advice: CALL_AGAIN };
  if (error.outcome === "unknown") return { cause: `the store did not confirm a probe write${paren}`, advice: CALL_AGAIN };
  return { cause: `the store refused the probe${paren}`, advice: CALL_AGAIN };
}

/**
 * An error code is a short identifier. Anything else — or anything shaped
 * like an id, a hex digest or an access key id — is left out of the cause.
 */
function safeCode(s: string | undefined): string | undefined {
  if (s === undefined || !/^[A-Za-z][A-Za-z0-9_.-]{0,63}$/.test(s)) return undefined;
  if (/[A-Z0-9]{16}/.test(s) || /[0-9a-f]{16}/i.test(s)) return undefined;
  return s;
}
