/**
 * Debian's Chromium, driven by playwright-core (which brings no browser of
 * its own and downloads none), and `slivingdoc web` started as a user
 * starts it: what the page's tests and its benchmark share.
 */
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type BrowserContext, chromium } from "playwright-core";
import { CannotRun } from "./debian.ts";
import { BINARY, requireBinary } from "./mcp.ts";

export const CHROMIUM = "/usr/bin/chromium";

export interface Browser {
  context: BrowserContext;
  close(): Promise<void>;
}

/** A headless Chromium with a fresh profile of its own, removed when closed. */
export async function launchChromium(viewport = { width: 1280, height: 800 }): Promise<Browser> {
  if (!existsSync(CHROMIUM)) {
    // Never skipped: `npm test` installs chromium (build/test-packages.mjs) before any suite runs.
    throw new CannotRun("the browser tests", `${CHROMIUM} is missing`, "Run them through `npm test`, which installs it as root with apt-get, or `apt-get install chromium`.");
  }
  const profile = mkdtempSync(join(tmpdir(), "slivingdoc-chromium-"));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    viewport,
    args: ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update", "--disable-sync", "--no-first-run"],
  });
  return {
    context,
    async close() {
      await context.close();
      rmSync(profile, { recursive: true, force: true });
    },
  };
}

export interface WebServer {
  /** The URL the ready line gives, with its token. */
  url: string;
  /** The same origin, without the token. */
  origin: string;
  token: string;
  stop(): Promise<number>;
}

/** `slivingdoc web --port 0 --json ARGS`, once its one ready line is out. */
export async function startWeb(args: string[], env: Record<string, string>): Promise<WebServer> {
  requireBinary();
  const p = Bun.spawn([BINARY, "web", "--port", "0", "--json", ...args], { env, stdin: "ignore", stdout: "pipe", stderr: "pipe" });
  const stderr = new Response(p.stderr).text();
  const reader = p.stdout.getReader();
  let out = "";
  while (!out.includes("\n")) {
    const { value, done } = await reader.read();
    if (done) throw new Error(`slivingdoc web exited ${await p.exited} before its ready line: ${out}${await stderr}`);
    out += new TextDecoder().decode(value);
  }
  reader.releaseLock();
  const ready = JSON.parse(out.slice(0, out.indexOf("\n"))) as { url: string; port: number };
  const url = new URL(ready.url);
  return {
    url: ready.url,
    origin: url.origin,
    token: url.searchParams.get("token") ?? "",
    async stop() {
      p.kill("SIGTERM");
      return p.exited;
    },
  };
}
