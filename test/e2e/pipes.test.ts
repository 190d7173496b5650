/**
 * Each command's output as a shell user meets it: piped into another
 * process (`| cat`, `| head`, `$(…)`), stdout is the command's answer and
 * stderr its reports and notes. A command whose answer is its output (log,
 * status, generation…) prints it on stdout, as git and the AWS CLI do; pull
 * and commit report on stderr; show and diff put their patch alone on
 * stdout. With `--json`, stdout is exactly one JSON document and a newline,
 * and stderr carries no words.
 *
 * Every command of the registry is in the table below: a new one fails
 * here until it is decided.
 *
 * When stdout cannot take the answer: a reader that closed the pipe early
 * (`| head`) is no failure, as in git; any other failed write (`>
 * /dev/full`: no space left) is one line on stderr and exit 5, never a lost
 * answer with exit 0, nor a stack trace with exit 1.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { OPERATIONS } from "../../src/surfaces/operations.ts";
import { BINARY, requireBinary } from "../support/mcp.ts";

const root = mkdtempSync(join(tmpdir(), "slivingdoc-pipes-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));
const nb = join(root, "notebook");
const env = {
  PATH: process.env.PATH ?? "/usr/bin:/bin",
  HOME: join(root, "home"),
  XDG_STATE_HOME: join(root, "state"),
  TMPDIR: tmpdir(),
  SLIVINGDOC_STORE: `sqlite:${join(root, "store.db")}`,
};

/** `slivingdoc ARGS | PIPE` in a shell: what the next process received, and what reached the terminal's stderr. */
async function piped(args: string[], pipe = "cat"): Promise<{ received: string; stderr: string; code: number }> {
  // pipefail: the exit code is slivingdoc's, not the reader's.
  const p = Bun.spawn(["bash", "-o", "pipefail", "-c", `"$@" | ${pipe}`, "bash", BINARY, ...args], { cwd: root, env, stdout: "pipe", stderr: "pipe" });
  const [received, stderr, code] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited]);
  return { received, stderr, code };
}

async function direct(args: string[]): Promise<{ stdout: string; stderr: string; code: number }> {
  const p = Bun.spawn([BINARY, ...args], { cwd: root, env, stdout: "pipe", stderr: "pipe" });
  const [stdout, stderr, code] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited]);
  if (code !== 0) throw new Error(`${args.join(" ")}: ${code}\n${stderr}`);
  return { stdout, stderr, code };
}

beforeAll(async () => {
  requireBinary();
  await direct(["pull", nb, "--agent", "alice"]);
  writeFileSync(join(nb, "plan.md"), "goal: ship\n");
  await direct(["commit", nb, "-m", "first plan", "--agent", "alice"]);
  writeFileSync(join(nb, "plan.md"), "goal: ship\nstatus: review\n");
  await direct(["commit", nb, "-m", "review", "--agent", "bob"]);
});

/**
 * Each command with arguments that succeed, where its human output goes,
 * and a piece of its answer. "stdout": the answer on stdout, nothing on
 * stderr. "stderr": a report on stderr, nothing on stdout. "patch": the
 * patch on stdout and the entry or note on stderr.
 */
