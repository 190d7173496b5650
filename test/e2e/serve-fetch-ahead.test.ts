/**
 * A server idle between its agent's calls fetches ahead (engine/fetch-ahead.ts):
 * the publications other writers made meanwhile reach its checkout's object
 * cache with no call made, while its visible files stay as the last call
 * left them; the next call then lands on all of it. A server killed while
 * it looks leaves a checkout every later call works on.
 */
import { afterAll, expect, test } from "bun:test";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { BINARY, call, connect, requireBinary } from "../support/mcp.ts";
import { waitFor } from "../support/wait.ts";

const root = mkdtempSync(join(tmpdir(), "slivingdoc-fetch-ahead-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));

function envFor(name: string): Record<string, string> {
  mkdirSync(join(root, name), { recursive: true });
  return {
    PATH: process.env.PATH ?? "/usr/bin:/bin",
    HOME: join(root, name, "home"),
    TMPDIR: tmpdir(),
    XDG_STATE_HOME: join(root, name, "state"),
    SLIVINGDOC_STORE: `sqlite:${join(root, name, "store.db")}`,
  };
}

/** The object caches under `dir` (a private root): the directories holding objects/pack. */
function gitdirs(dir: string): string[] {
  if (!existsSync(dir)) return [];
  const found: string[] = [];
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    if (!e.isDirectory()) continue;
    const sub = join(dir, e.name);
    if (existsSync(join(sub, "objects", "pack"))) found.push(sub);
    else found.push(...gitdirs(sub));
  }
  return found;
}

const indexes = (gitdir: string) => readdirSync(join(gitdir, "objects", "pack")).filter((f) => f.endsWith(".idx")).length;

async function cli(env: Record<string, string>, ...args: string[]): Promise<string> {
  const p = Bun.spawn([BINARY, ...args], { cwd: root, env, stdout: "pipe", stderr: "pipe" });
  const [stdout, stderr, code] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited]);
  if (code !== 0) throw new Error(`${args[0]} exited ${code}: ${stderr}`);
  return stdout;
}

/** `n` commits by another writer, each a process of its own, in its own checkout. */
async function othersPublish(env: Record<string, string>, other: string, n: number, tag: string): Promise<void> {
  await cli(env, "pull", other);
  for (let i = 0; i < n; i++) {
    writeFileSync(join(other, `other-${i}.md`), `${tag} ${i}\n`);
    await cli(env, "commit", other, "-m", `${tag} ${i}`);
  }
}

test("an idle server's checkout gains the others' publications with no call, its files unchanged; its next commit lands on them", async () => {
  requireBinary();
  const env = envFor("idle");
  const dir = join(root, "idle", "served");
  const session = await connect(env, ["--workspace-root", dir]);
  try {
    expect((await call(session, "notes_pull", {})).isError).toBe(false);
    writeFileSync(join(dir, "mine.md"), "mine\n");
    expect((await call(session, "notes_commit", { message: "mine" })).isError).toBe(false);
    // The served checkout's cache, the only one so far.
    const [served] = gitdirs(join(root, "idle", "state"));
    expect(served).toBeDefined();
    const before = indexes(served!);
    await othersPublish(env, join(root, "idle", "other"), 4, "theirs");
    await waitFor(() => indexes(served!) > before, "the served checkout's cache to gain the others' packs");
    expect(readdirSync(dir).filter((f) => f.endsWith(".md")).sort()).toEqual(["mine.md"]);
    writeFileSync(join(dir, "mine.md"), "mine, again\n");
    const r = await call(session, "notes_commit", { message: "again" });
    expect(r.isError).toBe(false);
    expect(r.data.generation).toBe(6);
    for (let i = 0; i < 4; i++) expect(readFileSync(join(dir, `other-${i}.md`), "utf8")).toBe(`theirs ${i}\n`);
  } finally {
    await session.close();
  }
});

test("servers SIGKILLed at random instants while others publish leave checkouts every later call works on, nothing lost", async () => {
  requireBinary();
  const env = envFor("killed");
  const other = join(root, "killed", "other");
  await cli(env, "pull", other);
  let published = 0;
  for (let round = 0; round < 6; round++) {
    const dir = join(root, "killed", `served-${round}`);
    // A first pull through the CLI makes the checkout the server looks ahead for.
    await cli(env, "pull", dir);
    const server = Bun.spawn([BINARY, "serve", "--workspace-root", dir], { env, stdin: "pipe", stdout: "ignore", stderr: "ignore" });
    // The looks start once the host's initialize is answered.
    server.stdin.write(`${JSON.stringify({ jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "test", version: "1" } } })}\n`);
    server.stdin.flush();
    const publishing = (async () => {
      for (let i = 0; i < 5; i++, published++) {
        writeFileSync(join(other, `p-${published}.md`), `p ${published}\n`);
        await cli(env, "commit", other, "-m", `p ${published}`);
      }
    })();
    await Bun.sleep(50 + Math.random() * 600);
    server.kill("SIGKILL");
    await server.exited;
    await publishing;
    // The checkout the server looked ahead for: its next calls work, and hold every publication.
    writeFileSync(join(dir, `own-${round}.md`), `own ${round}\n`);
    await cli(env, "commit", dir, "-m", `own ${round}`);
    for (let i = 0; i < published; i++) expect(readFileSync(join(dir, `p-${i}.md`), "utf8")).toBe(`p ${i}\n`);
  }
  const cold = join(root, "killed", "cold");
  await cli(env, "pull", cold);
  for (let i = 0; i < published; i++) expect(readFileSync(join(cold, `p-${i}.md`), "utf8")).toBe(`p ${i}\n`);
  for (let round = 0; round < 6; round++) expect(readFileSync(join(cold, `own-${round}.md`), "utf8")).toBe(`own ${round}\n`);
}, 120_000);
