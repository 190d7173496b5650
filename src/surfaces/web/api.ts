/**
 * `slivingdoc web`'s JSON API (docs/web.md, "JSON API"): GET only, each
 * answer read from the kept history (kept-history.ts) by the engine's
 * history functions, the same the CLI's `log`, `show`, `blame` and `agents`
 * run. A failure is an error envelope (contract/results.ts), never more:
 * a query the API cannot take is 400, a generation or a file the history
 * does not have is 404 (with the envelope the CLI gives for it), a store
 * that failed is 503.
 */
import { DomainError } from "../../contract/errors.ts";
import type { ErrorEnvelope } from "../../contract/results.ts";
import type { Code } from "../../contract/tokens.ts";
import type { KeptHistory } from "./kept-history.ts";
import type { Poller } from "./poller.ts";
import { SECURITY_HEADERS } from "./security.ts";

export interface ApiContext {
  kept: KeptHistory;
  poller: Poller;
  envelope: (error: unknown) => ErrorEnvelope;
}

/** The most entries a page of the log holds, and how many when not asked. */
const MAX_LIMIT = 200;
const DEFAULT_LIMIT = 50;

const STATUS: Record<Code, number> = {
  INVALID_REQUEST: 400,
  CONTENT_CONFLICT: 409,
  STORAGE_INTEGRITY: 500,
  STORAGE_FAILURE: 503,
  REMOTE_BUSY: 503,
  RECOVERY_FAILURE: 503,
};

export function json(body: unknown, status = 200): Response {
  return new Response(JSON.stringify(body), { status, headers: { ...SECURITY_HEADERS, "Content-Type": "application/json; charset=utf-8" } });
}

export function errorResponse(envelope: ErrorEnvelope, status = STATUS[envelope.code]): Response {
  return json({ error: envelope }, status);
}

/** A query the API cannot take: the caller's to correct. */
class BadQuery extends DomainError {
  constructor(message: string) {
    super("MALFORMED_INPUT", message);
  }
}

/** The query's parameters, each checked as the API takes it. */
class Query {
  constructor(private readonly params: URLSearchParams) {}

  text(name: string, required = false): string | undefined {
    const value = this.params.get(name) ?? undefined;
    if (value === undefined || value === "") {
      if (required) throw new BadQuery(`The query needs ${name}.`);
      return undefined;
    }
    return value;
  }

  count(name: string, max = Number.MAX_SAFE_INTEGER, required = false): number | undefined {
    const value = this.text(name, required);
    if (value === undefined) return undefined;
    if (!/^[0-9]{1,16}$/.test(value) || Number(value) < 1 || Number(value) > max) {
      throw new BadQuery(`${name} must be a whole number from 1 to ${max}; got "${value.slice(0, 40)}".`);
    }
    return Number(value);
  }

  /** `path`, a notebook file or directory, as `log --path` takes one (./notes/ is notes). */
  path(required: boolean): string | undefined {
    const value = this.text("path", required);
    if (value === undefined) return undefined;
    const path = value.split("/").filter((s) => s !== "" && s !== ".").join("/");
    if (path === "" || path.split("/").includes("..")) throw new BadQuery(`path must name a notebook file or directory; got "${value.slice(0, 200)}".`);
    return path;
  }

  date(name: string): Date | undefined {
    const value = this.text(name);
    if (value === undefined) return undefined;
    const ms = Date.parse(value);
    if (Number.isNaN(ms)) throw new BadQuery(`${name} must be a date and time such as 2026-11-30T14:00:00Z; got "${value.slice(0, 40)}".`);
    return new Date(ms);
  }
}

type Handler = (q: Query, ctx: ApiContext) => Promise<unknown>;

/** A page of the log, as /api/log and /api/history (one path's) ask for it. */
async function logOf(q: Query, ctx: ApiContext, path: string | undefined): Promise<unknown> {
  const { logPage } = await import("../../engine/history/log.ts");
  const limit = q.count("limit", MAX_LIMIT) ?? DEFAULT_LIMIT;
  const before = q.count("before");
  const agent = q.text("agent");
  const since = q.date("since");
  return ctx.kept.use((h) =>
    logPage(h, {
      limit,
      ...(before !== undefined ? { before } : {}),
      ...(agent !== undefined ? { agent } : {}),
      ...(since !== undefined ? { since } : {}),
      ...(path !== undefined ? { paths: [path] } : {}),
    }),
  );
}

const ROUTES: Record<string, Handler> = {
  async "/api/state"(_q, ctx) {
    await ctx.poller.ready;
    return ctx.poller.state;
  },
  "/api/log": (q, ctx) => logOf(q, ctx, q.path(false)),
  "/api/history": (q, ctx) => logOf(q, ctx, q.path(true)),
  async "/api/show"(q, ctx) {
    const generation = q.count("generation", undefined, true)!;
    const { showOf } = await import("../../engine/history/log.ts");
    const { showPatch } = await import("../patch.ts");
    return ctx.kept.use(async (h) => {
      const { entry, changes } = await showOf(h, { generation });
      return { entry, patch: changes === null ? null : await showPatch(changes) };
    });
  },
  async "/api/tree"(q, ctx) {
    const generation = q.count("generation");
    const { generationListing } = await import("../../engine/history/files.ts");
    return ctx.kept.use((h) => generationListing(h, generation));
  },
  async "/api/file"(q, ctx) {
    const generation = q.count("generation");
    const path = q.text("path", true)!;
    const { generationFile } = await import("../../engine/history/files.ts");
    return ctx.kept.use((h) => generationFile(h, path, generation));
  },
  async "/api/blame"(q, ctx) {
    const generation = q.count("generation");
    const path = q.text("path", true)!;
    const { blameOf } = await import("../../engine/history/blame.ts");
    return ctx.kept.use((h) => blameOf(h, { path, ...(generation !== undefined ? { generation } : {}) }));
  },
  async "/api/agents"(q, ctx) {
    const since = q.date("since");
    const { agentsChart } = await import("../../engine/history/agents.ts");
    return ctx.kept.use((h, memo) => memo(`agents ${since?.getTime() ?? ""}`, () => agentsChart(h, since !== undefined ? { since } : {})));
  },
};

/** The answer to an authorized GET of `url` under /api/. */
export async function api(url: URL, ctx: ApiContext): Promise<Response> {
  const route = ROUTES[url.pathname];
  if (route === undefined) return errorResponse(ctx.envelope(new BadQuery(`There is no ${url.pathname.slice(0, 60)} in this API.`)), 404);
  try {
    return json(await route(new Query(url.searchParams), ctx));
  } catch (e) {
    const envelope = ctx.envelope(e);
    // Past the query's own checks, an invalid request is a generation or a file the history does not have.
    const missing = e instanceof DomainError && !(e instanceof BadQuery) && e.code === "INVALID_REQUEST";
    return errorResponse(envelope, missing ? 404 : STATUS[envelope.code]);
  }
}
