/**
 * The page of `slivingdoc web` in a real browser (Debian's Chromium through
 * playwright-core), against the built binary's `web --port 0 --json`, on the
 * embedded store and on S3 (Ceph RGW under `npm test`): a seeded team
 * history on the timeline, a commit appearing without a reload, a
 * publication's diff, blame naming each line's agent, payloads in agent
 * names, messages, paths and file text staying text, no data without the
 * token, the page's CSP never violated, the keyboard alone enough, and axe finding no serious or
 * critical accessibility violation. It also takes the timeline's screenshot
 * for docs/web.md (SLIVINGDOC_UPDATE_SCREENSHOT=1 writes docs/web-timeline.png).
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Page } from "playwright-core";
import { runAs, userEnv } from "../support/binary-env.ts";
import { type Browser, launchChromium, startWeb, type WebServer } from "../support/browser.ts";
import { waitFor } from "../support/wait.ts";
import { removePrefixes, s3ServerMissing, testBucket } from "../support/s3-test-store.ts";

const root = mkdtempSync(join(tmpdir(), "slivingdoc-web-browser-"));
const runId = crypto.randomUUID().slice(0, 8);
const prefixes: string[] = [];
afterAll(async () => {
  await removePrefixes(prefixes);
  rmSync(root, { recursive: true, force: true });
});

const AXE = readFileSync(createRequire(import.meta.url).resolve("axe-core/axe.min.js"), "utf8");
const SCREENSHOT = join(root, "web-timeline.png");

/** Payloads for every place an agent's string reaches the page. */
const EVIL = {
  // Agent names may hold neither `<` nor `>` (docs/cli.md): quotes, a URL scheme and a bidi override do.
  agentFlag: `javascript:alert(1) "onmouseover=alert(1) x='\u202Eevil`,
  agentEnv: `&lt;img src=x onerror=alert(1)&gt; \u202Etxt.exe`,
  message: `<img src=x onerror="window.__pwned=1;alert(1)"> javascript:alert(1) <script>window.__pwned=1</script> \u202Eevil`,
  path: `<img src=x onerror=alert(1)>.md`,
  bidiPath: `notes/\u202Egpj.exe.md`,
  text: `<script>window.__pwned=1</script>\n<img src=x onerror="window.__pwned=1;alert(1)">\njavascript:alert(1)\n`,
};

type Kind = "sqlite" | "s3";

/** A store of its own, and the CLI's environment for it. */
function storeFor(kind: Kind): { args: string[]; env: Record<string, string> } {
  const env = userEnv(root, `user-${kind}`);
  if (kind === "sqlite") return { args: ["--store", `sqlite:${join(root, "store.db")}`], env };
  const prefix = `slivingdoc-test/web-browser-${runId}`;
  prefixes.push(`${prefix}/`);
  return { args: ["--store", `s3://${testBucket}/${prefix}`], env };
}

/** Checkouts, one per agent, each committing whole files under its agent's name. */
function team(store: { args: string[]; env: Record<string, string> }) {
  const dirs = new Map<string, string>();
  const ok = async (args: string[], extraEnv: Record<string, string> = {}) => {
    const r = await runAs({ ...store.env, ...extraEnv }, ...args);
    if (r.code !== 0) throw new Error(`slivingdoc ${args.join(" ")} exited ${r.code}: ${r.stderr}`);
  };
  /** Commits `files` from `agent`'s checkout (named by --agent, or by SLIVINGDOC_AGENT when `byEnv`). */
  /** Pulls a checkout for each agent: each has then seen the generation of that moment. */
  const join_ = async (...agents: string[]) => {
    for (const agent of agents) {
      const dir = join(root, `checkout-${dirs.size}-${Date.now()}`);
      dirs.set(agent, dir);
      await ok(["pull", ...store.args, dir]);
    }
  };
  const commit = async (agent: string, files: Record<string, string>, message: string, byEnv = false) => {
    if (!dirs.has(agent)) await join_(agent);
    const dir = dirs.get(agent)!;
    for (const [path, text] of Object.entries(files)) {
      mkdirSync(join(dir, path, ".."), { recursive: true });
      writeFileSync(join(dir, path), text);
    }
    await ok(["commit", "-m", message, ...store.args, ...(byEnv ? [] : ["--agent", agent]), dir], byEnv ? { SLIVINGDOC_AGENT: agent } : {});
  };
  const pull = (agent: string) => ok(["pull", ...store.args, dirs.get(agent)!]);
  return { join: join_, commit, pull };
}

