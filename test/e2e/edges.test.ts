/**
 * Everyday accidents a user meets with the built binary: names that would
 * drive the terminal, paths too long for the file system, files and
 * directories that cannot be read, commit messages that are not UTF-8, and
 * checkouts nested across private roots. Each asserts what the user sees:
 * exit code, human output on stderr and the `--json` object.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { chmodSync, chownSync, mkdirSync, mkdtempSync, readdirSync, rmSync, symlinkSync, truncateSync, writeFileSync } from "node:fs";
import { hostname, tmpdir } from "node:os";
import { join } from "node:path";
import { EXIT_CODES } from "../../src/contract/tokens.ts";
import { openSqliteStore } from "../../src/store/sqlite.ts";
import { runCli } from "../../src/surfaces/cli/run.ts";
import { withPacksInGit } from "../support/cgit.ts";
import { BINARY, requireBinary } from "../support/mcp.ts";
import { spawnServe } from "../support/raw-mcp.ts";
import { SYSTEM_CLOCK } from "../../src/surfaces/system-clock.ts";

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
    const r = await cli("commit", "-m", "names", dir);
    expect(r.code).toBe(0);
    // --json is exact: the names as they are on disk.
    const result = JSON.parse((await cli("log", "--json")).stdout);
    expect(result.entries[0].files.map((f: { path: string }) => f.path).sort()).toEqual([...names].sort());
    expect(JSON.parse((await cli("pull", "--json", dir)).stdout).path).toBe(dir);
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

  // Characters a terminal prints as nothing, or prints other text around:
  // a right-to-left override shows `evil‮txt.md` as "evildm.txt", an
  // isolate or a zero-width space hides itself, U+2028 breaks the line.
  test("invisible characters in names and agents: escaped in human output, exact in --json", async () => {
    const INVISIBLE = /[\p{Cf}\u2028\u2029]/u;
    const own = { SLIVINGDOC_STORE: `sqlite:${join(root, "invisible.db")}` };
    const dir = join(root, "invisible");
    expect((await run([BINARY, "pull", dir], root, own)).code).toBe(0);
    const names = ["evil\u202etxt.md", "zero\u200bwidth.md", "iso\u2066late\u2069.md", "mark\u200f.md", "line\u2028sep.md", "naïve.md"];
    for (const name of names) writeFileSync(join(dir, name), "x\n");
    const agent = "ann\u202eevil";
    const committed = await run([BINARY, "commit", "-m", "names", "--agent", agent, dir], root, own);
    expect(committed.code).toBe(0);
    expect(committed.stderr).not.toMatch(INVISIBLE);
    expect(committed.stderr.trimEnd().split("\n").slice(1).sort()).toEqual(
      [
        '  "evil\\342\\200\\256txt.md" | +1 -0',
        '  "zero\\342\\200\\213width.md" | +1 -0',
        '  "iso\\342\\201\\246late\\342\\201\\251.md" | +1 -0',
        '  "mark\\342\\200\\217.md" | +1 -0',
        '  "line\\342\\200\\250sep.md" | +1 -0',
        "  naïve.md | +1 -0",
      ].sort(),
    );
    const log = await run([BINARY, "log"], root, own);
    expect(log.code).toBe(0);
    expect(log.stdout).not.toMatch(INVISIBLE);
    expect(log.stdout.split("\n")[0]).toMatch(/^generation 1 · \S+ · ann\\342\\200\\256evil$/);
    expect(log.stdout).toContain('\n    "evil\\342\\200\\256txt.md" | +1 -0 (added)\n');
    // --json carries them as they are.
    const json = JSON.parse((await run([BINARY, "log", "--json"], root, own)).stdout);
    expect(json.entries[0].agent).toBe(agent);
    expect(json.entries[0].files.map((f: { path: string }) => f.path).sort()).toEqual([...names].sort());
  });
});

/**
 * Who publishes under `serve` is `CLIENT/VERSION USER@HOST` from the MCP
 * client's clientInfo, and `USER@HOST` without a client. An empty or blank
 * client name is no client: it gave "/ USER@HOST" (and "/1.0 USER@HOST").
 */
