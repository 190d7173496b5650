/**
 * `slivingdoc web`: a read-only live view of the notebook's history in a
 * browser (docs/web.md). One HTTP server on a loopback address, the page's
 * files (assets.ts), a JSON API over the kept history (api.ts), and
 * `/events`, where every page hears of a new generation from the one
 * poller (poller.ts). Who may ask is security.ts's.
 */
import { DomainError } from "../../contract/errors.ts";
import type { ErrorEnvelope } from "../../contract/results.ts";
import type { HistoryDeps } from "../../engine/history/read.ts";
import { boundedStore, deadlineIn } from "../../store/deadline.ts";
import { api, errorResponse } from "./api.ts";
import { KeptHistory } from "./kept-history.ts";
import { Poller, type WebState } from "./poller.ts";
import { authorized, hostAllowed, SECURITY_HEADERS, tokenMatches, tokenRedirect } from "./security.ts";

export interface WebOptions {
  /** The history's dependencies; its store read only (store-view.ts). */
  deps: HistoryDeps;
  /** How long one store read (a poll, a history's opening) may take. */
  deadlineMs: number;
  pollMs: number;
  /** 0: a free port. */
  port: number;
  /** The address to listen on. */
  hostname: string;
  /** `--listen`, a Host the server answers besides the loopback names; null when not given. */
  listen: string | null;
  token: string;
  envelope: (error: unknown) => ErrorEnvelope;
}

export interface WebServer {
  port: number;
  /** Stop answering, close every page's events and the kept history. */
  stop(): Promise<void>;
}

/** A comment every 15 s keeps an idle event stream open through proxies and the browser's own timeouts. */
const PING_MS = 15_000;

const encoder = new TextEncoder();

function plain(status: number, text: string, headers: Record<string, string> = {}): Response {
  return new Response(`${text}\n`, { status, headers: { ...SECURITY_HEADERS, "Content-Type": "text/plain; charset=utf-8", ...headers } });
}

/** The event streams of the pages connected now. */
class EventStreams {
  private readonly streams = new Set<ReadableStreamDefaultController<Uint8Array>>();
  private readonly ping = setInterval(() => this.send(": ping\n\n"), PING_MS);

  open(state: WebState): Response {
    let mine: ReadableStreamDefaultController<Uint8Array>;
    const stream = new ReadableStream<Uint8Array>({
      start: (controller) => {
        mine = controller;
        this.streams.add(controller);
        controller.enqueue(encoder.encode(stateEvent(state)));
      },
      cancel: () => {
        this.streams.delete(mine);
      },
    });
    return new Response(stream, { headers: { ...SECURITY_HEADERS, "Content-Type": "text/event-stream; charset=utf-8" } });
  }

  send(text: string): void {
    const bytes = encoder.encode(text);
    for (const stream of this.streams) {
      try {
        stream.enqueue(bytes);
      } catch {
        // A page gone between its last read and now.
        this.streams.delete(stream);
      }
    }
  }

  close(): void {
    clearInterval(this.ping);
    for (const stream of this.streams) {
      try {
        stream.close();
      } catch {
        // Already closed by its page.
      }
    }
    this.streams.clear();
  }
}

function stateEvent(state: WebState): string {
  return `event: state\ndata: ${JSON.stringify(state)}\n\n`;
}

/** Start the server: the port is listening, and the first poll under way (the state the first page gets). */
export async function startWeb(options: WebOptions): Promise<WebServer> {
  const { openHistory, closeHistory } = await import("../../engine/history/read.ts");
  const { webAssets } = await import("./assets.ts");
  const assets = await webAssets();
  const bounded = () => boundedStore(options.deps.store, deadlineIn(options.deadlineMs));
  const kept = new KeptHistory(() => openHistory({ ...options.deps, store: bounded() }), closeHistory);
  const events = new EventStreams();
  const poller = new Poller({ store: bounded, kept, pollMs: options.pollMs, envelope: options.envelope, changed: (s) => events.send(stateEvent(s)) });
  const ctx = { kept, poller, envelope: options.envelope };
  const denied = (url: URL) =>
    url.pathname.startsWith("/api/") ? errorResponse(options.envelope(unauthorized()), 401) : plain(401, "slivingdoc web: open the URL the command printed (with its token).");
  const server = listen(events, {
    port: options.port,
    hostname: options.hostname,
    development: false,
    // A second `web` on a busy port is refused, not let to share it and answer half the requests.
    reusePort: false,
    // An event stream is idle between pings; the others answer at once.
    idleTimeout: 60,
    async fetch(request, srv) {
      const url = new URL(request.url);
      if (!hostAllowed(request.headers.get("host"), options.listen)) return plain(403, "slivingdoc web answers only requests to localhost, 127.0.0.1 or [::1].");
      const given = request.method === "GET" && url.pathname === "/" ? url.searchParams.get("token") : null;
      if (given !== null) return tokenMatches(given, options.token) ? tokenRedirect(options.token) : denied(url);
      if (!authorized(request, options.token)) return denied(url);
      if (request.method !== "GET") {
        return url.pathname.startsWith("/api/") ? errorResponse(options.envelope(notGet(request.method)), 405) : plain(405, "slivingdoc web only reads: GET.", { Allow: "GET" });
      }
      if (url.pathname === "/events") {
        srv.timeout(request, 0);
        await poller.ready;
        return events.open(poller.state);
      }
      if (url.pathname.startsWith("/api/")) return api(url, ctx);
      const asset = assets.get(url.pathname);
      if (asset === undefined) return plain(404, "Not found.");
      return new Response(asset.body, { headers: { ...SECURITY_HEADERS, "Content-Type": asset.type } });
    },
    error() {
      // Never the runtime's own page, which shows a stack.
      return plain(500, "slivingdoc web failed to answer; its standard error has the cause.");
    },
  });
  // Not awaited: a store slow or out of reach does not hold the start up; the first state waits for it (/api/state, /events).
  poller.start();
  return {
    port: server.port!,
    async stop() {
      events.close();
      await server.stop(true);
      await poller.stop();
      kept.dispose();
    },
  };
}

/** Bun.serve, or its failure (a busy port) with nothing left running. */
function listen(events: EventStreams, options: Parameters<typeof Bun.serve>[0]): ReturnType<typeof Bun.serve> {
  try {
    return Bun.serve(options);
  } catch (e) {
    events.close();
    throw e;
  }
}

function unauthorized(): DomainError {
  return new DomainError("MALFORMED_INPUT", "This request carries no valid token: open the URL slivingdoc web printed.");
}

function notGet(method: string): DomainError {
  return new DomainError("MALFORMED_INPUT", `slivingdoc web only reads: ${method.slice(0, 20)} is not taken, GET is.`);
}