/**
 * A team's day: a planner, a coder and a reviewer in their own checkouts,
 * all pulled before anyone published, so the first three publications cross
 * each other; notes.md gets one line from each of them.
 * Returns how many publications it made.
 */
async function seedTeam(t: ReturnType<typeof team>): Promise<number> {
  await t.join("planner", "coder", "reviewer");
  await t.commit("planner", { "plan.md": "# Plan\n\n- parse the input\n" }, "plan: first step");
  await t.commit("coder", { "src/parse.ts": "export function parse(s: string) {\n  return s.split(',');\n}\n" }, "parse: split on commas");
  await t.commit("reviewer", { "review.md": "# Review\n\n- parse: what of quoted commas?\n" }, "review the parser", true);
  await t.commit("planner", { "plan.md": "# Plan\n\n- parse the input\n- handle quoted commas\n" }, "plan: quoted commas");
  await t.commit("coder", { "src/parse.ts": "export function parse(s: string) {\n  return s.match(/(\"[^\"]*\"|[^,]+)/g) ?? [];\n}\n" }, "parse: keep quoted commas");
  await t.commit("planner", { "notes.md": "planner's line\n" }, "notes: start");
  await t.pull("coder");
  await t.commit("coder", { "notes.md": "planner's line\ncoder's line\n" }, "notes: coder adds a line");
  await t.pull("reviewer");
  await t.commit("reviewer", { "notes.md": "planner's line\ncoder's line\nreviewer's line\n" }, "notes: reviewer adds a line", true);
  return 8;
}

async function openPage(browser: Browser, web: WebServer): Promise<{ page: Page; dialogs: string[] }> {
  const page = await browser.context.newPage();
  const dialogs: string[] = [];
  page.on("dialog", (d) => {
    dialogs.push(d.message());
    void d.dismiss();
  });
  // Every CSP violation is recorded: the page needs no inline script or style and no eval.
  await page.addInitScript("window.__csp = []; document.addEventListener('securitypolicyviolation', (e) => window.__csp.push(e.violatedDirective + ' ' + e.blockedURI));");
  await page.goto(web.url);
  await page.waitForSelector("li.entry");
  return { page, dialogs };
}

/**
 * Until `selector` matches `n` elements. Polled from here: the page's CSP
 * forbids the eval a string predicate run inside it would need.
 */
async function entriesShown(page: Page, selector: string, n: number): Promise<void> {
  await waitFor(async () => (await page.locator(selector).count()) === n, `${n} of ${selector}`, 30_000, 50);
}

async function shownGenerations(page: Page): Promise<number[]> {
  return page.$$eval("li.entry", (els) => els.map((e) => Number(e.getAttribute("data-generation"))));
}

async function axeViolations(page: Page): Promise<string[]> {
  if (!(await page.evaluate("typeof window.axe !== 'undefined'"))) await page.evaluate(AXE);
  return page.evaluate(
    "axe.run(document).then((r) => r.violations.filter((v) => v.impact === 'serious' || v.impact === 'critical').map((v) => v.id + ': ' + v.nodes.map((n) => n.target.join(' ')).join(', ')))",
  );
}

async function go(page: Page, hash: string, ready: string): Promise<void> {
  await page.evaluate(`location.hash = ${JSON.stringify(hash)}`);
  await page.waitForSelector(ready);
}

