/**
 * Everyday accidents a user meets with the built binary (issue 12): names
 * that would drive the terminal, paths too long for the file system, files
 * and directories that cannot be read, commit messages that are not UTF-8,
 * and checkouts nested across private roots. Each asserts what the user
 * sees: exit code, human output on stderr and the `--json` object.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { chmodSync, chownSync, mkdirSync, mkdtempSync, readdirSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { EXIT_CODES } from "../../src/contract/tokens.ts";
import { BINARY, requireBinary } from "../support/mcp.ts";

const root = mkdtempSync(join(tmpdir(), "slivingdoc-edges-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));
const store = `sqlite:${join(root, "store.db")}`;
const env: Record<string, string> = {
  PATH: process.env.PATH ?? "/usr/bin:/bin",
  HOME: join(root, "home"),
  XDG_DATA_HOME: join(root, "data"),
  XDG_STATE_HOME: join(root, "state"),
  SLIVINGDOC_STORE: store,
};

interface Run {
  stdout: string;
  stderr: string;
  code: number;
}

async function run(cmd: string[], cwd = root, extraEnv: Record<string, string> = {}): Promise<Run> {
  const p = Bun.spawn(cmd, { cwd, env: { ...env, ...extraEnv }, stdout: "pipe", stderr: "pipe" });
  const [stdout, stderr, code] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited]);
  return { stdout, stderr, code };
}

/** The built binary, as users run it. */
function cli(...args: string[]): Promise<Run> {
  requireBinary();
  return run([BINARY, ...args]);
}

/** Control bytes a terminal acts on: none may reach human output from a name. */
const TERMINAL_CONTROL = /[\u0000-\u0009\u000b-\u001f\u007f-\u009f]/;

describe("names in human output are quoted as git quotes them", () => {
  const ESC = "\x1b";
  const BEL = "\x07";
  test("success lines, the checkout path and --json", async () => {
    const dir = join(root, `co${ESC}[31m${BEL}`);
    expect((await cli("pull", dir)).code).toBe(0);
    const names = [`evil${ESC}[31mred${BEL}.md`, "two\nlines.md", 'say "hi"\\.md', "naïve ünïcode.md", "tab\there.md", "c1\u009bx.md", "plain.md"];
    for (const name of names) writeFileSync(join(dir, name), "x\n");
    const r = await cli("commit", "-m", "names", "--json", dir);
    expect(r.code).toBe(0);
    // --json is exact: the names as they are on disk.
    const result = JSON.parse(r.stdout);
    expect(result.path).toBe(dir);
    expect(result.files.map((f: { path: string }) => f.path).sort()).toEqual([...names].sort());
    // Human output: one line per file, control characters escaped, readable UTF-8 kept.
    expect(r.stderr).not.toMatch(TERMINAL_CONTROL);
    const quotedDir = `"${dir.replace(`${ESC}[31m${BEL}`, "\\033[31m\\a")}"`;
    const lines = r.stderr.trimEnd().split("\n");
    expect(lines[0]).toBe(`committed ${quotedDir} at generation 1: 7 files changed, 7 insertions(+), 0 deletions(-)`);
    expect(lines.slice(1).sort()).toEqual(
      [
        '  "c1\\302\\233x.md" | +1 -0',
        '  "evil\\033[31mred\\a.md" | +1 -0',
        '  "say \\"hi\\"\\\\.md" | +1 -0',
        '  "tab\\there.md" | +1 -0',
        '  "two\\nlines.md" | +1 -0',
        "  naïve ünïcode.md | +1 -0",
        "  plain.md | +1 -0",
      ].sort(),
    );
    const again = await cli("pull", dir);
    expect(again).toEqual({ stdout: "", stderr: `pulled ${quotedDir}: up to date at generation 1\n`, code: 0 });
  });

  test("error files and messages that embed a name", async () => {
    const dir = join(root, "errors");
    expect((await cli("pull", dir)).code).toBe(0);
    const name = `link${ESC}]0;owned${BEL}\n  fake.md · TEXT_CONFLICT`;
    symlinkSync("/etc/hostname", join(dir, name));
    const r = await cli("commit", "-m", "link", dir);
    expect(r.code).toBe(EXIT_CODES.INVALID_REQUEST);
    expect(r.stderr).not.toMatch(TERMINAL_CONTROL);
    expect(r.stderr).toContain('\n  "link\\033]0;owned\\a\\n  fake.md · TEXT_CONFLICT" · INVALID_CONTENT\n');
    // The message embeds the name too: escaped, so no line is forged.
    expect(r.stderr.split("\n").filter((l) => l.includes("fake.md")).length).toBe(2);
    expect(r.stderr).not.toMatch(/^ {2}fake\.md/m);
    const json = await cli("commit", "-m", "link", "--json", dir);
    expect(JSON.parse(json.stdout).files).toEqual([{ path: name, reason: "INVALID_CONTENT", ranges: [] }]);
  });

  test("start-up refusals that echo an argument", async () => {
    for (const args of [
      ["commit", "-m", "x", "one", `two${ESC}[2J`],
      [`pul${ESC}[2J`],
    ]) {
      const r = await cli(...args);
      expect(r.code).toBe(EXIT_CODES.STARTUP);
      expect(r.stderr).not.toMatch(TERMINAL_CONTROL);
      expect(r.stderr).toContain("\\033[2J");
      expect(r.stderr.trimEnd().split("\n").length).toBe(1);
    }
  });
});