test("an MCP client with an empty or blank name publishes as user@host; a blank version is left out", async () => {
  const own = { ...env, USER: "tester", SLIVINGDOC_STORE: `sqlite:${join(root, "clients.db")}` };
  const dir = join(root, "clients");
  const clients = [
    { name: "", version: "" },
    { name: " \t", version: "1.0" },
    { name: "host", version: " " },
    { name: "host", version: "2.1" },
  ];
  for (const [i, clientInfo] of clients.entries()) {
    const server = spawnServe(own, ["--workspace-root", dir]);
    server.send({ jsonrpc: "2.0", id: 0, method: "initialize", params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo } });
    await server.answer(0);
    server.send({ jsonrpc: "2.0", method: "notifications/initialized" });
    server.send({ jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "notes_pull", arguments: {} } });
    expect((await server.answer(1)).result!.structuredContent.code).toBe("OK");
    writeFileSync(join(dir, `from-${i}.md`), `${i}\n`);
    server.send({ jsonrpc: "2.0", id: 2, method: "tools/call", params: { name: "notes_commit", arguments: { message: `client ${i}` } } });
    expect((await server.answer(2)).result!.structuredContent.code).toBe("OK");
    expect((await server.finish()).code).toBe(0);
  }
  const log = JSON.parse((await run([BINARY, "log", "--json"], root, own)).stdout);
  const who = `tester@${hostname()}`;
  expect(log.entries.map((e: { message: string; agent: string }) => [e.message, e.agent]).reverse()).toEqual([
    ["client 0", who],
    ["client 1", who],
    ["client 2", `host ${who}`],
    ["client 3", `host/2.1 ${who}`],
  ]);
});

/** Make `depth` nested directories of 200-byte names under `dir` (by relative steps: their absolute path outgrows PATH_MAX) and a file in the deepest. */
function deepTree(dir: string, depth: number, file: string): string {
  const names = Array.from({ length: depth }, (_, i) => String.fromCharCode(97 + i).repeat(200));
  // chdir by one name at a time: no call ever sees the whole path (sh's cd would build it).
  const script = `const fs = require("node:fs"); const [dir, file, ...names] = process.argv.slice(1);
    process.chdir(dir); for (const n of names) { fs.mkdirSync(n); process.chdir(n); } fs.writeFileSync(file, "deep\\n");`;
  // Node, not Bun: Bun resolves relative paths against getcwd(), which fails this deep.
  const r = Bun.spawnSync(["node", "-e", script, dir, file, ...names]);
  if (r.exitCode !== 0) throw new Error(`could not build the deep tree: ${r.stderr.toString()}`);
  return `${names.join("/")}/${file}`;
}

/** rm(1) walks any depth; fs.rmSync stops at PATH_MAX. */
function removeDeep(dir: string): void {
  Bun.spawnSync(["rm", "-rf", dir]);
}

test("a file over 128 MiB is refused by name from its size, before it is read; the rest waits for the next commit", async () => {
  const dir = join(root, "huge");
  expect((await cli("pull", dir)).code).toBe(0);
  // Sparse, so nothing is written; read, its NUL bytes would be refused with other words.
  writeFileSync(join(dir, "huge.md"), "");
  truncateSync(join(dir, "huge.md"), 128 * 1024 * 1024 + 1);
  writeFileSync(join(dir, "small.md"), "small\n");
  const r = await cli("commit", "-m", "huge", "--json", dir);
  expect(r.code).toBe(EXIT_CODES.INVALID_REQUEST);
  const e = JSON.parse(r.stdout);
  expect([e.code, e.reason, e.action]).toEqual(["INVALID_REQUEST", "INVALID_CONTENT", "EDIT_FILES"]);
  expect(e.files).toEqual([{ path: "huge.md", reason: "INVALID_CONTENT", ranges: [] }]);
  expect(e.message).toBe("These files are over 128 MiB, the most a notebook file may hold: huge.md. Split them into smaller files, or delete them, then call again.");
  rmSync(join(dir, "huge.md"));
  const after = await cli("commit", "-m", "small", "--json", dir);
  expect(after.code).toBe(0);
  expect(JSON.parse(after.stdout).files).toEqual([{ path: "small.md", insertions: 1, deletions: 0 }]);
});