function webSuite(kind: Kind, label: string): void {
  describe(`slivingdoc web on ${label}`, () => {
    const store = storeFor(kind);
    const t = team(store);
    let seeded = 0;
    let web: WebServer;
    let browser: Browser;
    let page: Page;
    let dialogs: string[];

    beforeAll(async () => {
      seeded = await seedTeam(t);
      web = await startWeb(store.args, store.env);
      browser = await launchChromium();
      ({ page, dialogs } = await openPage(browser, web));
    });
    afterAll(async () => {
      await browser?.close();
      await web?.stop();
    });

    test("without the token, no data: 401 for the API, the events and the page", async () => {
      for (const path of ["/api/log", "/api/state", "/events", "/"]) {
        const r = await fetch(`${web.origin}${path}`);
        const body = await r.text();
        expect({ path, status: r.status }).toEqual({ path, status: 401 });
        expect(body).not.toContain("plan: first step");
        expect(body).not.toContain("app.js");
      }
      const wrong = await fetch(`${web.origin}/api/log`, { headers: { authorization: "Bearer not-the-token" } });
      expect(wrong.status).toBe(401);
      expect(((await wrong.json()) as { error: { code: string } }).error.code).toBeString();
    });

    test("the timeline shows every publication of the seeded history, newest first, with agents and crossings", async () => {
      await entriesShown(page, "li.entry", seeded);
      expect(await shownGenerations(page)).toEqual(Array.from({ length: seeded }, (_, i) => seeded - i));
      const first = page.locator('li.entry[data-generation="1"]');
      expect(await first.locator(".agent").textContent()).toBe("planner");
      expect(await first.locator(".msg").textContent()).toBe("plan: first step");
      expect(await first.locator("time").getAttribute("title")).toMatch(/^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC$/);
      // The reviewer had seen no publication when it published the third: it crossed the first two, unseen.
      expect(await page.locator('li.entry[data-generation="3"] .crossed').textContent()).toBe("crossed gen 1 (planner), 2 (coder)");
      if (kind === "sqlite") {
        await page.screenshot({ path: SCREENSHOT });
        expect(statSync(SCREENSHOT).size).toBeGreaterThan(10_000);
        if (process.env.SLIVINGDOC_UPDATE_SCREENSHOT === "1") copyFileSync(SCREENSHOT, join(import.meta.dir, "../../docs/web-timeline.png"));
      }
    });

    test("filtering by agent and by path asks the server and shows only those", async () => {
      // Each step waits for what it asked for, not a count: the filter before it may show as many entries.
      await page.fill('input[name="agent"]', "coder");
      await page.click('button[type="submit"]');
      const agents = async () => (await page.locator("li.entry .head .agent").allTextContents()).join(",");
      await waitFor(async () => (await agents()) === "coder,coder,coder", "coder's three publications", 30_000, 50);
      await page.fill('input[name="agent"]', "");
      await page.fill('input[name="path"]', "notes.md");
      await page.click('button[type="submit"]');
      const expected = [seeded, seeded - 1, seeded - 2].join(",");
      await waitFor(async () => (await shownGenerations(page)).join(",") === expected, "notes.md's three publications", 30_000, 50);
      expect(await shownGenerations(page)).toEqual([seeded, seeded - 1, seeded - 2]);
      await page.click("text=Clear");
      await entriesShown(page, "li.entry", seeded);
    });

    test("a commit made while the page is open appears at the top without a reload", async () => {
      await page.evaluate("window.__sameDocument = true");
      await t.commit("planner", { "plan.md": "# Plan\n\n- parse the input\n- handle quoted commas\n- ship it\n" }, "plan: ship it");
      seeded++;
      await page.waitForSelector(`li.entry[data-generation="${seeded}"]`);
      expect((await shownGenerations(page))[0]).toBe(seeded);
      expect(await page.evaluate("window.__sameDocument")).toBe(true);
      expect(await page.locator("header .status").textContent()).toContain(`generation ${seeded}`);
    });

    test("clicking a publication shows its unified diff and its files with their counts", async () => {
      await page.click('li.entry a.gen[href="#/publication/5"]');
      await page.waitForSelector(".diff .d2h-file-wrapper");
      expect(await page.locator("#publication-title").textContent()).toBe("Publication 5");
      expect(await page.locator(".files tbody tr").count()).toBe(1);
      expect(await page.locator(".files tbody tr").textContent()).toContain("src/parse.ts");
      expect(await page.locator(".files tbody .ins").textContent()).toBe("+1");
      expect(await page.locator(".files tbody .del").textContent()).toBe("−1");
      const diff = await page.locator(".diff").textContent();
      expect(diff).toContain("src/parse.ts");
      expect(diff).toContain("return s.split(',');");
      expect(diff).toContain('return s.match(/("[^"]*"|[^,]+)/g) ?? [];');
      expect(await page.locator(".diff .d2h-del").count()).toBeGreaterThan(0);
      expect(await page.locator(".diff .d2h-ins").count()).toBeGreaterThan(0);
    });

    test("blame names the agent that wrote each line of a file three agents wrote", async () => {
      await go(page, "#/notebook", ".tree");
      await page.click('.tree a:has-text("notes.md")');
      await page.waitForSelector(".file-text");
      expect(await page.locator(".file-text").textContent()).toBe("planner's line\ncoder's line\nreviewer's line\n");
      await page.click('.tabs a:has-text("blame")');
      await page.waitForSelector(".blame tbody tr");
      expect(await page.locator(".blame tbody .blame-agent").allTextContents()).toEqual(["planner", "coder", "reviewer"]);
      expect(await page.locator(".blame tbody td:first-child").allTextContents()).toEqual(["6", "7", "8"]);
      await page.click('.tabs a:has-text("history")');
      await entriesShown(page, ".file li.entry", 3);
    });

    test("the agents' view charts each agent's publications and lists where they crossed", async () => {
      await go(page, "#/agents", ".chart canvas");
      expect(await page.locator("table.agents tbody .agent").allTextContents()).toEqual(expect.arrayContaining(["planner", "coder", "reviewer"]));
      expect(await page.locator(".crossings li").first().textContent()).toContain("crossed");
    });

    test("agent names, messages, paths and file text from agents render as text: nothing runs, bidi cannot flip the layout", async () => {
      await t.commit(EVIL.agentFlag, { [EVIL.path]: EVIL.text }, EVIL.message);
      await t.commit(EVIL.agentEnv, { [EVIL.bidiPath]: EVIL.text }, EVIL.message, true);
      seeded += 2;
      await go(page, "#/", `li.entry[data-generation="${seeded}"]`);
      await page.waitForSelector(`li.entry[data-generation="${seeded - 1}"]`);
      const agents = await page.locator("li.entry .head .agent").allTextContents();
      expect(agents.slice(0, 2)).toEqual([EVIL.agentEnv, EVIL.agentFlag]);
      expect(await page.locator(`li.entry[data-generation="${seeded}"] .msg`).textContent()).toBe(EVIL.message);
      const views = [
        [`#/publication/${seeded - 1}`, `.publication[data-generation="${seeded - 1}"] .d2h-file-wrapper`],
        [`#/publication/${seeded}`, `.publication[data-generation="${seeded}"] .d2h-file-wrapper`],
        [`#/notebook/${seeded}/text/${encodeURIComponent(EVIL.path)}`, ".file-text"],
        [`#/notebook/${seeded}/blame/${encodeURIComponent(EVIL.bidiPath)}`, ".blame tbody tr"],
        ["#/agents", ".chart canvas"],
      ] as const;
      for (const [hash, ready] of views) {
        await go(page, hash, ready);
        expect(await page.locator("main").textContent()).toContain(hash.startsWith("#/publication") ? EVIL.text.split("\n")[0]! : hash === "#/agents" ? EVIL.agentFlag : "<script>");
        // Nothing of a payload became an element or a link.
        expect(await page.locator("main img, main script, main iframe, a[href^='javascript']").count()).toBe(0);
        // Every agent name and path is isolated (<bdi>), so U+202E inside stays inside.
        expect(await page.evaluate("[...document.querySelectorAll('.agent, .path')].every((e) => e.tagName === 'BDI')")).toBe(true);
      }
      expect(await page.evaluate("window.__pwned")).toBeUndefined();
      expect(dialogs).toEqual([]);
    });

    test("the page keeps its CSP: no inline script or style, no eval", async () => {
      expect(await page.evaluate("window.__csp")).toEqual([]);
      const r = await fetch(web.url, { redirect: "manual" });
      const html = await (await fetch(`${web.origin}/`, { headers: { authorization: `Bearer ${web.token}` } })).text();
      expect(r.status).toBe(303);
      expect(html).not.toMatch(/<script(?![^>]*\bsrc=)|\bstyle=|<style/);
    });

    test("the keyboard alone reaches a publication and opens it, with the focus visible", async () => {
      await go(page, "#/", "li.entry");
      const onPublicationLink = "document.activeElement?.matches('li.entry a.gen') === true";
      for (let tabs = 0; tabs < 30 && !(await page.evaluate(onPublicationLink)); tabs++) await page.keyboard.press("Tab");
      expect(await page.evaluate(onPublicationLink)).toBe(true);
      expect(await page.evaluate("getComputedStyle(document.activeElement).outlineStyle")).not.toBe("none");
      const generation = await page.evaluate("document.activeElement.closest('li.entry').dataset.generation");
      await page.keyboard.press("Enter");
      await page.waitForSelector(`.publication[data-generation="${generation}"]`);
    });

    test("axe finds no serious or critical accessibility violation in any view", async () => {
      const found: Record<string, string[]> = {};
      for (const [hash, ready] of [
        ["#/", "li.entry"],
        ["#/publication/5", ".diff .d2h-file-wrapper"],
        ["#/notebook/8/blame/notes.md", ".blame tbody tr"],
        ["#/agents", ".chart canvas"],
      ] as const) {
        await go(page, hash, ready);
        found[hash] = await axeViolations(page);
      }
      expect(found).toEqual({ "#/": [], "#/publication/5": [], "#/notebook/8/blame/notes.md": [], "#/agents": [] });
    });

    test("readable at a phone's width: nothing wider than the screen", async () => {
      await page.setViewportSize({ width: 375, height: 800 });
      for (const [hash, ready] of [
        ["#/", "li.entry"],
        ["#/notebook/8/blame/notes.md", ".blame tbody tr"],
        ["#/agents", ".chart canvas"],
      ] as const) {
        await go(page, hash, ready);
        expect({ hash, width: await page.evaluate("document.documentElement.scrollWidth") }).toEqual({ hash, width: 375 });
      }
      await page.setViewportSize({ width: 1280, height: 800 });
    });
  });
}

test("a store that holds no notebook yet: the page says so plainly", async () => {
  const web = await startWeb(["--store", `sqlite:${join(root, "empty.db")}`], userEnv(root, "user-empty"));
  const browser = await launchChromium();
  try {
    const page = await browser.context.newPage();
    await page.goto(web.url);
    await page.waitForSelector("main .empty");
    expect(await page.locator("main .empty").textContent()).toStartWith("No notebook yet");
    expect(await page.locator("li.entry").count()).toBe(0);
  } finally {
    await browser.close();
    await web.stop();
  }
});

webSuite("sqlite", "the embedded store");
if (!s3ServerMissing()) webSuite("s3", "S3 (Ceph RGW)");
