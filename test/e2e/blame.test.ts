/**
 * `slivingdoc blame` through the binary (docs/history.md): who last wrote
 * each line, judged by C git — `git blame --porcelain` on the history
 * `slivingdoc export` writes, over a seeded history of many agents' edits,
 * whole and after compaction — and by hand for three agents; names and
 * lines from agents escaped in human output, exact in --json.
 */
import { afterAll, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { EXIT_CODES } from "../../src/contract/tokens.ts";
import type { BlameLine } from "../../src/engine/history/blame.ts";
import { runAs } from "../support/binary-env.ts";
import { requireBinary } from "../support/mcp.ts";
import { Choices, isolatedGitEnv, mulberry32 } from "../support/seeded.ts";

const root = mkdtempSync(join(tmpdir(), "slivingdoc-blame-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));
const env = { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: join(root, "home"), XDG_STATE_HOME: join(root, "state"), TMPDIR: tmpdir(), USER: "tester" };
const gitEnv = isolatedGitEnv(join(root, "git-home"));

let stores = 0;
function freshStore(): string[] {
  return ["--store", `sqlite:${join(root, `store-${++stores}.db`)}`];
}

function run(args: string[], extraEnv: Record<string, string> = {}) {
  return runAs({ ...env, ...extraEnv }, ...args);
}

async function ok(args: string[], extraEnv: Record<string, string> = {}) {
  const r = await run(args, extraEnv);
  if (r.code !== 0) throw new Error(`${args.join(" ")} exited ${r.code}: ${r.stderr}`);
  return r;
}

async function json(args: string[]) {
  return JSON.parse((await ok([...args, "--json"])).stdout);
}

function cgit(dir: string, ...args: string[]): string {
  const p = Bun.spawnSync(["git", ...args], { cwd: dir, env: gitEnv, stdout: "pipe", stderr: "pipe" });
  if (p.exitCode !== 0) throw new Error(`git ${args.join(" ")}: ${p.stderr.toString()}`);
  return p.stdout.toString();
}

/** A checkout of a fresh notebook, and a helper committing whole files under an agent's name. */
async function notebook(store: string[], extraEnv: Record<string, string> = {}) {
  const dir = mkdtempSync(join(root, "nb-"));
  await ok(["pull", ...store, dir]);
  return async (files: Record<string, string>, message: string, agent: string) => {
    for (const [path, content] of Object.entries(files)) {
      mkdirSync(join(dir, path, ".."), { recursive: true });
      writeFileSync(join(dir, path), content);
    }
    await ok(["commit", "-m", message, ...store, "--agent", agent, dir], extraEnv);
  };
}

/** One line of `blame --json`: the engine's own shape. */
type Line = BlameLine;

/**
 * C git's blame of `path` at `generation` of an export whose `main` is
 * generation `head`: per line, the generation and author, null for a line
 * of a shallow export's boundary commit. (git marks the root commit a
 * boundary too: there it is generation 1.)
 */
function gitBlame(dir: string, head: number, generation: number, path: string, shallow: boolean): { generation: number | null; agent: string; text: string }[] {
  const commits = cgit(dir, "rev-list", "--first-parent", "main").trim().split("\n");
  const generationOf = new Map(commits.map((c, i) => [c, head - i]));
  const out = cgit(dir, "blame", "--porcelain", `main~${head - generation}`, "--", path).split("\n");
  const authors = new Map<string, string>();
  const boundary = new Set<string>();
  const lines: { generation: number | null; agent: string; text: string }[] = [];
  let commit = "";
  for (const l of out) {
    const header = /^([0-9a-f]{40}) \d+ \d+/.exec(l);
    if (header) commit = header[1]!;
    else if (l.startsWith("author ")) authors.set(commit, l.slice(7));
    else if (l === "boundary") boundary.add(commit);
    else if (l.startsWith("\t")) lines.push({ generation: shallow && boundary.has(commit) ? null : generationOf.get(commit)!, agent: authors.get(commit)!, text: l.slice(1) });
  }
  return lines;
}

const AGENTS = ["ann", "bo", "cy", "dee", "eli"];
/** Few distinct lines, so that a file holds many equal ones and where a change sits is git's diff's choice. */
const WORDS = ["", "", "- item", "- item", "## Plan", "}", "  indented", "    deeper", "text", "done", "TODO"];

/** One seeded edit of `lines`: inserts, deletes and changes at random places. */
function edit(c: Choices, lines: string[], tag: string): string[] {
  const out = [...lines];
  for (let n = 1 + c.int(4); n > 0; n--) {
    const at = c.int(out.length + 1);
    const what = c.int(3);
    const fresh = c.chance(0.5) ? c.pick(WORDS) : `${tag} ${c.int(1000)}`;
    if (what === 0 || out.length === 0) out.splice(at, 0, ...Array.from({ length: 1 + c.int(3) }, () => (c.chance(0.5) ? c.pick(WORDS) : fresh)));
    else if (what === 1) out.splice(Math.min(at, out.length - 1), 1 + c.int(2));
    else out[Math.min(at, out.length - 1)] = fresh;
  }
  return out;
}

/** `count` seeded commits by random agents over a few files (one added later), each file's lines kept in `files`; the first commit writes `base` into every file. */
async function randomHistory(seed: number, count: number, store: string[], base: string[], extraEnv: Record<string, string> = {}) {
  const c = new Choices(mulberry32(seed));
  const commit = await notebook(store, extraEnv);
  const files: Record<string, string[]> = { "a.md": [...base, "a"], "d/b.md": [...base, "b"] };
  for (let g = 1; g <= count; g++) {
    if (g === 9) files["c.md"] = ["c first"];
    else if (g > 1) {
      const names = Object.keys(files);
      for (const name of new Set([c.pick(names), c.pick(names)])) files[name] = edit(c, files[name]!, `g${g}`);
    }
    // Some files end without a newline; one generation in five.
    const text = (lines: string[]) => lines.join("\n") + (c.chance(0.2) ? "" : "\n");
    await commit(Object.fromEntries(Object.entries(files).map(([k, v]) => [k, text(v)])), `edit ${g}\n\nbody of ${g}`, c.pick(AGENTS));
  }
}

/** Blame and git blame agree on every line of `path` at `generation`: the same publication and agent, or both older than the history. */
async function expectAsGit(store: string[], dir: string, shallow: boolean, head: number, generation: number, path: string): Promise<Line[]> {
  const ours = await json(["blame", path, "--at", String(generation), ...store]);
  const theirs = gitBlame(dir, head, generation, path, shallow);
  expect(ours.lines.map((l: Line) => l.text)).toEqual(theirs.map((l) => l.text));
  const where = { path, generation };
  expect({ ...where, lines: ours.lines.map((l: Line) => [l.generation, l.generation === null ? null : l.agent]) }).toEqual({
    ...where,
    lines: theirs.map((l) => [l.generation, l.generation === null ? null : l.agent]),
  });
  return ours.lines;
}

test("blame names the publication C git's blame names, for every line, file and generation of a seeded history of five agents", async () => {
  requireBinary();
  const store = freshStore();
  await randomHistory(20261203, 30, store, ["# Notes", "", "- item"]);
  const dir = join(root, "export-whole");
  await ok(["export", dir, ...store]);
  let compared = 0;
  const generations = new Set<number>();
  for (let generation = 30; generation >= 1; generation -= 2) {
    for (const path of generation >= 9 ? ["a.md", "d/b.md", "c.md"] : ["a.md", "d/b.md"]) {
      const lines = await expectAsGit(store, dir, false, 30, generation, path);
      for (const l of lines) if (l.generation !== null) generations.add(l.generation);
      compared += lines.length;
    }
  }
  // The comparison covered many lines, written by many publications.
  expect(compared).toBeGreaterThan(100);
  expect(generations.size).toBeGreaterThan(10);
  // The accepted generation by default; each line names its message's first line.
  const accepted = await json(["blame", "a.md", ...store]);
  expect(accepted.generation).toBe(30);
  expect(accepted.oldestRetained).toBe(1);
  for (const l of accepted.lines as Line[]) expect(l.message).toBe(`edit ${l.generation}`);
}, 180_000);

test("after compaction, lines older than the retained history say so, and the rest agree with C git's blame of the shallow export", async () => {
  requireBinary();
  const store = freshStore();
  const base = Array.from({ length: 12 }, (_, i) => `kept ${i}`);
  await randomHistory(7, 40, store, base, { SLIVINGDOC_HISTORY_PERIOD: "0" });
  const log = await json(["log", ...store]);
  expect(log.oldestRetained).toBeGreaterThan(1);
  const dir = join(root, "export-shallow");
  expect(await json(["export", dir, ...store])).toMatchObject({ shallow: true });
  for (const path of ["a.md", "d/b.md", "c.md"]) await expectAsGit(store, dir, true, 40, 40, path);
  await expectAsGit(store, dir, true, 40, log.oldestRetained + 2, "a.md");
  const blamed = await json(["blame", "a.md", ...store]);
  expect(blamed.oldestRetained).toBe(log.oldestRetained);
  const older = (blamed.lines as Line[]).filter((l) => l.generation === null);
  // Lines generation 1 wrote that no edit reached.
  expect(older.map((l) => l.text)).toContain("kept 0");
  for (const l of older) expect([l.agent, l.time, l.message]).toEqual([null, null, null]);
  const human = (await ok(["blame", "a.md", ...store])).stdout.split("\n");
  const kept0 = human.find((l) => l.endsWith(") kept 0"))!;
  expect(kept0).toStartWith(`^${log.oldestRetained} (older than the retained history (generation ${log.oldestRetained} and before) `);
  // A generation compaction dropped is refused as show refuses it.
  const r = await run(["blame", "a.md", "--at", "1", ...store, "--json"]);
  expect(r.code).toBe(EXIT_CODES.INVALID_REQUEST);
  expect(JSON.parse(r.stdout)).toMatchObject({ code: "INVALID_REQUEST", reason: "MALFORMED_INPUT" });
  expect(JSON.parse(r.stdout).message).toContain(`older than the retained history; the oldest retained generation is ${log.oldestRetained}`);
}, 240_000);

test("a file three agents wrote: each line names its agent, generation, time and message", async () => {
  requireBinary();
  const store = freshStore();
  const commit = await notebook(store);
  await commit({ "plan.md": "goal: ship\nowner: ann\nstatus: draft\n" }, "plan it", "ann");
  await commit({ "plan.md": "goal: ship\nowner: ann\nstatus: review\n" }, "ready for review\nwith a body", "bo");
  await commit({ "plan.md": "goal: ship v2\nowner: ann\nstatus: review\nrisk: none\n", "other.md": "x\n" }, "scope", "cy");
  const blamed = await json(["blame", "plan.md", ...store]);
  const log = await json(["log", ...store]);
  const timeOf = (g: number) => log.entries.find((e: { generation: number }) => e.generation === g).time;
  expect(blamed).toEqual({
    path: "plan.md",
    generation: 3,
    oldestRetained: 1,
    lines: [
      { line: 1, text: "goal: ship v2", generation: 3, agent: "cy", time: timeOf(3), message: "scope" },
      { line: 2, text: "owner: ann", generation: 1, agent: "ann", time: timeOf(1), message: "plan it" },
      { line: 3, text: "status: review", generation: 2, agent: "bo", time: timeOf(2), message: "ready for review" },
      { line: 4, text: "risk: none", generation: 3, agent: "cy", time: timeOf(3), message: "scope" },
    ],
  });
  expect((await json(["blame", "plan.md", "--at", "2", ...store])).lines.map((l: Line) => l.agent)).toEqual(["ann", "ann", "bo"]);
  // Human output as git blame's: generation, agent, time, line number, text.
  const human = await ok(["blame", "./plan.md", ...store]);
  expect(human.stderr).toBe("");
  expect(human.stdout).toBe(
    [`3 (cy  ${timeOf(3)} 1) goal: ship v2`, `1 (ann ${timeOf(1)} 2) owner: ann`, `2 (bo  ${timeOf(2)} 3) status: review`, `3 (cy  ${timeOf(3)} 4) risk: none`, ""].join("\n"),
  );
  // A path that is no file of the notebook at that generation is refused by its name.
  for (const [path, at] of [["missing.md", "3"], ["other.md", "2"], ["d", "3"]] as const) {
    const r = await run(["blame", path, "--at", at, ...store, "--json"]);
    expect(r.code).toBe(EXIT_CODES.INVALID_REQUEST);
    const envelope = JSON.parse(r.stdout);
    expect([envelope.code, envelope.reason]).toEqual(["INVALID_REQUEST", "MALFORMED_INPUT"]);
    expect(envelope.message).toBe(`"${path}" is not a file of the notebook at generation ${at}.`);
  }
  const future = JSON.parse((await run(["blame", "plan.md", "--at", "4", ...store, "--json"])).stdout);
  expect(future.message).toContain("does not exist yet; the newest is 3");
  expect((await run(["blame", ...store])).code).toBe(EXIT_CODES.STARTUP);
  expect((await run(["blame", "plan.md", "--at", "x", ...store])).code).toBe(EXIT_CODES.STARTUP);
}, 60_000);

test("control and invisible characters of agents' names and lines are escaped in human output, exact in --json", async () => {
  requireBinary();
  const store = freshStore();
  const commit = await notebook(store);
  const agent = "ev\u202Eil\u200B'\"&amp;";
  const line = "<script>alert(1)</script>\u001b[31m\u0007\u009b\u202E\ttab\r";
  await commit({ "x.md": `plain\n${line}\n` }, "<b>msg</b>\u001b[2J", agent);
  const blamed = await json(["blame", "x.md", ...store]);
  expect(blamed.lines[1]).toMatchObject({ text: line, agent, message: "<b>msg</b>\u001b[2J" });
  const human = await ok(["blame", "x.md", ...store]);
  const rows = human.stdout.split("\n");
  expect(rows.length).toBe(3);
  expect(rows[1]).toContain("(ev\\342\\200\\256il\\342\\200\\213'\"&amp; ");
  expect(rows[1]).toEndWith(" 2) <script>alert(1)</script>\\033[31m\\a\\302\\233\\342\\200\\256\ttab\\r");
  expect(human.stdout).not.toMatch(/[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u200b\u202e]/);
}, 60_000);
