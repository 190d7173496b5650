/**
 * `slivingdoc init` through the built binary (docs/cli.md, docs/teams.md): a
 * new team's notebook gets the recommended `.gitattributes`, `.gitignore` and
 * an `AGENTS.md`, in one commit of the operator's, made where the store is
 * named even when its directory does not exist yet; files the notebook
 * already has are left as they are; and no checkout's local edits ride
 * along. (That the layout keeps a team's appends from conflicting is
 * test/bench/team.test.ts's.)
 */
import { afterAll, expect, test } from "bun:test";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { LAYOUT_FILES } from "../../src/engine/init.ts";
import { BINARY, requireBinary } from "../support/mcp.ts";

const root = mkdtempSync(join(tmpdir(), "slivingdoc-e2e-init-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));
// init's scratch checkout is made in TMPDIR: a directory of the test's own, to see it go.
const scratch = join(root, "tmp");
mkdirSync(scratch);
const env = { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: join(root, "home"), XDG_STATE_HOME: join(root, "state"), TMPDIR: scratch, USER: "tester" };

async function run(...args: string[]) {
  requireBinary();
  const p = Bun.spawn([BINARY, ...args], { env, stdout: "pipe", stderr: "pipe" });
  const [stdout, stderr, code] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited]);
  return { stdout, stderr, code };
}

async function ok(...args: string[]) {
  const r = await run(...args);
  if (r.code !== 0) throw new Error(`${args.join(" ")} exited ${r.code}: ${r.stderr}`);
  return r;
}

test("init makes the store where it is named, publishes the layout in one commit of the operator's, and pulls PATH", async () => {
  const store = ["--store", `sqlite:${join(root, "new", "place", "store.db")}`];
  // Any other command refuses a store path whose directory does not exist; init is the set-up path that makes it.
  expect((await run("pull", ...store, join(root, "refused"))).code).toBe(2);
  const dir = join(root, "a");
  const r = await ok("init", ...store, "--agent", "operator", dir);
  expect(r.stderr).toStartWith("init: published .gitattributes, .gitignore, AGENTS.md at generation 1\npulled ");
  for (const f of LAYOUT_FILES) expect(readFileSync(join(dir, f.path), "utf8")).toBe(f.text);
  const log = JSON.parse((await ok("log", ...store, "--json")).stdout);
  expect(log.entries).toHaveLength(1);
  expect(log.entries[0]).toMatchObject({ generation: 1, agent: "operator", message: "init: the team layout (.gitattributes, .gitignore, AGENTS.md)" });
  expect(log.entries[0].files.map((f: { path: string }) => f.path).sort()).toEqual([".gitattributes", ".gitignore", "AGENTS.md"]);
  // Its scratch checkout is gone, with its private state.
  expect(readdirSync(scratch)).toEqual([]);
  expect(readdirSync(join(root, "state", "slivingdoc", "checkouts"))).toHaveLength(1);

  // Again: nothing to add, nothing published.
  const again = await ok("init", ...store);
  expect(again.stderr).toBe("init: the notebook already has .gitattributes, .gitignore, AGENTS.md; nothing published (generation 1)\n");
  expect(JSON.parse((await ok("generation", ...store, "--json")).stdout).generation).toBe(1);
});

test("files the notebook has are left as they are; only init's own files are published, never a checkout's edits", async () => {
  const store = ["--store", `sqlite:${join(root, "store-2.db")}`];
  const a = join(root, "b");
  await ok("pull", ...store, a);
  writeFileSync(join(a, ".gitattributes"), "notes.md merge=union\n");
  await ok("commit", "-m", "our own attributes", ...store, a);
  // An unpublished edit in a checkout of the same notebook.
  writeFileSync(join(a, "draft.md"), "not ready\n");

  const r = await ok("init", ...store, "--json");
  expect(JSON.parse(r.stdout)).toEqual({ generation: 2, published: [".gitignore", "AGENTS.md"], left: [".gitattributes"], pulled: null });
  const human = await ok("init", ...store);
  expect(human.stderr).toBe("init: the notebook already has .gitattributes, .gitignore, AGENTS.md; nothing published (generation 2)\n");

  const log = JSON.parse((await ok("log", ...store, "--json")).stdout);
  expect(log.entries[0].files.map((f: { path: string }) => f.path).sort()).toEqual([".gitignore", "AGENTS.md"]);
  await ok("pull", ...store, a);
  expect(readFileSync(join(a, ".gitattributes"), "utf8")).toBe("notes.md merge=union\n");
  expect(existsSync(join(a, "AGENTS.md"))).toBe(true);
  // The draft is still the checkout's own, unpublished.
  const status = JSON.parse((await ok("status", ...store, "--json", a)).stdout);
  expect(status.files.map((c: { path: string }) => c.path)).toEqual(["draft.md"]);
});

test("with some files present, the human line says which it published and which it left", async () => {
  const store = ["--store", `sqlite:${join(root, "store-3.db")}`];
  const a = join(root, "c");
  await ok("pull", ...store, a);
  writeFileSync(join(a, "AGENTS.md"), "# ours\n");
  await ok("commit", "-m", "our own guide", ...store, a);
  const r = await ok("init", ...store);
  expect(r.stderr).toBe("init: published .gitattributes, .gitignore at generation 2; left 1 file the notebook already had as it is: AGENTS.md\n");
});

test("a PATH a first pull would refuse is refused before anything is published, unless --adopt", async () => {
  const store = ["--store", `sqlite:${join(root, "store-4.db")}`];
  const mine = join(root, "home-like");
  mkdirSync(join(mine, ".aws"), { recursive: true });
  writeFileSync(join(mine, ".aws", "credentials"), "[default]\n");
  writeFileSync(join(mine, "todo.txt"), "mine\n");
  const r = await run("init", ...store, mine);
  expect(r.code).toBe(2);
  expect(r.stderr).toContain(`init PATH "${mine}" holds 2 files`);
  expect(JSON.parse((await ok("generation", ...store, "--json")).stdout).generation).toBe(0);
  const adopted = await ok("init", "--adopt", ...store, mine);
  expect(adopted.stderr).toStartWith("init: published .gitattributes, .gitignore, AGENTS.md at generation 1\n");
  expect(existsSync(join(mine, "AGENTS.md"))).toBe(true);
});
