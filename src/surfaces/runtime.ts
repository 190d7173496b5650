/**
 * Flags + environment → configuration → store → engine dependencies. Flags
 * win over environment variables (docs/design.md, Configuration). Every
 * invalid value is a startup refusal raised here, before any store is opened.
 */
import { mkdirSync, readFileSync, realpathSync, writeFileSync } from "node:fs";
import { homedir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { buildPathSets, parsePathSet } from "../contract/path-sets.ts";
import type { PathSets } from "../contract/results.ts";
import { StartupRefusal } from "../contract/startup.ts";
import type { EngineDeps } from "../engine/engine.ts";
import type { ProcessMemory } from "../engine/process-memory.ts";
import type { ObjectStore } from "../store/object-store.ts";
import { openSqliteStore } from "../store/sqlite.ts";
import { isAtOrBelow } from "../contract/path-containment.ts";
import { realpathLoose } from "./paths.ts";

export type StoreSpec =
  | { kind: "sqlite"; file: string }
  | { kind: "s3"; bucket: string; prefix: string; region?: string; endpoint?: string; forcePathStyle: boolean };

export interface RuntimeConfig {
  store: StoreSpec;
  pathSets: PathSets;
  privateRoot: string;
  workspaceRoot: string | null;
  /** Absent: the engine's default, applied by engineDeps (so resolving a configuration does not load the engine). */
  commitRetries?: number;
}

/** The configuration flags every subcommand accepts, by their long names. */
export interface ConfigFlags {
  store?: string;
  region?: string;
  endpoint?: string;
  "force-path-style"?: boolean;
  "workspace-root"?: string;
  "private-root"?: string;
  "commit-retries"?: string;
  "read-only-paths"?: string;
  "writable-paths"?: string;
}

export type Env = Record<string, string | undefined>;

const MAX_COMMIT_RETRIES = 100;

function nonEmpty(v: string | undefined): string | undefined {
  return v === undefined || v === "" ? undefined : v;
}

function invalid(message: string): StartupRefusal {
  return new StartupRefusal("invalid configuration", message);
}

/** S3 key prefixes: printable, no leading slash, no empty or dot segments. */
function normalizePrefix(prefix: string): string {
  const trimmed = prefix.replace(/\/+$/, "");
  if (trimmed === "") return "";
  if (
    trimmed.startsWith("/") ||
    Buffer.byteLength(trimmed) > 512 ||
    /[\u0000-\u001f\u007f\\]/.test(trimmed) ||
    trimmed.split("/").some((s) => s === "" || s === "." || s === "..")
  ) {
    throw invalid("the S3 object prefix must be relative, without empty, '.' or '..' segments, control characters or backslashes");
  }
  return `${trimmed}/`;
}

function validateBucket(bucket: string): string {
  // https://docs.aws.amazon.com/AmazonS3/latest/userguide/bucketnamingrules.html
  if (!/^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/.test(bucket)) {
    throw invalid("the S3 bucket name must be 3 to 63 lowercase letters, digits, dots or hyphens");
  }
  return bucket;
}

function validateEndpoint(endpoint: string): string {
  let url: URL;
  try {
    url = new URL(endpoint);
  } catch {
    throw invalid("the endpoint must be an http:// or https:// URL");
  }
  if (url.username !== "" || url.password !== "") {
    throw invalid("the endpoint URL must not carry user information; credentials come from the AWS SDK's default chain");
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") throw invalid("the endpoint must be an http:// or https:// URL");
  return endpoint;
}

function parseStore(flags: ConfigFlags, env: Env, cwd: string, home: string): StoreSpec {
  const url = nonEmpty(flags.store) ?? nonEmpty(env.SLIVINGDOC_STORE);
  const s3Common = () => {
    const endpoint = nonEmpty(flags.endpoint) ?? nonEmpty(env.AWS_ENDPOINT_URL_S3) ?? nonEmpty(env.AWS_ENDPOINT_URL);
    const region = nonEmpty(flags.region) ?? nonEmpty(env.S3_REGION);
    const forcePathStyle = flags["force-path-style"] === true || env.S3_FORCE_PATH_STYLE === "1" || env.S3_FORCE_PATH_STYLE === "true";
    return {
      ...(endpoint !== undefined ? { endpoint: validateEndpoint(endpoint) } : {}),
      ...(region !== undefined ? { region } : {}),
      forcePathStyle,
    };
  };
  if (url === undefined) {
    const bucket = nonEmpty(env.S3_BUCKET);
    if (bucket !== undefined) {
      return { kind: "s3", bucket: validateBucket(bucket), prefix: normalizePrefix(env.S3_PREFIX ?? ""), ...s3Common() };
    }
    const dataHome = nonEmpty(env.XDG_DATA_HOME) ?? join(home, ".local", "share");
    return { kind: "sqlite", file: join(dataHome, "slivingdoc", "store.db") };
  }
  if (url.startsWith("sqlite:")) {
    const file = url.slice("sqlite:".length);
    if (file === "") throw invalid("the store URL sqlite:PATH needs a file path");
    return { kind: "sqlite", file: resolve(cwd, file) };
  }
  if (url.startsWith("s3://")) {
    const rest = url.slice("s3://".length);
    if (rest.includes("@")) throw invalid("the store URL must not carry user information");
    const slash = rest.indexOf("/");
    const bucket = slash < 0 ? rest : rest.slice(0, slash);
    const prefix = slash < 0 ? "" : rest.slice(slash + 1);
    return { kind: "s3", bucket: validateBucket(bucket), prefix: normalizePrefix(prefix), ...s3Common() };
  }
  throw invalid("the store must be s3://BUCKET[/PREFIX] or sqlite:PATH");
}

function parseRetries(flags: ConfigFlags, env: Env): number | undefined {
  const raw = nonEmpty(flags["commit-retries"]) ?? nonEmpty(env.SLIVINGDOC_COMMIT_RETRIES);
  if (raw === undefined) return undefined;
  if (!/^\d+$/.test(raw) || Number(raw) > MAX_COMMIT_RETRIES) {
    throw invalid(`--commit-retries must be a whole number from 0 to ${MAX_COMMIT_RETRIES}`);
  }
  return Number(raw);
}

export function resolveConfig(flags: ConfigFlags, env: Env, cwd: string): RuntimeConfig {
  const home = nonEmpty(env.HOME) ?? homedir();
  const store = parseStore(flags, env, cwd, home);
  const commitRetries = parseRetries(flags, env);
  const pathSets = buildPathSets(
    parsePathSet("--read-only-paths", flags["read-only-paths"] ?? env.SLIVINGDOC_READ_ONLY_PATHS),
    parsePathSet("--writable-paths", flags["writable-paths"] ?? env.SLIVINGDOC_WRITABLE_PATHS),
  );
  const stateHome = nonEmpty(env.XDG_STATE_HOME) ?? join(home, ".local", "state");
  const privateRootRaw = nonEmpty(flags["private-root"]) ?? nonEmpty(env.SLIVINGDOC_PRIVATE_ROOT) ?? join(stateHome, "slivingdoc");
  const workspaceRaw = nonEmpty(flags["workspace-root"]) ?? nonEmpty(env.SLIVINGDOC_WORKSPACE_ROOT);
  const privateRoot = realpathLoose(resolve(cwd, privateRootRaw));
  const workspaceRoot = workspaceRaw === undefined ? null : realpathLoose(resolve(cwd, workspaceRaw));
  if (workspaceRoot !== null && (isAtOrBelow(workspaceRoot, privateRoot) || isAtOrBelow(privateRoot, workspaceRoot))) {
    throw invalid("the private root and the workspace root overlap; give them separate directories");
  }
  if (store.kind === "sqlite" && workspaceRoot !== null && isAtOrBelow(workspaceRoot, store.file)) {
    throw invalid("the store file is inside the workspace root; keep it outside the notebook");
  }
  return { store, pathSets, privateRoot, workspaceRoot, ...(commitRetries !== undefined ? { commitRetries } : {}) };
}

/**
 * Secrets the process can see, scrubbed from every diagnostic and result as
 * defence in depth (they should never reach one in the first place).
 */
export function runtimeSecrets(env: Env): string[] {
  return [env.AWS_SECRET_ACCESS_KEY, env.AWS_SESSION_TOKEN, env.AWS_ACCESS_KEY_ID].filter((v): v is string => !!v && v.length >= 8);
}

/** A secret-free identity of the store location; it keys each checkout's private state. */
export function storeIdentity(spec: StoreSpec): string {
  if (spec.kind === "sqlite") return `sqlite:${spec.file}`;
  return `s3://${spec.bucket}/${spec.prefix}@${spec.endpoint ?? "aws"}`;
}

/** How long a passed compatibility probe is trusted for one store location. */
export const PROBE_TRUST_MS = 24 * 60 * 60 * 1000;

/**
 * Open the configured store, proving first that an S3 store enforces the
 * conditional writes the protocol rests on (docs/design.md, The store and the
 * publication protocol). A passed probe is remembered per store location
 * under the private root for PROBE_TRUST_MS, so CLI calls do not pay for it
 * each time; a failed one is never cached. The embedded store is this
 * project's own code and is not probed.
 *
 * A trusted S3 store is opened on its first use (DeferredStore): opening it
 * loads the AWS SDK (~20 ms) and sends nothing, so nothing the start could
 * refuse is put off, and `serve` answers the handshake without it.
 */
export async function openVerifiedStore(config: RuntimeConfig, now: () => number = Date.now): Promise<ObjectStore> {
  if (config.store.kind !== "s3") return openStore(config.store);
  // Bun's hasher, not node:crypto's createHash, which costs ~2 ms to load; the same digest.
  const digest = new Bun.CryptoHasher("sha256").update(storeIdentity(config.store)).digest("hex");
  const marker = join(config.privateRoot, "probes", `${digest.slice(0, 32)}.json`);
  try {
    const passedAt = (JSON.parse(readFileSync(marker, "utf8")) as { passedAt?: unknown }).passedAt;
    if (typeof passedAt === "number" && now() - passedAt >= 0 && now() - passedAt < PROBE_TRUST_MS) {
      const spec = config.store;
      return new DeferredStore(spec.kind, () => openStore(spec));
    }
  } catch {
    /* no marker, or an unreadable one: probe */
  }
  const store = await openStore(config.store);
  const { probeStore } = await import("../store/probe.ts");
  const result = await probeStore(store);
  if (!result.ok) {
    await store.close();
    throw new StartupRefusal("INCOMPATIBLE_STORE", `the S3 compatibility probe failed: ${result.cause}`);
  }
  try {
    mkdirSync(dirname(marker), { recursive: true, mode: 0o700 });
    writeFileSync(marker, `${JSON.stringify({ passedAt: now() })}\n`, { mode: 0o600 });
  } catch {
    /* an unwritable cache only means probing again next time */
  }
  return store;
}

/** A store opened on its first use; `open()` opens it ahead of that (serve does, once the handshake is answered). */
export class DeferredStore implements ObjectStore {
  private opened: Promise<ObjectStore> | null = null;

  constructor(
    readonly kind: string,
    private readonly openNow: () => Promise<ObjectStore>,
  ) {}

  open(): Promise<ObjectStore> {
    this.opened ??= this.openNow();
    return this.opened;
  }

  get: ObjectStore["get"] = async (key) => (await this.open()).get(key);
  putIfAbsent: ObjectStore["putIfAbsent"] = async (key, body) => (await this.open()).putIfAbsent(key, body);
  putIfMatch: ObjectStore["putIfMatch"] = async (key, body, etag) => (await this.open()).putIfMatch(key, body, etag);
  list: ObjectStore["list"] = async (prefix) => (await this.open()).list(prefix);
  delete: ObjectStore["delete"] = async (key) => (await this.open()).delete(key);

  async close(): Promise<void> {
    const opened = this.opened;
    if (opened === null) return;
    await (await opened.catch(() => null))?.close();
  }
}

export async function openStore(spec: StoreSpec): Promise<ObjectStore> {
  if (spec.kind === "sqlite") return openSqliteStore(spec.file);
  // Loaded only when used: the SDK is large and most CLI calls use one store.
  const { createS3Store } = await import("../store/s3.ts");
  return createS3Store({
    bucket: spec.bucket,
    prefix: spec.prefix,
    ...(spec.region !== undefined ? { region: spec.region } : {}),
    ...(spec.endpoint !== undefined ? { endpoint: spec.endpoint } : {}),
    forcePathStyle: spec.forcePathStyle,
  });
}

export function isProcessAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === "EPERM";
  }
}

