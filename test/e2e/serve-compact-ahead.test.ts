/**
 * A server compacts between calls (engine/compact-ahead.ts), through the
 * real binary: commits made through `serve` never find the store's pack
 * list past the threshold, since the commit that reached it had the list
 * compacted before the next call began — where a commit would otherwise
 * compact in its turn at 33 packs. The notebook is whole afterwards, also
 * when servers are SIGKILLed at random instants around their compaction.
 */
import { afterAll, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { aheadAt } from "../../src/engine/publish/compact-ahead.ts";
import { MANIFEST_KEY, parseManifest } from "../../src/engine/publish/manifest.ts";
import { openSqliteStore } from "../../src/store/sqlite.ts";
import { SYSTEM_CLOCK } from "../../src/surfaces/engine-deps.ts";
import { BINARY, call, connect, requireBinary, type Session } from "../support/mcp.ts";

const root = mkdtempSync(join(tmpdir(), "slivingdoc-compact-ahead-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));

function envFor(name: string): Record<string, string> {
  mkdirSync(join(root, name, "home"), { recursive: true });
  return { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: join(root, name, "home"), TMPDIR: tmpdir(), XDG_STATE_HOME: join(root, name, "state"), SLIVINGDOC_STORE: `sqlite:${join(root, name, "store.db")}` };
}

/** The number of packs `current` lists in the store file (0 before the first commit), read as another process would. */
async function packCount(storeFile: string): Promise<number> {
  const store = openSqliteStore(storeFile, SYSTEM_CLOCK);
  try {
    const current = await store.get(MANIFEST_KEY);
    return current === null ? 0 : parseManifest(current.body).packs.length;
  } finally {
    await store.close();
  }
}

async function cli(env: Record<string, string>, ...args: string[]): Promise<void> {
  const p = Bun.spawn([BINARY, ...args], { cwd: root, env, stdout: "pipe", stderr: "pipe" });
  const [stderr, code] = await Promise.all([new Response(p.stderr).text(), p.exited]);
  if (code !== 0) throw new Error(`${args[0]} exited ${code}: ${stderr}`);
}

test("40 commits through serve: the list never passes the threshold, the log says it compacted between calls, and a cold pull has every file", async () => {
  requireBinary();
  const env = envFor("bounded");
  const storeFile = join(root, "bounded", "store.db");
  const dir = join(root, "bounded", "served");
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
      counts.push(await packCount(storeFile));
    }
  } finally {
    log = await session.finish();
  }
  expect(Math.max(...counts)).toBe(aheadAt());
  expect(log).toContain("pack list compacted between calls");
  const cold = join(root, "bounded", "cold");
  await cli(env, "pull", cold);
  for (let i = 0; i < 40; i++) expect(readFileSync(join(cold, `note-${i}.md`), "utf8")).toBe(`note ${i}\n`);
});

test("servers SIGKILLed at random instants after the commit that made a compaction due lose nothing; the list stays bounded", async () => {
  requireBinary();
  const env = envFor("killed");
  const storeFile = join(root, "killed", "store.db");
  const other = join(root, "killed", "other");
  await cli(env, "pull", other);
  const files: string[] = [];
  const commitIn = async (session: Session, dir: string) => {
    const name = `f-${files.length}.md`;
    writeFileSync(join(dir, name), `${name}\n`);
    expect((await call(session, "notes_commit", { message: name })).isError).toBe(false);
    files.push(name);
  };
  for (let round = 0; round < 6; round++) {
    const dir = join(root, "killed", `served-${round}`);
    const session = await connect(env, ["--workspace-root", dir]);
    try {
      expect((await call(session, "notes_pull", {})).isError).toBe(false);
      // Up to the commit that brings the list to the threshold: the server compacts once it answered.
      for (let i = 0; (await packCount(storeFile)) !== aheadAt() - 1; i++) {
        expect(i).toBeLessThan(40);
        await commitIn(session, dir);
      }
      await commitIn(session, dir);
      // Before its compaction began, while it builds or uploads, in its turn, or after it.
      await Bun.sleep(Math.random() * 10);
      process.kill(session.pid()!, "SIGKILL");
    } finally {
      await session.close().catch(() => {});
    }
    // Another writer goes on at once: its commit lands, and the list never passes the bound.
    const name = `other-${round}.md`;
    writeFileSync(join(other, name), `${name}\n`);
    await cli(env, "commit", other, "-m", name);
    files.push(name);
    expect(await packCount(storeFile)).toBeLessThanOrEqual(32);
  }
  const cold = join(root, "killed", "cold");
  await cli(env, "pull", cold);
  for (const name of files) expect(readFileSync(join(cold, name), "utf8")).toBe(`${name}\n`);
}, 120_000);
