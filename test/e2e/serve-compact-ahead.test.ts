/**
 * A server compacts between calls (engine/compact-ahead.ts), through the
 * real binary: commits made through `serve` never find the store's pack
 * list past the threshold, since the commit that reached it had the list
 * compacted before the next call began — where a commit would otherwise
 * compact in its turn at 33 packs. The notebook is whole afterwards.
 */
import { afterAll, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { aheadAt } from "../../src/engine/publish/compact-ahead.ts";
import { MANIFEST_KEY, parseManifest } from "../../src/engine/publish/manifest.ts";
import { openSqliteStore } from "../../src/store/sqlite.ts";
import { SYSTEM_CLOCK } from "../../src/surfaces/engine-deps.ts";
import { BINARY, call, connect, requireBinary } from "../support/mcp.ts";

const root = mkdtempSync(join(tmpdir(), "slivingdoc-compact-ahead-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));

test("40 commits through serve: the list never passes the threshold, the log says it compacted between calls, and a cold pull has every file", async () => {
  requireBinary();
  const storeFile = join(root, "store.db");
  mkdirSync(join(root, "home"), { recursive: true });
  const env = { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: join(root, "home"), TMPDIR: tmpdir(), XDG_STATE_HOME: join(root, "state"), SLIVINGDOC_STORE: `sqlite:${storeFile}` };
  const dir = join(root, "served");
  const session = await connect(env, ["--workspace-root", dir]);
  const counts: number[] = [];
  let log: string;
  try {
    expect((await call(session, "notes_pull", {})).isError).toBe(false);
    for (let i = 0; i < 40; i++) {
      writeFileSync(join(dir, `note-${i}.md`), `note ${i}\n`);
      const r = await call(session, "notes_commit", { message: `note ${i}` });
      expect(r.isError).toBe(false);
      // Read as the commit left it: any compaction of its own comes after its answer.
      const store = openSqliteStore(storeFile, SYSTEM_CLOCK);
      try {
        counts.push(parseManifest((await store.get(MANIFEST_KEY))!.body).packs.length);
      } finally {
        await store.close();
      }
    }
  } finally {
    log = await session.finish();
  }
  expect(Math.max(...counts)).toBe(aheadAt());
  expect(log).toContain("pack list compacted between calls");
  const cold = join(root, "cold");
  const p = Bun.spawn([BINARY, "pull", cold], { env, stdout: "pipe", stderr: "pipe" });
  expect(await p.exited).toBe(0);
  for (let i = 0; i < 40; i++) expect(readFileSync(join(cold, `note-${i}.md`), "utf8")).toBe(`note ${i}\n`);
});