describe("paths too long for the file system are refused by name, never skipped", () => {
  test("a file whose absolute path is over 4,096 bytes", async () => {
    const dir = join(root, "long");
    expect((await cli("pull", dir)).code).toBe(0);
    try {
      // 20 directories of 200 bytes: the directories can be listed, the file's absolute path cannot be opened.
      const deep = deepTree(dir, 20, `${"f".repeat(120)}.md`);
      expect(Buffer.byteLength(join(dir, deep))).toBeGreaterThan(4096);
      writeFileSync(join(dir, "short.md"), "short\n");
      const r = await cli("commit", "-m", "long", "--json", dir);
      expect(r.code).toBe(EXIT_CODES.INVALID_REQUEST);
      const e = JSON.parse(r.stdout);
      expect([e.code, e.reason, e.action]).toEqual(["INVALID_REQUEST", "INVALID_CONTENT", "EDIT_FILES"]);
      expect(e.files).toEqual([{ path: deep, reason: "INVALID_CONTENT", ranges: [] }]);
      expect(e.message).toContain("too long for the file system");
      expect(e.message).toContain("shorter path");
      // Nothing was published: the short file waits for the next commit.
      removeDeep(join(dir, "a".repeat(200)));
      const after = await cli("commit", "-m", "short", "--json", dir);
      expect(after.code).toBe(0);
      expect(JSON.parse(after.stdout).files).toEqual([{ path: "short.md", insertions: 1, deletions: 0 }]);
    } finally {
      removeDeep(dir);
    }
  });

  test("a directory too deep to be listed at all is named itself", async () => {
    const dir = join(root, "deeper");
    expect((await cli("pull", dir)).code).toBe(0);
    try {
      const deep = deepTree(dir, 22, "deep.md");
      const segments = deep.split("/");
      // The first directory whose absolute path is over the limit cannot even be stat'ed.
      let depth = 0;
      while (Buffer.byteLength(join(dir, ...segments.slice(0, depth + 1))) < 4096) depth++;
      const named = segments.slice(0, depth + 1).join("/");
      const r = await cli("commit", "-m", "deep", "--json", dir);
      expect(r.code).toBe(EXIT_CODES.INVALID_REQUEST);
      const e = JSON.parse(r.stdout);
      expect(e.reason).toBe("INVALID_CONTENT");
      expect(e.files).toEqual([{ path: named, reason: "INVALID_CONTENT", ranges: [] }]);
      const human = await cli("commit", "-m", "deep", dir);
      expect(human.stderr).toContain(`\n  ${named} · INVALID_CONTENT\n`);
      expect(human.stderr).toContain("next: edit the files, then commit (EDIT_FILES)");
    } finally {
      removeDeep(dir);
    }
  });
});

