/**
 * Everyday accidents, as a user makes them with the built binary: a
 * checkout removed and made again (`rm -rf`, a fresh container volume over
 * old private state), a checkout killed while it held its lock.
 */
import { afterAll, expect, test } from "bun:test";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { read, write } from "../support/fixture.ts";

const root = mkdtempSync(join(tmpdir(), "slivingdoc-accidents-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));
const binary = join(import.meta.dir, "../../dist/slivingdoc");

/** A world of its own: one store file and one private root shared by every call. */
function world(name: string) {
  const base = join(root, name);
  mkdirSync(base, { recursive: true });
  const env = {
    ...(process.env as Record<string, string>),
    HOME: join(base, "home"),
    SLIVINGDOC_STORE: `sqlite:${join(base, "store.db")}`,
    SLIVINGDOC_PRIVATE_ROOT: join(base, "private"),
    S3_BUCKET: "",
  };
  const run = async (...args: string[]) => {
    const p = Bun.spawn([binary, ...args], { cwd: base, env, stdout: "pipe", stderr: "pipe" });
    const [stdout, stderr, code] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited]);
    return { stdout, stderr, code, json: stdout ? JSON.parse(stdout) : null };
  };
  return { dir: (n: string) => join(base, n), run, privateRoot: join(base, "private") };
}

test("rm -rf of a checkout, then pull: a full copy, and the next commit deletes nothing", async () => {
  const { dir, run } = world("rm-rf");
  const a = dir("rm1");
  expect((await run("pull", a)).code).toBe(0);
  write(a, "a.md", "one\n");
  write(a, "b.md", "two\n");
  expect((await run("commit", "-m", "init", a)).code).toBe(0);

  rmSync(a, { recursive: true, force: true });
  const pulled = await run("pull", "--json", a);
  expect(pulled.code).toBe(0);
  expect(pulled.json).toMatchObject({ generation: 1, filesChanged: 2 });
  expect([read(a, "a.md"), read(a, "b.md")]).toEqual(["one\n", "two\n"]);
  const synced = await run("commit", "-m", "just syncing", "--json", a);
  expect(synced.json).toMatchObject({ generation: 1, files: [] });

  // Removed and made again, empty, without a pull: a commit asks for one.
  rmSync(a, { recursive: true, force: true });
  mkdirSync(a);
  const refused = await run("commit", "-m", "from an empty directory", "--json", a);
  expect(refused.json).toMatchObject({ code: "INVALID_REQUEST", reason: "PULL_REQUIRED", action: "PULL" });
  expect(refused.json.message).toContain("removed or replaced");

  // The store was never touched: a fresh checkout has both files.
  const c = dir("c");
  expect((await run("pull", c)).code).toBe(0);
  expect([read(c, "a.md"), read(c, "b.md")]).toEqual(["one\n", "two\n"]);
});

test("deleting every file inside a checkout is still a deletion, and publishes as one", async () => {
  const { dir, run } = world("delete-inside");
  const a = dir("a");
  await run("pull", a);
  write(a, "a.md", "one\n");
  write(a, "sub/b.md", "two\n");
  await run("commit", "-m", "init", a);
  for (const name of readdirSync(a)) rmSync(join(a, name), { recursive: true });
  const committed = await run("commit", "-m", "clear out", "--json", a);
  expect(committed.json).toMatchObject({ generation: 2, filesChanged: 2, deletions: 2 });
  const c = dir("c");
  await run("pull", c);
  expect(readdirSync(c)).toEqual([]);
});

test("a directory put in place of a checkout, holding files of its own, is merged as a new checkout: nothing lost", async () => {
  const { dir, run } = world("replaced");
  const a = dir("a");
  await run("pull", a);
  write(a, "shared.md", "accepted\n");
  await run("commit", "-m", "init", a);
  rmSync(a, { recursive: true });
  // Say, a fresh volume with a file of its own, mounted where the checkout was.
  mkdirSync(a);
  write(a, "mine.md", "only here\n");
  const pulled = await run("pull", "--json", a);
  expect(pulled.code).toBe(0);
  expect([read(a, "shared.md"), read(a, "mine.md")]).toEqual(["accepted\n", "only here\n"]);
  const committed = await run("commit", "-m", "mine", "--json", a);
  expect(committed.json).toMatchObject({ generation: 2, files: [{ path: "mine.md", insertions: 1, deletions: 0 }] });
});

test("the private state of a removed checkout is dropped by the next call, not checked by every call forever", async () => {
  const { dir, run, privateRoot } = world("prune");
  for (const n of ["t1", "t2", "t3"]) expect((await run("pull", dir(n))).code).toBe(0);
  for (const n of ["t1", "t2", "t3"]) rmSync(dir(n), { recursive: true });
  expect(readdirSync(join(privateRoot, "checkouts"))).toHaveLength(3);
  expect((await run("pull", dir("kept"))).code).toBe(0);
  expect(readdirSync(join(privateRoot, "checkouts"))).toHaveLength(1);
  expect(existsSync(dir("kept"))).toBe(true);
});

test("a commit of 200 files killed at instants across its run never wedges the checkout", async () => {
  const { dir, run, privateRoot } = world("wedge");
  const a = dir("a");
  await run("pull", a);
  const env = {
    ...(process.env as Record<string, string>),
    SLIVINGDOC_STORE: `sqlite:${join(root, "wedge", "store.db")}`,
    SLIVINGDOC_PRIVATE_ROOT: privateRoot,
    S3_BUCKET: "",
  };
  for (let i = 0; i < 20; i++) {
    for (let f = 0; f < 200; f++) writeFileSync(join(a, `f${f}.md`), `file ${f}, round ${i}\n`);
    const p = Bun.spawn([binary, "commit", "-m", `round ${i}`, a], { env, stdout: "ignore", stderr: "ignore" });
    // Kill at a spread of instants: from before the lock is taken to after the publication.
    const started = Date.now();
    await new Promise<void>((resolve) => {
      const wait = () => (Date.now() - started >= (i * 7) % 120 || p.exitCode !== null ? resolve() : setTimeout(wait, 1));
      wait();
    });
    p.kill("SIGKILL");
    await p.exited;
    const next = await run("pull", "--json", a);
    expect(next.json?.reason).not.toBe("LOCAL_STATE");
    expect(next.code).toBe(0);
  }
});

// Wedged locks left by older versions: an empty lock file once it is a moment old.
test("an empty lock file does not wedge the checkout", async () => {
  const { dir, run, privateRoot } = world("empty-lock");
  const a = dir("a");
  await run("pull", a);
  const [id] = readdirSync(join(privateRoot, "checkouts"));
  const lock = join(privateRoot, "checkouts", id!, "lock");
  writeFileSync(lock, "");
  const { utimesSync } = await import("node:fs");
  utimesSync(lock, Date.now() / 1000 - 10, Date.now() / 1000 - 10);
  const pulled = await run("pull", "--json", a);
  expect([pulled.code, pulled.json.generation]).toEqual([0, 0]);
  expect(existsSync(lock)).toBe(false);
});
