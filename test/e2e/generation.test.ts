/**
 * `slivingdoc generation`, through the binary: the accepted generation on
 * stdout, `{ "generation": N }` with --json, the store flags pull takes,
 * and refusals like every command's.
 */
import { afterAll, expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { EXIT_CODES } from "../../src/contract/tokens.ts";
import { BINARY, requireBinary } from "../support/mcp.ts";

const root = mkdtempSync(join(tmpdir(), "slivingdoc-generation-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));
const env = { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: join(root, "home"), XDG_STATE_HOME: join(root, "state"), TMPDIR: tmpdir() };
const store = ["--store", `sqlite:${join(root, "store.db")}`];

async function run(...args: string[]) {
  const p = Bun.spawn([BINARY, ...args], { cwd: root, env, stdout: "pipe", stderr: "pipe" });
  const [stdout, stderr, code] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited]);
  return { stdout, stderr, code };
}

test("generation prints the accepted generation, 0 before the first commit", async () => {
  requireBinary();
  expect(await run("generation", ...store)).toEqual({ stdout: "generation 0\n", stderr: "", code: 0 });
  const notebook = join(root, "notebook");
  expect((await run("pull", ...store, notebook)).code).toBe(0);
  writeFileSync(join(notebook, "a.md"), "one\n");
  expect((await run("commit", "-m", "one", ...store, notebook)).code).toBe(0);
  writeFileSync(join(notebook, "a.md"), "two\n");
  expect((await run("commit", "-m", "two", ...store, notebook)).code).toBe(0);
  expect(await run("generation", ...store)).toEqual({ stdout: "generation 2\n", stderr: "", code: 0 });
  const json = await run("generation", "--json", ...store);
  expect(JSON.parse(json.stdout)).toEqual({ generation: 2 });
  expect(json.code).toBe(0);
});

test("generation refuses a path and a bad store like every command", async () => {
  requireBinary();
  const path = await run("generation", ...store, "somewhere");
  expect([path.code, path.stderr]).toEqual([EXIT_CODES.STARTUP, "slivingdoc: argument refusal: generation takes no path; got somewhere\n"]);
  const bad = await run("generation", "--store", "ftp://x");
  expect([bad.code, bad.stderr]).toEqual([EXIT_CODES.STARTUP, "slivingdoc: invalid configuration: the store must be s3://BUCKET[/PREFIX] or sqlite:PATH\n"]);
});