describe("files and directories that cannot be read are refused by name", () => {
  // Permissions bind only an unprivileged process: as root, the binary runs as
  // nobody (65534) over a world of its own, so EACCES really happens.
  const asRoot = process.getuid?.() === 0;
  const world = mkdtempSync(join(tmpdir(), "slivingdoc-edges-perm-"));
  afterAll(() => rmSync(world, { recursive: true, force: true }));
  const worldEnv = {
    HOME: join(world, "home"),
    XDG_DATA_HOME: join(world, "data"),
    XDG_STATE_HOME: join(world, "state"),
    SLIVINGDOC_STORE: `sqlite:${join(world, "store.db")}`,
  };
  const own = (path: string) => {
    if (asRoot) chownSync(path, 65534, 65534);
  };
  own(world);
  const user = (...args: string[]) => {
    requireBinary();
    const prefix = asRoot ? ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"] : [];
    return run([...prefix, BINARY, ...args], world, worldEnv);
  };
  /** A checkout with one committed file, every entry owned by the user who runs the binary. */
  const checkout = async (name: string) => {
    const dir = join(world, name);
    expect((await user("pull", dir)).code).toBe(0);
    return dir;
  };
  const put = (path: string, content: string, mode?: number) => {
    mkdirSync(join(path, ".."), { recursive: true });
    writeFileSync(path, content);
    own(path);
    if (mode !== undefined) chmodSync(path, mode);
  };
  const dirWithMode = (path: string, mode: number, files: string[]) => {
    mkdirSync(path);
    own(path);
    for (const f of files) put(join(path, f), "inside\n");
    chmodSync(path, mode);
  };

  test("a file without read permission (mode 000)", async () => {
    const dir = await checkout("perm-file");
    put(join(dir, "secret.md"), "secret\n", 0o000);
    put(join(dir, "open.md"), "open\n");
    const r = await user("commit", "-m", "unreadable", "--json", dir);
    expect(r.code).toBe(EXIT_CODES.INVALID_REQUEST);
    const e = JSON.parse(r.stdout);
    expect([e.code, e.reason, e.action, e.retryable]).toEqual(["INVALID_REQUEST", "INVALID_CONTENT", "EDIT_FILES", false]);
    expect(e.files).toEqual([{ path: "secret.md", reason: "INVALID_CONTENT", ranges: [] }]);
    expect(e.message).toBe("These cannot be read: secret.md. Make them readable (chmod u+rX) or delete them, then call again.");
    // --json: the envelope alone; in words without it.
    expect(r.stderr).toBe("");
    expect((await user("commit", "-m", "unreadable", dir)).stderr).toContain("\n  secret.md · INVALID_CONTENT\n");
    // Made readable, it is published with the rest.
    chmodSync(join(dir, "secret.md"), 0o644);
    const after = await user("commit", "-m", "readable", "--json", dir);
    expect(after.code).toBe(0);
    expect(JSON.parse(after.stdout).files.map((f: { path: string }) => f.path)).toEqual(["open.md", "secret.md"]);
  });

  test("a directory that cannot be listed, and one whose entries cannot be stat'ed", async () => {
    const dir = await checkout("perm-dir");
    dirWithMode(join(dir, "locked"), 0o300, ["hidden.md"]); // write and search, no read: no listing
    dirWithMode(join(dir, "opaque"), 0o600, ["a.md", "b.md"]); // read, no search: names without stat
    put(join(dir, "fine.md"), "fine\n");
    const r = await user("commit", "-m", "locked", "--json", dir);
    expect(r.code).toBe(EXIT_CODES.INVALID_REQUEST);
    const e = JSON.parse(r.stdout);
    expect([e.reason, e.action]).toEqual(["INVALID_CONTENT", "EDIT_FILES"]);
    expect(e.files.map((f: { path: string }) => f.path)).toEqual(["locked", "opaque/a.md", "opaque/b.md"]);
    expect(e.message).toContain("cannot be read: locked, opaque/a.md, opaque/b.md");
    // A pull refuses the same way, before anything is written.
    const before = readdirSync(dir).sort();
    const pulled = await user("pull", "--json", dir);
    expect(pulled.code).toBe(EXIT_CODES.INVALID_REQUEST);
    expect(JSON.parse(pulled.stdout).files.length).toBe(3);
    expect(readdirSync(dir).sort()).toEqual(before);
  });
});

