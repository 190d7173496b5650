/**
 * The page's side of the JSON API (docs/web.md): typed reads of the
 * server's GET endpoints. The shapes are the engine's own (type-only
 * imports: nothing of the engine is bundled into the page). The cookie the
 * server set when the page was opened with its token goes with each request.
 */
import type { ErrorEnvelope } from "../../../contract/results.ts";
import type { AgentSummary } from "../../../engine/history/agents.ts";
import type { BlameResult } from "../../../engine/history/blame.ts";
import type { LogEntry } from "../../../engine/history/log.ts";

export type { AgentSummary, BlameResult, ErrorEnvelope, LogEntry };

export interface State {
  notebook: boolean;
  generation: number;
  oldestRetained: number;
  pollMs: number;
  error: ErrorEnvelope | null;
}

export interface LogPage {
  generation: number;
  oldestRetained: number;
  entries: LogEntry[];
  next: number | null;
}

export interface Show {
  entry: LogEntry;
  patch: string | null;
}

export interface Tree {
  generation: number;
  files: Array<{ path: string; size: number }>;
}

export interface FileText {
  generation: number;
  path: string;
  text: string | null;
  size: number;
}

export interface AgentPublication {
  generation: number;
  time: string;
  agent: string;
  filesChanged: number | null;
  base: number | null;
  crossed: Array<{ generation: number; agent: string }>;
}

export interface Agents {
  generation: number;
  oldestRetained: number;
  agents: AgentSummary[];
  publications: AgentPublication[];
}

/** A refusal the server answered with its error envelope (or a transport failure, as a plain message). */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly envelope: ErrorEnvelope | null,
    message: string,
  ) {
    super(message);
  }
}

type Params = Record<string, string | number | null | undefined>;

function query(params: Params): string {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== undefined && v !== null && v !== "") q.set(k, String(v));
  const s = q.toString();
  return s === "" ? "" : `?${s}`;
}

export async function getJson<T>(path: string, params: Params = {}): Promise<T> {
  const res = await fetch(`${path}${query(params)}`, { headers: { accept: "application/json" }, credentials: "same-origin" });
  const body = (await res.json().catch(() => null)) as { error?: ErrorEnvelope } | null;
  if (!res.ok) {
    const envelope = body?.error ?? null;
    throw new ApiError(res.status, envelope, envelope ? `${envelope.code} · ${envelope.reason}` : `HTTP ${res.status}`);
  }
  return body as T;
}