/**
 * When process `pid` started, as Linux tells it (field 22 of
 * /proc/PID/stat, in clock ticks since boot): with the id, it names one
 * process, so a lock held by a process whose id was reused is known stale.
 * Null elsewhere, where the id alone has to do.
 */
export function processStartTime(pid: number): string | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "latin1");
    // The command name (field 2) is in parentheses and may hold spaces.
    return stat.slice(stat.lastIndexOf(")") + 2).split(" ")[19] ?? null;
  } catch {
    return null;
  }
}

/** Creates the private root if needed; its real path. */
export function preparePrivateRoot(config: RuntimeConfig): string {
  mkdirSync(config.privateRoot, { recursive: true, mode: 0o700 });
  return realpathSync(config.privateRoot);
}

/** What this process keeps between calls: one for the whole process, shared by every call (made by engineDeps). */
let memory: ProcessMemory | undefined;

/** Before the process ends: write out what only its memory holds (a CLI call after its command, a server when it stops). */
export function flushProcessMemory(): void {
  memory?.flush();
}

/**
 * The engine's dependencies. This loads the engine (isomorphic-git and all):
 * callers about to run it call this, and not before — `serve` only once the
 * handshake is answered (docs/performance.md, S8).
 */
export function engineDeps(config: RuntimeConfig, store: ObjectStore): EngineDeps {
  const privateRoot = preparePrivateRoot(config);
  // A synchronous import on first use, not a static one: see above.
  const { DEFAULT_COMMIT_RETRIES } = require("../engine/engine.ts") as typeof import("../engine/engine.ts");
  const { ProcessMemory } = require("../engine/process-memory.ts") as typeof import("../engine/process-memory.ts");
  memory ??= new ProcessMemory();
  return {
    store,
    storeId: storeIdentity(config.store),
    privateRoot,
    self: { pid: process.pid, isAlive: isProcessAlive, startTime: processStartTime },
    memory,
    commitRetries: config.commitRetries ?? DEFAULT_COMMIT_RETRIES,
    pathSets: config.pathSets,
  };
}