describe("a commit message that is not UTF-8 is refused, never stored as U+FFFD", () => {
  /** The binary with its arguments as bytes: sh hands them over exactly, \NNN being octal (printf). */
  const cliBytes = (script: string, dir: string) => {
    requireBinary();
    return run(["sh", "-c", script, BINARY, dir]);
  };
  /** The message of the accepted head, byte for byte, as C git reads it. */
  const headMessage = async () => {
    const s = openSqliteStore(join(root, "store.db"), SYSTEM_CLOCK);
    try {
      return await withPacksInGit(s, ({ repo }) => Bun.spawnSync(["git", "-C", repo, "log", "-1", "--format=%B", "main"]).stdout);
    } finally {
      await s.close();
    }
  };

  test("invalid bytes after -m, or in --message=, are MESSAGE_INVALID; a real U+FFFD is kept", async () => {
    const dir = join(root, "messages");
    expect((await cli("pull", dir)).code).toBe(0);
    writeFileSync(join(dir, "m.md"), "m\n");
    const generation = async () => JSON.parse((await cli("pull", "--json", dir)).stdout).generation as number;
    const before = await generation();
    for (const script of [
      `exec "$0" commit -m "$(printf 'bad \\377\\376 bytes')" --json "$1"`,
      `exec "$0" commit "--message=$(printf 'half \\342\\202')" --json "$1"`,
    ]) {
      const r = await cliBytes(script, dir);
      expect(r.code).toBe(EXIT_CODES.INVALID_REQUEST);
      const e = JSON.parse(r.stdout);
      expect([e.code, e.reason, e.action]).toEqual(["INVALID_REQUEST", "MESSAGE_INVALID", "FIX_INPUT"]);
      expect(e.message).toContain("not UTF-8");
      expect(r.stderr).toBe("");
    }
    // Without --json, the refusal in words.
    const words = await cliBytes(`exec "$0" commit -m "$(printf 'bad \\377 bytes')" "$1"`, dir);
    expect(words.code).toBe(EXIT_CODES.INVALID_REQUEST);
    expect(words.stderr).toContain("error: INVALID_REQUEST · MESSAGE_INVALID\n");
    // Nothing was published by the refusals.
    expect(await generation()).toBe(before);
    // U+FFFD typed on purpose (its UTF-8 bytes), next to valid non-ASCII: published, byte for byte.
    const ok = await cliBytes(`exec "$0" commit -m "$(printf 'real \\357\\277\\275 naïve')" --json "$1"`, dir);
    expect(ok.code).toBe(0);
    expect(JSON.parse(ok.stdout).files).toEqual([{ path: "m.md", insertions: 1, deletions: 0 }]);
    expect(JSON.parse(ok.stdout).generation).toBe(before + 1);
    expect(Buffer.from(await headMessage()).equals(Buffer.from("real \uFFFD naïve\n"))).toBe(true);
  });

  test("where the command line cannot be read as bytes, a message holding U+FFFD is refused", async () => {
    const dir = join(root, "no-proc");
    expect((await cli("pull", dir)).code).toBe(0);
    writeFileSync(join(dir, "n.md"), "n\n");
    const out: string[] = [];
    const err: string[] = [];
    const io = (message: string, rawArgv: () => Uint8Array[] | null) => ({
      argv: ["commit", "-m", message, "--json", dir],
      rawArgv,
      env: env as Record<string, string | undefined>,
      cwd: root,
      stdout: (t: string) => out.push(t),
      stderr: (t: string) => err.push(t),
      version: "test",
    });
    expect(await runCli(io("plain \uFFFD", () => null))).toBe(EXIT_CODES.INVALID_REQUEST);
    expect(JSON.parse(out.join(""))).toMatchObject({ reason: "MESSAGE_INVALID", action: "FIX_INPUT" });
    expect(JSON.parse(out.join("")).message).toContain("cannot tell apart");
    // Without U+FFFD, the bytes are never needed.
    out.length = 0;
    expect(await runCli(io("plain", () => { throw new Error("not needed"); }))).toBe(0);
    expect(JSON.parse(out.join("")).files).toEqual([{ path: "n.md", insertions: 1, deletions: 0 }]);
  });
});

