/**
 * The store registry: one entry per kind of store, keyed by its URL scheme
 * (docs/decisions/0001-two-tools-one-entry-per-operation.md,
 * docs/decisions/0002-settings-flags-and-environment.md): how its URL and settings are parsed, its
 * flags, its secret-free identity (which keys each checkout's private
 * state), the environment variables holding its credentials, how it is
 * opened, what it does beyond every store's requests, and whether the
 * start-up probe must prove it first. Help, the parser, the refusals and
 * the scrubbing of secrets read them from here. Adding a store is one entry
 * here plus its ObjectStore in src/store/, which must pass
 * test/store/conformance.ts with the capabilities its entry declares.
 */
import { existsSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { callerDigest, NO_CAPABILITIES, type ObjectStore, type StoreCapabilities } from "../store/object-store.ts";
import { openSqliteStore } from "../store/sqlite.ts";
import { queueIdentity } from "./process-identity.ts";
import { type Env, invalid, nonEmpty, type SettingSources } from "./settings.ts";
import { SYSTEM_CLOCK } from "./system-clock.ts";

export interface SqliteSpec {
  kind: "sqlite";
  file: string;
  /**
   * Whether the file's directory may be made when it does not exist: the
   * default location's, or one `--create` asks for. Not a path given
   * otherwise: a mistyped one would begin a notebook nobody else sees.
   */
  makeDirectory?: boolean;
}

export interface S3Spec {
  kind: "s3";
  bucket: string;
  prefix: string;
  region?: string;
  endpoint?: string;
  forcePathStyle: boolean;
}

export type StoreSpec = SqliteSpec | S3Spec;

/** A command-line flag of a kind's settings (beside its URL), as help and the parser take it. */
export interface StoreFlag {
  type: "string" | "boolean";
  description: string;
  valueHint?: string;
}

export interface StoreKind<S extends StoreSpec> {
  /** What a store URL starts with. */
  scheme: string;
  /** The URL's form, for refusals and help. */
  usage: string;
  /** What prose calls the kind: "the S3 compatibility probe", "the embedded store". */
  label: string;
  /** What its stores do beyond every store's requests (object-store.ts); the conformance suite holds them to it. */
  capabilities: StoreCapabilities;
  /** Its settings' flags, by long name, each also an environment variable its `parse` reads (docs/cli.md). */
  flags?: Record<string, StoreFlag>;
  /** The environment variables that hold its credentials: no diagnostic or result carries their values. */
  secretEnv?: readonly string[];
  /**
   * Who asks, where the environment alone says it without loading the
   * store's library: the digest (callerDigest) of the access key id its
   * credentials chain takes from `env`; undefined where the chain would look
   * elsewhere, and the opened store's `caller` says.
   */
  caller?(env: Env): string | undefined;
  /** The spec from the URL after the scheme, or a start-up refusal. */
  parse(rest: string, from: SettingSources): S;
  /** The store the environment names when no URL is given (S3_BUCKET), if any. */
  fromEnvironment?(from: SettingSources): S | undefined;
  /** The store with nothing configured. Exactly one kind has it. */
  byDefault?(from: SettingSources): S;
  identity(spec: S): string;
  open(spec: S): Promise<ObjectStore>;
  /** Whether the start-up probe must prove the store enforces conditional writes (store/probe.ts). */
  probe: boolean;
  /** The local file the store lives in, which must stay outside the workspace root. */
  file?(spec: S): string;
  /** How `doctor` names the store and what it asks of the credentials (surfaces/doctor.ts). */
  examined: ExaminedWords;
}

/** Doctor's words for a kind of store. */
export interface ExaminedWords {
  /** "the S3 store". */
  name: string;
  /**
   * The permission an operator grants for each request doctor tries, and
   * where the policies that grant them are; absent for a store in a file of
   * this user's, on this machine, which has no credentials and no clock of
   * its own.
   */
  permissions?: { read: string; list: string; write: string; delete: string; policies: string };
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

/** A string flag's value; a flag given as a boolean is none. */
function stringFlag(flags: SettingSources["flags"], name: string): string | undefined {
  const value = flags[name];
  return typeof value === "string" ? value : undefined;
}

/** The S3 settings beside the URL: endpoint, region, path style. */
function s3Settings({ flags, env }: SettingSources): Pick<S3Spec, "endpoint" | "region" | "forcePathStyle"> {
  const endpoint = nonEmpty(stringFlag(flags, "endpoint")) ?? nonEmpty(env.AWS_ENDPOINT_URL_S3) ?? nonEmpty(env.AWS_ENDPOINT_URL);
  const region = nonEmpty(stringFlag(flags, "region")) ?? nonEmpty(env.S3_REGION);
  const forcePathStyle = flags["force-path-style"] === true || env.S3_FORCE_PATH_STYLE === "1" || env.S3_FORCE_PATH_STYLE === "true";
  return {
    ...(endpoint !== undefined ? { endpoint: validateEndpoint(endpoint) } : {}),
    ...(region !== undefined ? { region } : {}),
    forcePathStyle,
  };
}

const s3: StoreKind<S3Spec> = {
  scheme: "s3://",
  usage: "s3://BUCKET[/PREFIX]",
  label: "S3",
  // Nothing may coordinate S3's writers, nor write objects together (docs/storage-protocol.md).
  capabilities: NO_CAPABILITIES,
  flags: {
    region: { type: "string", description: "S3 region (env S3_REGION, then the AWS SDK's own)" },
    endpoint: { type: "string", description: "S3 endpoint URL (env AWS_ENDPOINT_URL_S3, AWS_ENDPOINT_URL)", valueHint: "URL" },
    "force-path-style": { type: "boolean", description: "S3 path-style addressing (env S3_FORCE_PATH_STYLE=1)" },
  },
  // Read by the AWS SDK's default chain, never from a flag.
  secretEnv: ["AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_ACCESS_KEY_ID"],
  // As the SDK's default chain takes it: the pair from the environment, unless AWS_PROFILE names a profile.
  caller: (env) => (!env.AWS_PROFILE && env.AWS_ACCESS_KEY_ID && env.AWS_SECRET_ACCESS_KEY ? callerDigest(env.AWS_ACCESS_KEY_ID) : undefined),
  parse(rest, from) {
    if (rest.includes("@")) throw invalid("the store URL must not carry user information");
    const slash = rest.indexOf("/");
    const bucket = slash < 0 ? rest : rest.slice(0, slash);
    const prefix = slash < 0 ? "" : rest.slice(slash + 1);
    return { kind: "s3", bucket: validateBucket(bucket), prefix: normalizePrefix(prefix), ...s3Settings(from) };
  },
  fromEnvironment(from) {
    const bucket = nonEmpty(from.env.S3_BUCKET);
    if (bucket === undefined) return undefined;
    return { kind: "s3", bucket: validateBucket(bucket), prefix: normalizePrefix(from.env.S3_PREFIX ?? ""), ...s3Settings(from) };
  },
  identity: (spec) => `s3://${spec.bucket}/${spec.prefix}@${spec.endpoint ?? "aws"}`,
  async open(spec) {
    // Loaded only when used: the SDK is large and most CLI calls use one store.
    const { createS3Store } = await import("../store/s3.ts");
    return createS3Store({
      bucket: spec.bucket,
      prefix: spec.prefix,
      ...(spec.region !== undefined ? { region: spec.region } : {}),
      ...(spec.endpoint !== undefined ? { endpoint: spec.endpoint } : {}),
      forcePathStyle: spec.forcePathStyle,
      clock: SYSTEM_CLOCK,
    });
  },
  probe: true,
  examined: {
    name: "the S3 store",
    permissions: { read: "s3:GetObject", list: "s3:ListBucket", write: "s3:PutObject", delete: "s3:DeleteObject", policies: "docs/s3.md, Least privilege" },
  },
};

const sqlite: StoreKind<SqliteSpec> = {
  scheme: "sqlite:",
  usage: "sqlite:PATH",
  label: "embedded",
  // Every writer is on this machine: they take turns, and a commit is one transaction (sqlite.ts).
  capabilities: { queue: true, putWith: true },
  flags: {
    // No environment variable: a directory is made where it is asked for each time, never by a setting left behind.
    create: { type: "boolean", description: "Make the directory of the embedded store's file that --store (or SLIVINGDOC_STORE) names, when it does not exist" },
  },
  parse(rest, { cwd, flags }) {
    if (rest === "") throw invalid("the store URL sqlite:PATH needs a file path");
    const file = resolve(cwd, rest);
    const makeDirectory = flags.create === true;
    // The diagnostic names no path (it may be private); the flag or variable that gave it is the user's to look at.
    if (!makeDirectory && !existsSync(dirname(file))) {
      throw invalid("the embedded store's directory does not exist; check --store (or SLIVINGDOC_STORE), or give --create to make it");
    }
    return { kind: "sqlite", file, makeDirectory };
  },
  byDefault({ env, home }) {
    const dataHome = nonEmpty(env.XDG_DATA_HOME) ?? join(home, ".local", "share");
    return { kind: "sqlite", file: join(dataHome, "slivingdoc", "store.db"), makeDirectory: true };
  },
  identity: (spec) => `sqlite:${spec.file}`,
  // The embedded store is this project's own code: not probed.
  open: async (spec) => openSqliteStore(spec.file, SYSTEM_CLOCK, { writer: queueIdentity(), makeDirectory: spec.makeDirectory === true }),
  probe: false,
  file: (spec) => spec.file,
  examined: { name: "the embedded store" },
};

/** Every kind of store, by the `kind` of its spec, in the order refusals list them. */
export const STORES: { [K in StoreSpec["kind"]]: StoreKind<Extract<StoreSpec, { kind: K }>> } = { s3, sqlite };

/** Every kind, in the order refusals and help list them. */
export const STORE_KINDS = Object.values(STORES) as StoreKind<StoreSpec>[];

/** The kind of store a configuration that names none gets. Exactly one kind has `byDefault`. */
export const DEFAULT_STORE_KIND = STORE_KINDS.find((kind) => kind.byDefault)!;

/** Doctor's words for the kind of store an ObjectStore's `kind` names. */
export function examinedWords(kind: string): ExaminedWords {
  return (STORES as Record<string, StoreKind<StoreSpec> | undefined>)[kind]?.examined ?? { name: "the store" };
}

/** The store URLs of every kind, as refusals and help give them: "s3://BUCKET[/PREFIX] or sqlite:PATH". */
export function storeUsages(): string {
  return STORE_KINDS.map((k) => k.usage).join(" or ");
}

export function storeKind<S extends StoreSpec>(spec: S): StoreKind<S> {
  return STORES[spec.kind] as unknown as StoreKind<S>;
}

/** The configured store: `--store` or SLIVINGDOC_STORE, else what the environment names, else the default. */
export function parseStore(from: SettingSources): StoreSpec {
  const url = nonEmpty(from.flags.store) ?? nonEmpty(from.env.SLIVINGDOC_STORE);
  if (url === undefined) {
    for (const kind of STORE_KINDS) {
      const spec = kind.fromEnvironment?.(from);
      if (spec !== undefined) return spec;
    }
    return DEFAULT_STORE_KIND.byDefault!(from);
  }
  const kind = STORE_KINDS.find((k) => url.startsWith(k.scheme));
  if (kind === undefined) throw invalid(`the store must be ${storeUsages()}`);
  // A query or a fragment would be taken for part of the prefix or the file
  // name and kept in each checkout's state; a query is where a pasted
  // pre-signed URL carries its credential, so it is not repeated here.
  if (/[?#]/.test(url)) {
    throw invalid(`the store URL must not carry a query string or a fragment ('?' or '#'); give ${storeUsages()}`);
  }
  return kind.parse(url.slice(kind.scheme.length), from);
}

/** A secret-free identity of the store location; it keys each checkout's private state. */
export function storeIdentity(spec: StoreSpec): string {
  return storeKind(spec).identity(spec);
}

/** Open the store, unprobed (verified-store.ts proves it first where its kind asks). */
export function openStore(spec: StoreSpec): Promise<ObjectStore> {
  return storeKind(spec).open(spec);
}
