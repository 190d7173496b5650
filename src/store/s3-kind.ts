/**
 * The S3 kind of store: its URL `s3://BUCKET[/PREFIX]` (or S3_BUCKET and
 * S3_PREFIX), its flags and their environment variables, parsed and
 * validated here before any network work, and how it is opened (s3.ts,
 * loaded only then: the SDK is large and most CLI calls use one store).
 */
import { type Env, invalid, nonEmpty, type SettingSources, stringFlag } from "../contract/settings.ts";
import type { StoreKind } from "./kind.ts";
import { callerDigest, NO_CAPABILITIES } from "./object-store.ts";

export interface S3Spec {
  kind: "s3";
  bucket: string;
  prefix: string;
  region?: string;
  endpoint?: string;
  forcePathStyle: boolean;
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
  const endpoint = nonEmpty(stringFlag(flags, "endpoint")) ?? nonEmpty(env.AWS_ENDPOINT_URL_S3) ?? nonEmpty(env.AWS_ENDPOINT_URL);
  const region = nonEmpty(stringFlag(flags, "region")) ?? nonEmpty(env.S3_REGION);
  const forcePathStyle = flags["force-path-style"] === true || env.S3_FORCE_PATH_STYLE === "1" || env.S3_FORCE_PATH_STYLE === "true";
  return {
    ...(endpoint !== undefined ? { endpoint: validateEndpoint(endpoint) } : {}),
    ...(region !== undefined ? { region } : {}),
    forcePathStyle,
  };
}

/** As the SDK's default chain takes it: the pair from the environment, unless AWS_PROFILE names a profile. */
function callerFromEnvironment(env: Env): string | undefined {
  return !env.AWS_PROFILE && env.AWS_ACCESS_KEY_ID && env.AWS_SECRET_ACCESS_KEY ? callerDigest(env.AWS_ACCESS_KEY_ID) : undefined;
}

export const S3_KIND: StoreKind<S3Spec> = {
  scheme: "s3://",
  usage: "s3://BUCKET[/PREFIX]",
  label: "S3",
  // Nothing may coordinate S3's writers, nor write objects together (docs/storage-protocol.md).
  capabilities: NO_CAPABILITIES,
  // A look is a request (a conditional GET, answered without a body while nothing moved): an idle server settles at one every 16 s.
  looks: { shortestMs: 2_000, longestMs: 16_000 },
  flags: {
    region: { type: "string", description: "S3 region (env S3_REGION, then the AWS SDK's own)" },
    endpoint: { type: "string", description: "S3 endpoint URL (env AWS_ENDPOINT_URL_S3, AWS_ENDPOINT_URL)", valueHint: "URL" },
    "force-path-style": { type: "boolean", description: "S3 path-style addressing (env S3_FORCE_PATH_STYLE=1)" },
  },
  // Read by the AWS SDK's default chain, never from a flag.
  secretEnv: ["AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_ACCESS_KEY_ID"],
  caller: callerFromEnvironment,
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
  async open(spec, { clock }) {
    // Loaded only when used: the SDK is large and most CLI calls use one store.
    const { createS3Store } = await import("./s3.ts");
    return createS3Store({
      bucket: spec.bucket,
      prefix: spec.prefix,
      ...(spec.region !== undefined ? { region: spec.region } : {}),
      ...(spec.endpoint !== undefined ? { endpoint: spec.endpoint } : {}),
      forcePathStyle: spec.forcePathStyle,
      clock,
    });
  },
  probe: true,
  examined: {
    name: "the S3 store",
    permissions: { read: "s3:GetObject", list: "s3:ListBucket", write: "s3:PutObject", delete: "s3:DeleteObject", policies: "docs/s3.md, Least privilege" },
  },
};
