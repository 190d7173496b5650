/**
 * The store registry: one entry per kind of store, keyed by its URL scheme
 * (docs/decisions/0001-two-tools-one-entry-per-operation.md,
 * docs/decisions/0002-settings-flags-and-environment.md): how its URL is
 * parsed, its secret-free identity (which keys each checkout's private
 * state), how it is opened, and whether the start-up probe must prove it
 * first. Adding a store is one entry here plus its ObjectStore in src/store/,
 * which must pass test/store/conformance.ts.
 */
import { join, resolve } from "node:path";
import type { ObjectStore } from "../store/object-store.ts";
import { openSqliteStore } from "../store/sqlite.ts";
import { queueIdentity } from "./process-identity.ts";
import { invalid, nonEmpty, type SettingSources } from "./settings.ts";

export interface SqliteSpec {
  kind: "sqlite";
  file: string;
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

export interface StoreKind<S extends StoreSpec> {
  /** What a store URL starts with. */
  scheme: string;
  /** The URL's form, for refusals. */
  usage: string;
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

/** The S3 settings beside the URL: endpoint, region, path style. */
function s3Settings({ flags, env }: SettingSources): Pick<S3Spec, "endpoint" | "region" | "forcePathStyle"> {
  const endpoint = nonEmpty(flags.endpoint) ?? nonEmpty(env.AWS_ENDPOINT_URL_S3) ?? nonEmpty(env.AWS_ENDPOINT_URL);
  const region = nonEmpty(flags.region) ?? nonEmpty(env.S3_REGION);
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
    });
  },
  probe: true,
};

const sqlite: StoreKind<SqliteSpec> = {
  scheme: "sqlite:",
  usage: "sqlite:PATH",
  parse(rest, { cwd }) {
    if (rest === "") throw invalid("the store URL sqlite:PATH needs a file path");
    return { kind: "sqlite", file: resolve(cwd, rest) };
  },
  byDefault({ env, home }) {
    const dataHome = nonEmpty(env.XDG_DATA_HOME) ?? join(home, ".local", "share");
    return { kind: "sqlite", file: join(dataHome, "slivingdoc", "store.db") };
  },
  identity: (spec) => `sqlite:${spec.file}`,
  // The embedded store is this project's own code: not probed.
  open: async (spec) => openSqliteStore(spec.file, queueIdentity()),
  probe: false,
  file: (spec) => spec.file,
};

/** Every kind of store, by the `kind` of its spec, in the order refusals list them. */
export const STORES: { [K in StoreSpec["kind"]]: StoreKind<Extract<StoreSpec, { kind: K }>> } = { s3, sqlite };

const kinds = Object.values(STORES) as StoreKind<StoreSpec>[];

export function storeKind<S extends StoreSpec>(spec: S): StoreKind<S> {
  return STORES[spec.kind] as unknown as StoreKind<S>;
}

/** The configured store: `--store` or SLIVINGDOC_STORE, else what the environment names, else the default. */
export function parseStore(from: SettingSources): StoreSpec {
  const url = nonEmpty(from.flags.store) ?? nonEmpty(from.env.SLIVINGDOC_STORE);
  if (url === undefined) {
    for (const kind of kinds) {
      const spec = kind.fromEnvironment?.(from);
      if (spec !== undefined) return spec;
    }
    return kinds.find((kind) => kind.byDefault)!.byDefault!(from);
  }
  const kind = kinds.find((k) => url.startsWith(k.scheme));
  if (kind === undefined) throw invalid(`the store must be ${kinds.map((k) => k.usage).join(" or ")}`);
  // A query or a fragment would be taken for part of the prefix or the file
  // name and kept in each checkout's state; a query is where a pasted
  // pre-signed URL carries its credential, so it is not repeated here.
  if (/[?#]/.test(url)) {
    throw invalid(`the store URL must not carry a query string or a fragment ('?' or '#'); give ${kinds.map((k) => k.usage).join(" or ")}`);
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
