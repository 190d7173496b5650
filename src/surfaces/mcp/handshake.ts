/**
 * What the server says of itself in the MCP handshake, and the answer to
 * `initialize` given before the MCP SDK is loaded.
 *
 * Loading the SDK (its zod schemas, ajv) takes about 20 ms of CPU, most of a
 * start-up (docs/performance.md, scenario `start-up`), and a host waits for the `initialize`
 * answer before it does anything else. So serve.ts answers a plain
 * `initialize` from here, then loads the SDK and replays the request into
 * the SDK's server, which thereby holds the client's capabilities as usual;
 * the transport drops that second answer (stdio.ts).
 *
 * The early answer must be the SDK's own, byte for byte. The SDK builds it
 * from the requested protocol version and the server's identity only, so
 * the early path accepts only requests the SDK's schemas certainly accept —
 * a conservative subset: anything else (other keys, `_meta`, icons, odd
 * capabilities, a malformed request) waits for the SDK, which answers it as
 * it always did. test/e2e/handshake.test.ts holds both to the same answers.
 */
import type { PathSets } from "../../contract/results.ts";
import { serverInstructions } from "../../contract/tools.ts";

/** The SDK's SUPPORTED_PROTOCOL_VERSIONS, newest first (its LATEST_PROTOCOL_VERSION); a test keeps them equal. */
export const SUPPORTED_PROTOCOL_VERSIONS = ["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05", "2024-10-07"] as const;

export interface ServerIdentity {
  info: { name: string; version: string };
  capabilities: { tools: Record<string, never> };
  instructions: string;
}

export function serverIdentity(version: string, notebookDir: string, sets: PathSets): ServerIdentity {
  return { info: { name: "slivingdoc", version }, capabilities: { tools: {} }, instructions: serverInstructions(notebookDir, sets) };
}

type Json = Record<string, unknown>;

const isPlain = (v: unknown): v is Json => typeof v === "object" && v !== null && Object.getPrototypeOf(v) === Object.prototype;
const only = (o: Json, keys: readonly string[]) => Object.keys(o).every((k) => keys.includes(k));
const optional = (o: Json, key: string, check: (v: unknown) => boolean) => !(key in o) || check(o[key]);
const isString = (v: unknown) => typeof v === "string";
const isBoolean = (v: unknown) => typeof v === "boolean";

function isClientInfo(v: unknown): boolean {
  return (
    isPlain(v) &&
    only(v, ["name", "version", "title", "websiteUrl", "description"]) &&
    isString(v.name) &&
    isString(v.version) &&
    ["title", "websiteUrl", "description"].every((k) => optional(v, k, isString))
  );
}

function isCapabilities(v: unknown): boolean {
  if (!isPlain(v) || !only(v, ["roots", "sampling", "elicitation", "experimental"])) return false;
  const roots = (r: unknown) => isPlain(r) && only(r, ["listChanged"]) && optional(r, "listChanged", isBoolean);
  const sampling = (s: unknown) => isPlain(s) && only(s, ["context", "tools"]) && Object.values(s).every(isPlain);
  const form = (f: unknown) => isPlain(f) && optional(f, "applyDefaults", isBoolean);
  const elicitation = (e: unknown) => isPlain(e) && only(e, ["form", "url"]) && optional(e, "form", form) && optional(e, "url", isPlain);
  const experimental = (x: unknown) => isPlain(x) && Object.values(x).every(isPlain);
  return optional(v, "roots", roots) && optional(v, "sampling", sampling) && optional(v, "elicitation", elicitation) && optional(v, "experimental", experimental);
}

/**
 * The SDK server's response to `message` when it is a plain `initialize`
 * request, or null when the early path cannot vouch for it.
 */
export function earlyInitializeResponse(message: unknown, identity: ServerIdentity): { result: Json; jsonrpc: "2.0"; id: string | number } | null {
  if (!isPlain(message) || !only(message, ["jsonrpc", "id", "method", "params"])) return null;
  const { id, params } = message;
  if (message.jsonrpc !== "2.0" || message.method !== "initialize") return null;
  if (!(typeof id === "string" || (typeof id === "number" && Number.isSafeInteger(id)))) return null;
  if (!isPlain(params) || !only(params, ["protocolVersion", "capabilities", "clientInfo"])) return null;
  if (!isString(params.protocolVersion) || !isCapabilities(params.capabilities) || !isClientInfo(params.clientInfo)) return null;
  const requested = params.protocolVersion as string;
  const protocolVersion = (SUPPORTED_PROTOCOL_VERSIONS as readonly string[]).includes(requested) ? requested : SUPPORTED_PROTOCOL_VERSIONS[0];
  // Key order as the SDK's Server._oninitialize and Protocol._onrequest build them.
  return {
    result: { protocolVersion, capabilities: identity.capabilities, serverInfo: identity.info, ...(identity.instructions ? { instructions: identity.instructions } : {}) },
    jsonrpc: "2.0",
    id,
  };
}
