/**
 * WEB: the first screen of `slivingdoc web`'s page with 10,000 retained
 * publications, against the same with 10 (bar ≤ 1.5×): the page asks for
 * one page of the timeline, never the whole history, so the history's
 * length must barely show. Embedded store; each side in a warm Chromium of
 * its own (a cookie is per host, not per port), navigations alternated.
 *
 * The publications are real engine commits made in-process (one checkout,
 * one small file changed by each), as history.bench.ts makes its 1,000; in
 * /dev/shm where there is one (a third of the time on disk), with both
 * stores, so the two sides read alike. The 10,000 still take minutes (18 on
 * a loaded 2-core machine): the row is left out of the default run.
 */
import { existsSync, mkdtempSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { commit } from "../../src/engine/commit.ts";
import { type Browser, launchChromium, startWeb, type WebServer } from "../support/browser.ts";
import * as L from "./lib.ts";
import type { Row } from "./report.ts";

const AGENTS = ["planner", "coder", "reviewer", "tester"];
/** The timeline's first page (src/surfaces/web/page/entries.tsx). */
const FIRST_PAGE = 50;

export async function seed(loc: L.Location, root: string, name: string, publications: number): Promise<void> {
  const store = loc.open();
  try {
    const dir = join(root, `${name}-checkout`);
    const t0 = performance.now();
    for (let i = 0; i < publications; i++) {
      const agent = AGENTS[i % AGENTS.length]!;
      const deps = L.engineDepsFor(store, loc, join(root, `${name}-private`), { agent: () => agent });
      if (i === 0) await L.seedNotebook(deps, dir, new Map([["log.md", "start\n"]]));
      else {
        writeFileSync(join(dir, `log-${i % 20}.md`), `${agent} step ${i}\n`);
        await commit(deps, { path: dir, message: `${agent}: step ${i}` });
      }
    }
    L.log(`  ${publications} publications in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
  } finally {
    await store.close();
  }
}

interface Side {
  web: WebServer;
  browser: Browser;
  shown: number;
}

/** A server and a warm browser on `loc`: the page visited once with the token (which sets the cookie). */
async function side(loc: L.Location, root: string, publications: number): Promise<Side> {
  const web = await startWeb(loc.flags, { ...(process.env as Record<string, string>), ...loc.env, HOME: join(root, "home") });
  const browser = await launchChromium();
  const page = await browser.context.newPage();
  await page.goto(web.url);
  return { web, browser, shown: Math.min(publications, FIRST_PAGE) };
}

/** One navigation to the page, until its first screen of publications is drawn. */
async function firstScreen(s: Side): Promise<number> {
  const page = s.browser.context.pages().at(-1)!;
  const t0 = performance.now();
  await page.goto(`${s.web.origin}/`);
  await page.waitForSelector(`li.entry:nth-child(${s.shown})`);
  return performance.now() - t0;
}

export async function webScenario(reps: number, publications: number): Promise<Row[]> {
  const root = existsSync("/dev/shm") ? mkdtempSync("/dev/shm/slivingdoc-bench-web-") : L.tempDir("web");
  const longLoc = L.sqliteLocation(root);
  const shortLoc = L.sqliteLocation(root);
  const sides: Side[] = [];
  try {
    await seed(shortLoc, root, "short", 10);
    await seed(longLoc, root, "long", publications);
    const short = await side(shortLoc, root, 10);
    sides.push(short);
    const long = await side(longLoc, root, publications);
    sides.push(long);
    const [shortMs, longMs] = await L.alternate(reps, [() => firstScreen(short), () => firstScreen(long)]);
    const b = L.median(shortMs!);
    const m = L.median(longMs!);
    return [
      {
        scenario: "WEB",
        store: longLoc.label,
        what: `web page's first screen, ${publications.toLocaleString("en")} publications retained (warm browser)`,
        median: m,
        unit: "ms",
        comparison: "the same with 10 publications",
        comparisonMedian: b,
        ratio: m / b,
        bar: "≤ 1.5×",
        met: m / b <= 1.5,
        samples: reps,
        values: longMs!,
        comparisonValues: shortMs!,
      },
    ];
  } finally {
    for (const s of sides) {
      await s.browser.close();
      await s.web.stop();
    }
    await longLoc.dispose();
    await shortLoc.dispose();
    L.removeDir(root);
  }
}