type Case = { args: () => string[]; to: "stdout" | "stderr" | "patch"; shows: string; before?: () => void };
const CASES: Record<string, Case[]> = {
  // A store of its own: its publication would move the others' generation. The first call publishes, the next ones say it is there.
  init: [{ args: () => ["init", "--store", `sqlite:${join(root, "init.db")}`], to: "stderr", shows: ".gitattributes, .gitignore, AGENTS.md" }],
  pull: [{ args: () => ["pull", nb], to: "stderr", shows: "up to date at generation 2" }],
  attach: [{ args: () => ["attach", nb], to: "stderr", shows: "nothing to attach" }],
  commit: [{ args: () => ["commit", nb, "-m", "nothing"], to: "stderr", shows: "nothing to publish" }],
  gc: [{ args: () => ["gc", "--dry-run"], to: "stdout", shows: "gc: generation 2" }],
  generation: [{ args: () => ["generation"], to: "stdout", shows: "generation 2\n" }],
  log: [{ args: () => ["log"], to: "stdout", shows: "· alice" }],
  agents: [{ args: () => ["agents"], to: "stdout", shows: "bob · 1 publication" }],
  show: [
    { args: () => ["show", "2"], to: "patch", shows: "+status: review" },
    { args: () => ["show", "2", "--stat"], to: "stdout", shows: "generation 2 · " },
  ],
  blame: [{ args: () => ["blame", "plan.md"], to: "stdout", shows: "2 (bob   " }],
  export: [{ args: () => ["export", join(root, "exported.git")], to: "stdout", shows: "exported generations 1–2" }],
  status: [{ args: () => ["status", nb], to: "stdout", shows: "nothing to publish" }],
  diff: [
    { args: () => ["diff", nb], to: "stderr", shows: "no changes in" },
    { args: () => ["diff", nb], to: "patch", shows: "+draft", before: () => writeFileSync(join(nb, "draft.md"), "draft\n") },
  ],
  restore: [{ args: () => ["restore", "--from", "1", "--dir", nb, "plan.md"], to: "stdout", shows: "restored 1 file from generation 1" }],
  doctor: [{ args: () => ["doctor", "--samples", "3"], to: "stdout", shows: "doctor: the embedded store is ready for a notebook" }],
};

test("every command of the registry is decided here", () => {
  expect(Object.keys(CASES).sort()).toEqual(OPERATIONS.map((o) => o.cli.name).sort());
});

test("piped into another process: the answer arrives on stdout, reports and notes stay on stderr", async () => {
  for (const [name, cases] of Object.entries(CASES)) {
    for (const c of cases) {
      c.before?.();
      const r = await piped(c.args());
      const where = { command: name, args: c.args().join(" ") };
      expect({ ...where, code: r.code }).toEqual({ ...where, code: 0 });
      if (c.to === "stdout") expect({ ...where, stderr: r.stderr, answer: r.received.includes(c.shows) }).toEqual({ ...where, stderr: "", answer: true });
      else if (c.to === "stderr") expect({ ...where, received: r.received, report: r.stderr.includes(c.shows) }).toEqual({ ...where, received: "", report: true });
      else {
        expect({ ...where, patch: r.received.startsWith("diff --git ") && r.received.includes(c.shows), note: r.stderr.includes("diff --git") }).toEqual({ ...where, patch: true, note: false });
      }
    }
  }
});

test("`slivingdoc log | head` shows the log, `| grep` finds an agent, and `$(slivingdoc generation)` holds the answer", async () => {
  const head = await piped(["log"], "head -n 1");
  expect(head.received).toMatch(/^generation 2 · \S+ · bob\n$/);
  const grep = await piped(["log"], "grep alice");
  expect(grep.received).toMatch(/^generation 1 · \S+ · alice\n$/);
  const p = Bun.spawn(["sh", "-c", 'gen=$("$0" generation) && echo "got [$gen]"', BINARY], { cwd: root, env, stdout: "pipe", stderr: "pipe" });
  expect(await new Response(p.stdout).text()).toBe("got [generation 2]\n");
});

test("--json: exactly one JSON document and a newline on stdout, no words on stderr — for successes and refusals alike", async () => {
  for (const [name, cases] of Object.entries(CASES)) {
    for (const c of cases) {
      const args = c.args();
      // export writes each time into a directory of its own.
      if (name === "export") args[1] = join(root, `exported-${Math.random().toString(16).slice(2)}.git`);
      const r = await piped([...args, "--json"]);
      const where = { command: name, args: args.join(" ") };
      expect({ ...where, code: r.code, stderr: r.stderr, endsWithNewline: r.received.endsWith("}\n") }).toEqual({ ...where, code: 0, stderr: "", endsWithNewline: true });
      expect(typeof JSON.parse(r.received)).toBe("object");
    }
  }
  // A refusal: the error envelope alone.
  const refused = await piped(["show", "9", "--json"]);
  expect(refused.stderr).toBe("");
  expect(JSON.parse(refused.received)).toMatchObject({ code: "INVALID_REQUEST", reason: "MALFORMED_INPUT" });
});

