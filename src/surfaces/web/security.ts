/**
 * Who may read `slivingdoc web`'s page (docs/web.md, "Security model"):
 * the notebook's whole history is behind it, so a request must come by a
 * name of this machine's loopback (a page of another site that rebinds its
 * DNS name to 127.0.0.1 still sends its own name as Host: refused), and
 * carry the token the command printed — once in the URL, then in an
 * HttpOnly, SameSite=Strict cookie no other site's page can send or read.
 * Every answer forbids what the page does not do: inline or foreign
 * scripts, framing, sending a Referer.
 */
import { randomBytes, timingSafeEqual } from "node:crypto";

export const COOKIE = "slivingdoc_web";

/** A fresh token: 32 random bytes, base64url. */
export function newToken(): string {
  return randomBytes(32).toString("base64url");
}

export const SECURITY_HEADERS: Readonly<Record<string, string>> = {
  "Content-Security-Policy":
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; font-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
  "X-Content-Type-Options": "nosniff",
  "Referrer-Policy": "no-referrer",
  "Cache-Control": "no-store",
};

/** The loopback names a Host header may carry, with any port. */
const LOOPBACK_NAMES = ["localhost", "127.0.0.1", "[::1]"];

/** The host name of a Host header (lower case, an IPv6 address in brackets), without its port; null when it is not one. */
function hostName(host: string): string | null {
  const m = /^(\[[0-9a-f:.]+\]|[^\s:[\]/@]+)(?::\d{1,5})?$/i.exec(host.trim());
  return m === null ? null : m[1]!.toLowerCase();
}

/** The address `--listen` names, as a Host header would carry it (an IPv6 one in brackets). */
function listenName(listen: string): string {
  return listen.includes(":") && !listen.startsWith("[") ? `[${listen.toLowerCase()}]` : listen.toLowerCase();
}

/** Whether `host` (the Host header) names this server: a loopback name, or the `--listen` address when one was given. */
export function hostAllowed(host: string | null, listen: string | null): boolean {
  if (host === null) return false;
  const name = hostName(host);
  if (name === null) return false;
  return LOOPBACK_NAMES.includes(name) || (listen !== null && name === listenName(listen));
}

/** Whether `address` is a loopback address, which only this machine reaches. */
export function isLoopback(address: string): boolean {
  return address === "localhost" || address === "::1" || /^127(\.\d{1,3}){3}$/.test(address);
}

function same(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

/** The token a request carries: its cookie, or `Authorization: Bearer` (scripts). */
function carried(request: Request): string[] {
  const tokens: string[] = [];
  const auth = request.headers.get("authorization");
  if (auth !== null && /^Bearer /i.test(auth)) tokens.push(auth.slice(7).trim());
  for (const part of (request.headers.get("cookie") ?? "").split(";")) {
    const eq = part.indexOf("=");
    if (eq > 0 && part.slice(0, eq).trim() === COOKIE) tokens.push(part.slice(eq + 1).trim());
  }
  return tokens;
}

/** Whether `request` carries `token`. */
export function authorized(request: Request, token: string): boolean {
  return carried(request).some((t) => same(t, token));
}

/** Whether `given` (the URL's `token`) is the token. */
export function tokenMatches(given: string, token: string): boolean {
  return same(given, token);
}

/** The answer to `GET /?token=T` with the right token: the cookie, and a redirect to the URL without it (out of the history and the address bar). */
export function tokenRedirect(token: string): Response {
  return new Response(null, {
    status: 303,
    headers: { ...SECURITY_HEADERS, Location: "/", "Set-Cookie": `${COOKIE}=${token}; HttpOnly; SameSite=Strict; Path=/` },
  });
}
