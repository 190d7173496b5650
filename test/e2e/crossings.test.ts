/**
 * Where work crossed, and who is publishing, through the binary
 * (docs/history.md): two agents commit from the same base, so the second
 * publication is merged onto the first; `log` marks it in words and in
 * `--json`, `agents` counts each agent's publications, and an export keeps
 * the record where C git reads it.
 */
import { afterAll, expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { EXIT_CODES } from "../../src/contract/tokens.ts";
import { git } from "../support/cgit.ts";
import { BINARY, requireBinary } from "../support/mcp.ts";

const root = mkdtempSync(join(tmpdir(), "slivingdoc-crossings-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));
const env = { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: join(root, "home"), XDG_STATE_HOME: join(root, "state"), TMPDIR: tmpdir(), USER: "tester" };
const store = ["--store", `sqlite:${join(root, "store.db")}`];

async function run(args: string[]) {
  const p = Bun.spawn([BINARY, ...args], { cwd: root, env, stdout: "pipe", stderr: "pipe" });
  const [stdout, stderr, code] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited]);
  return { stdout, stderr, code };
}

async function ok(args: string[]) {
  const r = await run(args);
  if (r.code !== 0) throw new Error(`${args.join(" ")} exited ${r.code}: ${r.stderr}`);
  return r;
}

async function json(args: string[]) {
  return JSON.parse((await ok([...args, "--json"])).stdout);
}

test("log marks the publication merged onto one its agent had not seen; agents counts each agent's; export keeps the record for C git", async () => {
  requireBinary();
  expect((await ok(["agents", ...store])).stdout).toBe("agents: the store holds no notebook yet\n");
  const [a, b] = [join(root, "a"), join(root, "b")];
  await ok(["pull", ...store, a]);
  writeFileSync(join(a, "plan.md"), "plan\n");
  await ok(["commit", "-m", "plan", "--agent", "ann", ...store, a]);
  // Both checkouts at generation 1; ann publishes 2, then bo, who never saw it, 3.
  await ok(["pull", ...store, b]);
  writeFileSync(join(a, "log-ann.md"), "ann was here\n");
  await ok(["commit", "-m", "ann's", "--agent", "ann", ...store, a]);
  writeFileSync(join(b, "log-bo.md"), "bo was here\n");
  await ok(["commit", "-m", "bo's", "--agent", "bo", ...store, b]);

  const log = await json(["log", ...store]);
  expect(log.entries.map((e: { generation: number; base: number; crossed: unknown; crossedUnretained: number }) => [e.generation, e.base, e.crossed, e.crossedUnretained])).toEqual([
    [3, 1, [{ generation: 2, agent: "ann" }], 0],
    [2, 1, [], 0],
    [1, 0, [], 0],
  ]);
  const human = await ok(["log", ...store]);
  expect(human.stderr).toBe("");
  expect(human.stdout).toContain("generation 3 · ");
  expect(human.stdout).toContain(" · bo\n    bo's\n    built on generation 1; crossed generation 2 by ann (2)\n    1 file changed");
  expect(human.stdout.match(/crossed/g)).toHaveLength(1);
  expect((await ok(["show", "3", "--stat", ...store])).stdout).toContain("    built on generation 1; crossed generation 2 by ann (2)\n");

  const agents = await json(["agents", ...store]);
  const time = (g: number) => log.entries.find((e: { generation: number }) => e.generation === g).time;
  expect(agents).toEqual({
    generation: 3,
    oldestRetained: 1,
    agents: [
      { agent: "bo", publications: 1, first: { generation: 3, time: time(3) }, last: { generation: 3, time: time(3) }, files: ["log-bo.md"], changesUnknown: [] },
      { agent: "ann", publications: 2, first: { generation: 1, time: time(1) }, last: { generation: 2, time: time(2) }, files: ["log-ann.md", "plan.md"], changesUnknown: [] },
    ],
  });
  const words = await ok(["agents", ...store]);
  expect(words.stderr).toBe("");
  expect(words.stdout).toBe(
    "2 agents published in the retained history (generations 1–3 are retained), the latest first:\n\n" +
      `bo · 1 publication · first generation 3 at ${time(3)} · last generation 3 at ${time(3)}\n    1 file touched\n    log-bo.md\n\n` +
      `ann · 2 publications · first generation 1 at ${time(1)} · last generation 2 at ${time(2)}\n    2 files touched\n    log-ann.md\n    plan.md\n`,
  );
  expect((await json(["agents", ...store, "--since", "2999-01-01"])).agents).toEqual([]);
  for (const args of [["--since", "yesterday"], ["--limit", "1"], ["somewhere"]]) {
    expect((await run(["agents", ...store, ...args])).code).toBe(EXIT_CODES.STARTUP);
  }

  const dir = join(root, "export");
  await ok(["export", dir, ...store]);
  const commit = git(dir, "cat-file", "-p", "main").out;
  expect(commit).toContain("\ncommitter bo <slivingdoc@localhost> ");
  expect(commit).toContain("\nslivingdoc-base-generation 1\n\nbo's");
  expect(commit.endsWith("\n\nbo's")).toBe(true);
  expect(git(dir, "fsck", "--strict", "--no-dangling")).toMatchObject({ code: 0, err: "" });
});
