import { afterAll, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { openSqliteStore } from "../../src/store/sqlite.ts";
import { describeStoreConformance } from "./conformance.ts";

const root = mkdtempSync(join(tmpdir(), "slivingdoc-sqlite-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));
let n = 0;

describeStoreConformance("sqlite", async () => openSqliteStore(join(root, `store-${n++}.db`)));

test("sqlite: 8 processes racing one compare-and-swap produce exactly one winner", async () => {
  const file = join(root, "multi-process.db");
  const store = openSqliteStore(file);
  const created = await store.putIfAbsent("current", new TextEncoder().encode("start"));
  if (!created.ok) throw new Error("create lost on a fresh store");
  const startAt = Date.now() + 1500;
  const racers = Array.from({ length: 8 }, (_, i) =>
    Bun.spawn([process.execPath, join(import.meta.dir, "sqlite-race-worker.ts"), file, created.etag, String(i), String(startAt)], {
      stdout: "pipe",
      stderr: "inherit",
    }),
  );
  const outcomes = await Promise.all(racers.map(async (p) => [await new Response(p.stdout).text(), await p.exited] as const));
  for (const [, code] of outcomes) expect(code).toBe(0);
  const winners = outcomes.flatMap(([out], i) => (out === "won" ? [i] : []));
  expect(winners.length).toBe(1);
  expect(outcomes.filter(([out]) => out === "lost").length).toBe(7);
  expect(new TextDecoder().decode((await store.get("current"))!.body)).toBe(`writer ${winners[0]}`);
  await store.close();
});