describe("nested checkouts: refused among the checkouts one private root knows (docs/cli.md)", () => {
  test("inside and around, across stores, with the root named by flag, environment or default", async () => {
    const base = join(root, "nest");
    const outer = join(base, "outer");
    const inner = join(outer, "inner");
    const privateRoot = join(root, "state", "slivingdoc"); // the default: XDG_STATE_HOME/slivingdoc
    const otherStore = `sqlite:${join(root, "other-store.db")}`;
    expect((await cli("pull", outer)).code).toBe(0);
    writeFileSync(join(outer, "outer.md"), "outer\n");
    const listing = readdirSync(outer).sort();
    // Another store, the same private root named three ways: each sees the outer checkout.
    for (const args of [
      ["--store", otherStore],
      ["--store", otherStore, "--private-root", privateRoot],
      ["--private-root", privateRoot],
    ]) {
      const r = await cli("pull", "--json", ...args, inner);
      expect(r.code).toBe(EXIT_CODES.INVALID_REQUEST);
      expect(JSON.parse(r.stdout)).toMatchObject({ reason: "PATH_OUTSIDE_ROOT", action: "FIX_INPUT" });
      expect(JSON.parse(r.stdout).message).toContain("inside another checkout");
    }
    const viaEnv = await run([BINARY, "pull", "--json", inner], root, { SLIVINGDOC_PRIVATE_ROOT: privateRoot, SLIVINGDOC_STORE: otherStore });
    expect(JSON.parse(viaEnv.stdout).reason).toBe("PATH_OUTSIDE_ROOT");
    // Nothing was created for the refused checkout.
    expect(readdirSync(outer).sort()).toEqual(listing);

    // Around: a checkout of another store, then a pull of a directory containing it.
    const side = join(base, "side");
    const sideInner = join(side, "deep", "inner");
    expect((await cli("pull", "--store", otherStore, sideInner)).code).toBe(0);
    writeFileSync(join(sideInner, "inner.md"), "inner\n");
    const around = await cli("pull", "--json", side);
    expect(around.code).toBe(EXIT_CODES.INVALID_REQUEST);
    expect(JSON.parse(around.stdout).message).toContain("contains another checkout");
    // And the outer commit never publishes what sits in a checkout it contains.
    const commitAround = await cli("commit", "-m", "around", "--json", side);
    expect(commitAround.code).toBe(EXIT_CODES.INVALID_REQUEST);
    expect(JSON.parse(commitAround.stdout).reason).toBe("PATH_OUTSIDE_ROOT");
  });
});

describe("a notebook path that cannot be a directory is the caller's to fix, never a retry", () => {
  test("a regular file, a FIFO, a device, or a file where a parent directory should be: one answer on every command that takes a path", async () => {
    const place = mkdtempSync(join(root, "not-dirs-"));
    writeFileSync(join(place, "notes.txt"), "mine\n");
    expect(Bun.spawnSync(["mkfifo", join(place, "fifo")]).exitCode).toBe(0);
    const cases: Array<[string, string]> = [
      [join(place, "notes.txt"), "is a regular file, not a directory"],
      [join(place, "fifo"), "is a FIFO (named pipe), not a directory"],
      ["/dev/null", "is a device, not a directory"],
      [join(place, "notes.txt", "sub"), "has a file where one of its directories should be"],
    ];
    const commands = (path: string) => [
      ["pull", path],
      ["commit", "-m", "x", path],
      ["status", path],
      ["diff", path],
      ["attach", path],
      ["restore", "--from", "1", "--dir", path],
    ];
    for (const [path, what] of cases) {
      for (const args of commands(path)) {
        const r = await cli(...args, "--json");
        const envelope = JSON.parse(r.stdout);
        expect({ args, code: r.code, reason: envelope.reason, action: envelope.action, retryable: envelope.retryable }).toEqual({
          args,
          code: EXIT_CODES.INVALID_REQUEST,
          reason: "INVALID_CONTENT",
          action: "EDIT_FILES",
          retryable: false,
        });
        expect(envelope.message).toStartWith(`The notebook path ${what}; the notebook is a directory of text files.`);
      }
    }
    // Nothing was made or changed beside them.
    expect(readdirSync(place).sort()).toEqual(["fifo", "notes.txt"]);
  });
});