/** `slivingdoc ARGS > /dev/full`: every write to stdout fails with ENOSPC, as on a full disk. */
async function intoFullDevice(args: string[]): Promise<{ stderr: string; code: number }> {
  const p = Bun.spawn(["sh", "-c", '"$@" > /dev/full', "sh", BINARY, ...args], { cwd: root, env, stdout: "pipe", stderr: "pipe" });
  const [stderr, code] = await Promise.all([new Response(p.stderr).text(), p.exited]);
  return { stderr, code };
}

const NO_SPACE = "slivingdoc: could not write the answer: no space left on device";

test("an answer that cannot be written (stdout on a full device): one line on stderr and exit 5, for a small answer and a large one", async () => {
  expect(existsSync("/dev/full")).toBe(true);
  // An edit not committed yet, for diff's patch.
  writeFileSync(join(nb, "pending.md"), "pending\n");
  const cases = [
    ["generation"],
    ["generation", "--json"],
    ["log"],
    ["log", "--json"],
    ["status", nb, "--json"],
    ["show", "2"],
    ["diff", nb],
    ["export", join(root, "exported-full.git")],
  ];
  for (const args of cases) {
    const r = await intoFullDevice(args);
    // show's entry is a note on stderr before its patch, as ever: the line comes after it.
    const stderr = args[0] === "show" ? r.stderr.slice(r.stderr.indexOf("slivingdoc:")) : r.stderr;
    expect({ args: args.join(" "), code: r.code, stderr }).toEqual({
      args: args.join(" "),
      code: 5,
      stderr: args[0] === "export" ? `${NO_SPACE}; generations 1–3 were exported to ${join(root, "exported-full.git")}\n` : `${NO_SPACE}\n`,
    });
  }
  // Past the sink's buffer, a write fails through a promise of its own: still one line, never a stack trace.
  writeFileSync(join(nb, "big.md"), Array.from({ length: 20_000 }, (_, i) => `line ${i} of a long file\n`).join(""));
  const big = await intoFullDevice(["diff", nb]);
  expect({ code: big.code, stderr: big.stderr }).toEqual({ code: 5, stderr: `${NO_SPACE}\n` });
  rmSync(join(nb, "big.md"));
});

test("commit --json into a full device: the commit lands, and the line on stderr says so", async () => {
  writeFileSync(join(nb, "landed.md"), "landed\n");
  const before = JSON.parse((await direct(["generation", "--json"])).stdout).generation as number;
  const r = await intoFullDevice(["commit", nb, "-m", "answer lost", "--json"]);
  expect({ code: r.code, stderr: r.stderr }).toEqual({ code: 5, stderr: `${NO_SPACE}; the commit landed at generation ${before + 1}\n` });
  const log = await direct(["log", "--limit", "1"]);
  expect(log.stdout).toContain("answer lost");
  // A failed answer of a refusal keeps the refusal's own exit code.
  const refused = await intoFullDevice(["show", "99", "--json"]);
  expect({ code: refused.code, stderr: refused.stderr }).toEqual({ code: 3, stderr: `${NO_SPACE}\n` });
});

test("a reader that closes the pipe early (`| head`) ends the command quietly, exit 0, even with a large answer left to write", async () => {
  writeFileSync(join(nb, "long.md"), Array.from({ length: 20_000 }, (_, i) => `line ${i}\n`).join(""));
  await direct(["commit", nb, "-m", "a long file"]);
  const generation = JSON.parse((await direct(["generation", "--json"])).stdout).generation as number;
  for (const args of [["show", String(generation)], ["log", "--json"]]) {
    const r = await piped(args, "head -c 10");
    // show's entry is its note on stderr, before the patch; nothing more.
    const note = args[0] === "show" ? r.stderr.replace(/^generation \d+ · [^]*?long\.md \| \+20000 -0 \(added\)\n/, "") : r.stderr;
    expect({ args: args.join(" "), code: r.code, stderr: note, received: r.received.length }).toEqual({ args: args.join(" "), code: 0, stderr: "", received: 10 });
  }
});
