/**
 * Checkouts in separate processes on one store: concurrent commits, and the
 * 8 × 10 race in which every acknowledged edit must survive.
 */
import { afterAll, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { seedNotebookByCli, write } from "../support/fixture.ts";
import { expectRaceSurvived, raceSeed, runRacers } from "../support/race.ts";

const root = mkdtempSync(join(tmpdir(), "slivingdoc-e2e-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));
const main = join(import.meta.dir, "../../src/main.ts");

/** One notebook's settings; its store's directory made, as a store path given explicitly must name one that exists. */
function env(name: string): Record<string, string> {
  mkdirSync(join(root, name), { recursive: true });
  return {
    ...(process.env as Record<string, string>),
    SLIVINGDOC_STORE: `sqlite:${join(root, name, "store.db")}`,
    SLIVINGDOC_PRIVATE_ROOT: join(root, name, "private"),
  };
}

async function cli(e: Record<string, string>, ...args: string[]) {
  const p = Bun.spawn([process.execPath, main, ...args], { env: e, stdout: "pipe", stderr: "pipe" });
  const [stdout, stderr, code] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited]);
  return { stdout, stderr, code };
}

test("two checkouts in two processes commit at the same moment: both edits land", async () => {
  const e = env("pair");
  const a = join(root, "pair", "a");
  const b = join(root, "pair", "b");
  await seedNotebookByCli((args) => cli(e, ...args), a, { "shared.md": "top\n\n\n\nmiddle\n\n\n\nbottom\n" });
  expect((await cli(e, "pull", b)).code).toBe(0);
  write(a, "shared.md", "top by a\n\n\n\nmiddle\n\n\n\nbottom\n");
  write(a, "a.md", "a\n");
  write(b, "shared.md", "top\n\n\n\nmiddle\n\n\n\nbottom by b\n");
  write(b, "b.md", "b\n");
  const [ra, rb] = await Promise.all([cli(e, "commit", "-m", "a", a), cli(e, "commit", "-m", "b", b)]);
  expect([ra.code, rb.code]).toEqual([0, 0]);
  const c = join(root, "pair", "c");
  expect((await cli(e, "pull", c)).code).toBe(0);
  expect(readFileSync(join(c, "shared.md"), "utf8")).toBe("top by a\n\n\n\nmiddle\n\n\n\nbottom by b\n");
  expect(readFileSync(join(c, "a.md"), "utf8")).toBe("a\n");
  expect(readFileSync(join(c, "b.md"), "utf8")).toBe("b\n");
});

test("8 processes × 10 commits racing on one notebook: every acknowledged edit is in the final state", async () => {
  const e = env("race");
  const seed = join(root, "race", "seed");
  const racers = 8;
  const commits = 10;
  await seedNotebookByCli((args) => cli(e, ...args), seed, { "shared.md": raceSeed(racers) });

  const acked = await runRacers(racers, commits, (i) => join(root, "race", `w${i}`), () => e);
  expect(acked.length).toBe(racers * commits);
  // Every acknowledged commit got its own generation.
  expect(new Set(acked.map((a) => a.generation)).size).toBe(racers * commits);

  const check = join(root, "race", "check");
  const pulled = await cli(e, "pull", "--json", check);
  expect(pulled.code).toBe(0);
  expect(JSON.parse(pulled.stdout).generation).toBe(1 + racers * commits);
  expectRaceSurvived(check, racers, commits);
}, 240_000);

test("on the embedded store, 6 processes committing at once take turns: no race lost, no write beyond one per commit, every edit lands", async () => {
  const e = env("turns");
  const worker = join(import.meta.dir, "turns-worker.ts");
  const writers = Array.from({ length: 6 }, (_, i) =>
    Bun.spawn([process.execPath, worker, String(i), join(root, "turns", `w${i}`), "5"], { env: e, stdout: "pipe", stderr: "inherit" }),
  );
  const lost = await Promise.all(writers.map(async (p) => [await new Response(p.stdout).text(), await p.exited] as const));
  expect(lost).toEqual(Array(6).fill(["0 0\n", 0]));
  const c = join(root, "turns", "c");
  expect((await cli(e, "pull", c)).code).toBe(0);
  for (let i = 0; i < 6; i++) {
    const want = Array.from({ length: 5 }, (_, j) => `agent ${i} commit ${j}\n`).join("");
    expect(readFileSync(join(c, `agent-${i}.md`), "utf8")).toBe(want);
  }
});
