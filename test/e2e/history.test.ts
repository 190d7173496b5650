/**
 * Who changed what (docs/history.md), through the binary: who published
 * (--agent, SLIVINGDOC_AGENT, user@host, and the MCP client under serve),
 * `log`, `show` (its diff compared with C git's), and `export` (C git reads
 * it: log, show, blame, fsck; again incrementally; a shallow boundary after
 * compaction).
 */
import { afterAll, expect, test } from "bun:test";
import { createHash } from "node:crypto";
import { chmodSync, chownSync, existsSync, lstatSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, readlinkSync, rmSync, symlinkSync, unlinkSync, writeFileSync } from "node:fs";
import { hostname, tmpdir } from "node:os";
import { join } from "node:path";
import { EXIT_CODES } from "../../src/contract/tokens.ts";
import { git } from "../support/cgit.ts";
import { BINARY, call, connect, requireBinary } from "../support/mcp.ts";

const root = mkdtempSync(join(tmpdir(), "slivingdoc-history-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));
const env = { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: join(root, "home"), XDG_STATE_HOME: join(root, "state"), TMPDIR: tmpdir(), USER: "tester" };

let stores = 0;
function freshStore(): string[] {
  return ["--store", `sqlite:${join(root, `store-${++stores}.db`)}`];
}

async function run(args: string[], extraEnv: Record<string, string> = {}) {
  const p = Bun.spawn([BINARY, ...args], { cwd: root, env: { ...env, ...extraEnv }, stdout: "pipe", stderr: "pipe" });
  const [stdout, stderr, code] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited]);
  return { stdout, stderr, code };
}

async function ok(args: string[], extraEnv: Record<string, string> = {}) {
  const r = await run(args, extraEnv);
  if (r.code !== 0) throw new Error(`${args.join(" ")} exited ${r.code}: ${r.stderr}`);
  return r;
}

async function json(args: string[]) {
  return JSON.parse((await ok([...args, "--json"])).stdout);
}

/** A notebook with a checkout, and a helper committing a set of file changes (null deletes). */
async function notebook(store: string[]) {
  const dir = mkdtempSync(join(root, "nb-"));
  await ok(["pull", ...store, dir]);
  return async (files: Record<string, string | null>, message: string, args: string[] = [], extraEnv: Record<string, string> = {}) => {
    for (const [path, content] of Object.entries(files)) {
      const file = join(dir, path);
      if (content === null) unlinkSync(file);
      else {
        mkdirSync(join(file, ".."), { recursive: true });
        writeFileSync(file, content);
      }
    }
    await ok(["commit", "-m", message, ...store, ...args, dir], extraEnv);
  };
}

test("every publication records who made it: --agent, SLIVINGDOC_AGENT, else user@host", async () => {
  requireBinary();
  const store = freshStore();
  const commit = await notebook(store);
  await commit({ "a.md": "1\n" }, "by flag", ["--agent", "planner-7"]);
  await commit({ "a.md": "2\n" }, "by env", [], { SLIVINGDOC_AGENT: "writer (gpt)" });
  await commit({ "a.md": "3\n" }, "flag wins", ["--agent", "flag"], { SLIVINGDOC_AGENT: "env" });
  await commit({ "a.md": "4\n" }, "default");
  const log = await json(["log", ...store]);
  expect(log.entries.map((e: { agent: string }) => e.agent)).toEqual([`tester@${hostname()}`, "flag", "writer (gpt)", "planner-7"]);
});

test("with $USER unset, the default agent is the password database's name for the process's uid", async () => {
  requireBinary();
  const store = freshStore();
  const dir = mkdtempSync(join(root, "nb-"));
  await ok(["pull", ...store, dir]);
  writeFileSync(join(dir, "a.md"), "1\n");
  // A container started with only a uid: no USER, no LOGNAME.
  const { USER: _user, ...noUser } = env;
  const p = Bun.spawn([BINARY, "commit", "-m", "no USER", ...store, dir], { cwd: root, env: noUser, stdout: "pipe", stderr: "pipe" });
  expect(await p.exited).toBe(0);
  const name = Bun.spawnSync(["id", "-un"]).stdout.toString().trim();
  expect(name).not.toBe("");
  const log = await json(["log", ...store]);
  expect(log.entries[0].agent).toBe(`${name}@${hostname()}`);
});

test("a bad --agent or SLIVINGDOC_AGENT is a start-up refusal", async () => {
  requireBinary();
  const store = freshStore();
  for (const bad of ["a<b>", "line\nbreak", " padded", "", "x".repeat(129), "esc\u001b[31m"]) {
    const r = await run(["generation", ...store, "--agent", bad]);
    expect(r.code).toBe(EXIT_CODES.STARTUP);
    expect(r.stderr).toStartWith("slivingdoc: invalid configuration: --agent ");
  }
  const r = await run(["generation", ...store], { SLIVINGDOC_AGENT: "a>b" });
  expect(r.code).toBe(EXIT_CODES.STARTUP);
  expect((await run(["generation", ...store, "--agent", "ünïcode ok"])).code).toBe(0);
});

test("under serve, the MCP client's name and version with user@host; the tool results carry no history fields", async () => {
  requireBinary();
  const store = freshStore();
  const dir = join(root, "served");
  const session = await connect({ ...env, SLIVINGDOC_STORE: store[1]! }, ["--workspace-root", dir]);
  try {
    await call(session, "notes_pull", {});
    writeFileSync(join(dir, "n.md"), "x\n");
    const result = await call(session, "notes_commit", { message: "from mcp" });
    expect(Object.keys(result.data).sort()).toEqual(["code", "deletions", "files", "filesChanged", "generation", "insertions", "path", "readOnly", "writable"].sort());
  } finally {
    await session.close();
  }
  const log = await json(["log", ...store]);
  expect(log.entries[0].agent).toBe(`slivingdoc-test/1.0.0 tester@${hostname()}`);
});

test("log: newest first, with files and counts; --limit, --since, --path; from the store alone", async () => {
  requireBinary();
  const store = freshStore();
  expect((await run(["log", ...store])).stdout).toBe("log: the store holds no notebook yet\n");
  const commit = await notebook(store);
  await commit({ "a.md": "one\ntwo\n", "d/b.md": "b\n" }, "first");
  await commit({ "a.md": "one\n2\n" }, "second\n\nwith a body");
  await commit({ "d/b.md": null, "c.md": "" }, "third");
  const log = await json(["log", ...store]);
  expect(log.generation).toBe(3);
  expect(log.oldestRetained).toBe(1);
  expect(log.entries.map((e: { generation: number }) => e.generation)).toEqual([3, 2, 1]);
  const [third, second, first] = log.entries;
  expect(second.message).toBe("second\n\nwith a body");
  expect(second.files).toEqual([{ path: "a.md", status: "modified", insertions: 1, deletions: 1 }]);
  expect(third.files).toEqual([
    { path: "c.md", status: "added", insertions: 0, deletions: 0 },
    { path: "d/b.md", status: "deleted", insertions: 0, deletions: 1 },
  ]);
  expect([first.filesChanged, first.insertions, first.deletions]).toEqual([2, 3, 0]);
  expect(third.time).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
  expect((await json(["log", ...store, "--limit", "1"])).entries.map((e: { generation: number }) => e.generation)).toEqual([3]);
  expect((await json(["log", ...store, "--path", "d"])).entries.map((e: { generation: number }) => e.generation)).toEqual([3, 1]);
  expect((await json(["log", ...store, "--path", "d/b.md"])).entries[1].files).toEqual([{ path: "d/b.md", status: "added", insertions: 1, deletions: 0 }]);
  expect((await json(["log", ...store, "--since", "1h"])).entries).toHaveLength(3);
  expect((await json(["log", ...store, "--since", "2999-01-01"])).entries).toHaveLength(0);
  // The log is the answer: on stdout, for `| grep` and `| head`.
  const human = await ok(["log", ...store, "--limit", "1"]);
  expect(human.stderr).toBe("");
  expect(human.stdout).toContain("generation 3 · ");
  expect(human.stdout).toContain("    d/b.md | +0 -1 (deleted)");
  // Refusals like every command's.
  for (const args of [["--limit", "x"], ["--since", "yesterday"], ["--path", "/abs"], ["--frobnicate"], ["somewhere"]]) {
    expect((await run(["log", ...store, ...args])).code).toBe(EXIT_CODES.STARTUP);
  }
});

test("a publication of many files reads in a terminal: log lists 10 (--stat all, --oneline one line), show's header 50; --json is whole", async () => {
  requireBinary();
  const store = freshStore();
  const commit = await notebook(store);
  const many: Record<string, string> = {};
  for (let i = 0; i < 120; i++) many[`f${String(i).padStart(3, "0")}.md`] = `${i}\n`;
  await commit(many, "many files\nsecond line of the message");
  await commit({ "a.md": "one\n" }, "one file");

  const log = (await ok(["log", ...store])).stdout;
  expect(log.split("\n").filter((l) => / \| \+\d+ -\d+/.test(l)).length).toBe(11);
  expect(log).toContain("    … and 110 more files (--stat lists them all)");
  const stat = (await ok(["log", "--stat", ...store])).stdout;
  expect(stat.split("\n").filter((l) => / \| \+\d+ -\d+/.test(l)).length).toBe(121);
  expect(stat).not.toContain("more files");
  const oneline = (await ok(["log", "--oneline", ...store])).stdout.trimEnd().split("\n");
  expect(oneline).toHaveLength(2);
  expect(oneline[0]).toMatch(/^2 · \S+ · tester@\S+ · one file · 1 file$/);
  expect(oneline[1]).toMatch(/^1 · \S+ · tester@\S+ · many files · 120 files$/);
  const both = await run(["log", "--oneline", "--stat", ...store]);
  expect(both.code).toBe(EXIT_CODES.STARTUP);
  expect(both.stderr).toContain("--oneline and --stat cannot be combined");
  expect((await json(["log", ...store])).entries[1].files).toHaveLength(120);

  const show = await ok(["show", "1", ...store]);
  expect(show.stderr.split("\n").filter((l) => / \| \+\d+ -\d+/.test(l)).length).toBe(50);
  expect(show.stderr).toContain("    … and 70 more files (--stat lists them all)");
  const shownStat = await ok(["show", "1", "--stat", ...store]);
  expect(shownStat.stdout.split("\n").filter((l) => / \| \+\d+ -\d+/.test(l)).length).toBe(120);
  expect((await json(["show", "1", ...store])).files).toHaveLength(120);
});

test("log --since out of range is an argument refusal in the flag's words, never an input field's", async () => {
  requireBinary();
  const store = freshStore();
  const commit = await notebook(store);
  await commit({ "a.md": "a\n" }, "first");
  const days = Math.floor(Date.now() / 86_400_000);
  for (const [since, words] of [
    ["99999d", `--since 99999d reaches back before 1970-01-01; give a duration of at most ${days}d, or a date from 1970-01-01 on`],
    ["9".repeat(30), `--since ${"9".repeat(30)} reaches back before 1970-01-01`],
    ["1969-12-31", "--since 1969-12-31 reaches back before 1970-01-01"],
    ["2026-13-01", "--since 2026-13-01 is not a date of the calendar"],
  ]) {
    const r = await run(["log", ...store, "--since", since!, "--json"]);
    expect([r.code, r.stdout]).toEqual([EXIT_CODES.STARTUP, ""]);
    expect(r.stderr).toStartWith(`slivingdoc: argument refusal: ${words}`);
    expect(r.stderr).not.toContain("sinceMs");
  }
  expect((await json(["log", ...store, "--since", "1970-01-01"])).entries).toHaveLength(1);
  expect((await json(["log", ...store, "--since", `${days - 1}d`])).entries).toHaveLength(1);
});

test("show: git's unified diff, byte for byte as C git prints it; --stat; generations out of range are refused", async () => {
  requireBinary();
  const store = freshStore();
  const commit = await notebook(store);
  const long = Array.from({ length: 40 }, (_, i) => (i % 7 === 0 ? `Section ${i}\n` : `  line ${i}\n`)).join("");
  await commit({ "notes.md": long, "gone.md": "bye\n", "empty.md": "", "with space.md": "s\n", "tab\there.md": "t\n", "naïve.md": "n", "slide.md": "1\n2\na\n\nb\n3\n4\n" }, "base");
  const changed = long.replace("  line 3\n", "  line three\n").replace("  line 20\n", "").replace("  line 38\n", "  line 38\n  new\n");
  await commit(
    { "notes.md": changed, "gone.md": null, "empty.md": null, "new.md": "fresh\nlines", "with space.md": "S\n", "tab\there.md": "T\n", "naïve.md": "n\n", "slide.md": "1\n2\na\n\nb\na\n\nb\n3\n4\n" },
    "edit",
  );
  const exported = join(root, "show-export");
  await ok(["export", exported, ...store]);
  const cgit = git(exported, "-c", "core.quotePath=false", "diff", "--no-renames", "--no-color", "main~1", "main");
  expect(cgit.code).toBe(0);
  // slide.md's hunk is where git's default (the indent heuristic) and --no-indent-heuristic part.
  expect(git(exported, "-c", "core.quotePath=false", "diff", "--no-renames", "--no-indent-heuristic", "--no-color", "main~1", "main").out).not.toBe(cgit.out);
  const shown = await json(["show", "2", ...store]);
  expect(shown.patch).toBe(cgit.out);
  expect(shown.agent).toBe(`tester@${hostname()}`);
  expect(shown.message).toBe("edit");
  // The first publication, against the empty notebook.
  const rootDiff = git(exported, "-c", "core.quotePath=false", "show", "--format=", "--no-renames", "--no-color", "main~1");
  expect((await json(["show", "1", ...store])).patch).toBe(rootDiff.out);
  const stat = await json(["show", "2", ...store, "--stat"]);
  expect(stat.patch).toBeUndefined();
  expect(stat.files.find((f: { path: string }) => f.path === "notes.md")).toEqual({ path: "notes.md", status: "modified", insertions: 2, deletions: 2 });
  // Without --json: the patch raw on stdout (`show 2 > x.patch`), the entry on stderr.
  const human = await ok(["show", "2", ...store]);
  expect(human.stdout).toBe(cgit.out);
  expect(human.stderr).toStartWith("generation 2 · ");
  expect(human.stderr).not.toContain("diff --git");
  // With --stat there is no patch: the entry is the answer, on stdout.
  const statOnly = await ok(["show", "2", ...store, "--stat"]);
  expect(statOnly.stderr).toBe("");
  expect(statOnly.stdout).toStartWith("generation 2 · ");
  for (const [g, words] of [["3", "does not exist yet; the newest is 2"], ["0", "older than the retained history; the oldest retained generation is 1"]] as const) {
    const r = await run(["show", g, ...store, "--json"]);
    expect(r.code).toBe(EXIT_CODES.INVALID_REQUEST);
    const envelope = JSON.parse(r.stdout);
    expect([envelope.code, envelope.reason]).toEqual(["INVALID_REQUEST", "MALFORMED_INPUT"]);
    expect(envelope.message).toContain(words);
  }
  expect((await run(["show", ...store])).code).toBe(EXIT_CODES.STARTUP);
  expect((await run(["show", "x", ...store])).code).toBe(EXIT_CODES.STARTUP);
  expect((await run(["show", "1", "2", ...store])).code).toBe(EXIT_CODES.STARTUP);
});

test("export: a bare repository C git reads — log, show, blame, fsck — updated incrementally", async () => {
  requireBinary();
  const store = freshStore();
  const dir = join(root, "export-1");
  expect((await json(["export", dir, ...store])).generation).toBe(0);
  const commit = await notebook(store);
  await commit({ "a.md": "alpha\nbeta\n" }, "first", ["--agent", "ann"]);
  await commit({ "a.md": "alpha\nBETA\ngamma\n", "d/b.md": "b\n" }, "second", ["--agent", "bo"]);
  const first = await json(["export", dir, ...store]);
  expect(first).toMatchObject({ generation: 2, oldestRetained: 1, added: 2, shallow: false });
  expect(git(dir, "fsck", "--strict", "--no-dangling")).toMatchObject({ code: 0, err: "" });
  expect(git(dir, "log", "--format=%an|%s").out).toBe("bo|second\nann|first\n");
  expect(git(dir, "show", "main:a.md").out).toBe("alpha\nBETA\ngamma\n");
  expect(git(dir, "blame", "--porcelain", "main", "--", "a.md").out).toContain("author ann");
  await commit({ "d/b.md": null }, "third", ["--agent", "cy"]);
  const again = await json(["export", dir, ...store]);
  expect(again).toMatchObject({ generation: 3, added: 1 });
  expect(again.objects).toBeLessThanOrEqual(3);
  expect(git(dir, "fsck", "--strict", "--no-dangling")).toMatchObject({ code: 0, err: "" });
  expect(git(dir, "log", "--format=%an").out).toBe("cy\nbo\nann\n");
  expect((await json(["export", dir, ...store])).added).toBe(0);
  expect((await run(["export", ...store])).code).toBe(EXIT_CODES.STARTUP);
});

/** Every entry at and below `path`, not following links: type, mode, size, mtime, and the content's hash or the link's target. */
function listing(path: string): string[] {
  const out: string[] = [];
  const visit = (p: string, rel: string) => {
    const st = lstatSync(p);
    const what = st.isSymbolicLink() ? `link ${readlinkSync(p)}` : st.isFile() ? `file ${createHash("sha256").update(readFileSync(p)).digest("hex")}` : "dir";
    out.push(`${rel} ${what} ${st.mode.toString(8)} ${st.size} ${st.mtimeMs}`);
    if (st.isDirectory()) for (const name of readdirSync(p).sort()) visit(join(p, name), `${rel}/${name}`);
  };
  visit(path, ".");
  return out;
}

test("export writes only into a new or empty directory or an earlier export of this notebook; anything else is refused by its name, untouched", async () => {
  requireBinary();
  const store = freshStore();
  await (await notebook(store))({ "a.md": "a\n" }, "first");
  const place = mkdtempSync(join(root, "targets-"));
  const at = (name: string) => join(place, name);
  // Someone's repository, and a bare clone of it.
  mkdirSync(at("work"));
  expect(git(at("work"), "init", "-q", "--initial-branch=main").code).toBe(0);
  writeFileSync(at("work/own.md"), "own\n");
  git(at("work"), "add", ".");
  expect(git(at("work"), "-c", "user.name=me", "-c", "user.email=me@example.com", "commit", "-q", "-m", "mine").code).toBe(0);
  expect(git(place, "clone", "-q", "--bare", "work", "precious.git").code).toBe(0);
  const precious = git(at("precious.git"), "rev-parse", "main").out;
  // Another notebook's export.
  const otherStore = freshStore();
  await (await notebook(otherStore))({ "b.md": "b\n" }, "elsewhere");
  await ok(["export", at("other-export"), ...otherStore]);
  mkdirSync(at("has-files"));
  writeFileSync(at("has-files/x"), "x");
  writeFileSync(at("a-file"), "data\n");
  mkdirSync(at("empty-target"));
  symlinkSync("empty-target", at("link-to-empty"));
  symlinkSync("nowhere", at("dangling"));
  const before = listing(place);
  for (const [name, why] of [
    ["precious.git", "is a git repository that export did not write"],
    ["work", "is a git working tree, with files of its own"],
    ["work/.git", "is a git repository that export did not write"],
    ["other-export", "is an export of another notebook, or of this one from before the history the store keeps"],
    ["has-files", "holds files of its own"],
    ["a-file", "is a regular file, not a directory"],
    ["a-file/sub", "has a regular file in its path where a directory should be"],
    ["link-to-empty", "is a symbolic link, not a directory"],
    ["dangling", "is a symbolic link, not a directory"],
  ] as const) {
    // Named as typed, relative to the current directory: the refusal quotes that name, not the resolved path.
    const p = Bun.spawn([BINARY, "export", name, ...store, "--json"], { cwd: place, env, stdout: "pipe", stderr: "pipe" });
    const [stdout, stderr, code] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited]);
    expect([code, stdout, stderr]).toEqual([
      EXIT_CODES.STARTUP,
      "",
      `slivingdoc: argument refusal: export DIR "${name}" ${why}; export writes only into a new or empty directory, or an earlier export of this notebook\n`,
    ]);
    expect(listing(place)).toEqual(before);
  }
  expect(git(at("precious.git"), "rev-parse", "main").out).toBe(precious);
  expect(git(at("precious.git"), "fsck", "--strict", "--no-dangling")).toMatchObject({ code: 0, err: "" });
  // An empty directory, and one named through a path that holds a symlink before its last part, are written.
  expect(await json(["export", at("empty-target"), ...store])).toMatchObject({ generation: 1, added: 1 });
  symlinkSync(place, join(root, "link-to-place"));
  expect(await json(["export", join(root, "link-to-place", "fresh"), ...store])).toMatchObject({ generation: 1, added: 1 });
  expect(git(at("fresh"), "fsck", "--strict", "--no-dangling")).toMatchObject({ code: 0, err: "" });
});

test("export into a directory this user may not write is refused by its name, untouched, never STORAGE_FAILURE · INTERNAL", async () => {
  requireBinary();
  // Permissions bind only an unprivileged process: as root, the binary runs as
  // nobody (65534) in a world of its own, so EACCES really happens.
  const asRoot = process.getuid?.() === 0;
  const world = mkdtempSync(join(tmpdir(), "slivingdoc-export-perm-"));
  try {
    if (asRoot) chownSync(world, 65534, 65534);
    const worldEnv = { ...env, HOME: join(world, "home"), XDG_STATE_HOME: join(world, "state"), SLIVINGDOC_STORE: `sqlite:${join(world, "store.db")}` };
    const user = async (...args: string[]) => {
      const prefix = asRoot ? ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"] : [];
      const p = Bun.spawn([...prefix, BINARY, ...args], { cwd: world, env: worldEnv, stdout: "pipe", stderr: "pipe" });
      const [stdout, stderr, code] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited]);
      return { stdout, stderr, code };
    };
    const nb = join(world, "nb");
    expect((await user("pull", nb)).code).toBe(0);
    writeFileSync(join(nb, "a.md"), "a\n");
    expect((await user("commit", "-m", "first", nb)).code).toBe(0);
    const made = (name: string) => {
      mkdirSync(join(world, name));
      if (asRoot) chownSync(join(world, name), 65534, 65534);
      return join(world, name);
    };
    const locked = made("locked"); // empty, no write permission
    const parent = made("parent"); // export would make DIR in it
    expect((await user("export", join(world, "earlier"))).code).toBe(0);
    writeFileSync(join(nb, "a.md"), "a\nb\n");
    expect((await user("commit", "-m", "second", nb)).code).toBe(0);
    chmodSync(locked, 0o555);
    chmodSync(parent, 0o555);
    chmodSync(join(world, "earlier", "objects", "pack"), 0o555); // an earlier export whose pack directory is read-only
    const targets = () => ["locked", "parent", "earlier"].map((t) => listing(join(world, t)));
    const before = targets();
    const advice = "export needs a directory this user may write into: give it write permission (chmod u+w), or name another directory";
    for (const name of ["locked", "parent/new", "earlier"]) {
      const r = await user("export", name, "--json");
      expect([r.code, r.stdout, r.stderr]).toEqual([EXIT_CODES.STARTUP, "", `slivingdoc: argument refusal: export DIR "${name}" cannot be written (permission denied); ${advice}\n`]);
      expect(targets()).toEqual(before);
    }
    // Made writable, the same export goes on where it stopped.
    chmodSync(join(world, "earlier", "objects", "pack"), 0o755);
    expect(JSON.parse((await user("export", "earlier", "--json")).stdout)).toMatchObject({ generation: 2, added: 1 });
  } finally {
    rmSync(world, { recursive: true, force: true });
  }
});

test("an earlier export is recognised after git gc packed its refs, one written before export marked its config, and one cut short after its mark", async () => {
  requireBinary();
  const store = freshStore();
  const commit = await notebook(store);
  await commit({ "a.md": "1\n" }, "one");
  const dir = join(root, "export-gc");
  await ok(["export", dir, ...store]);
  expect(git(dir, "config", "slivingdoc.export").out).toBe("true\n");
  expect(git(dir, "gc", "-q").code).toBe(0);
  expect(existsSync(join(dir, "refs", "heads", "main"))).toBe(false);
  await commit({ "a.md": "2\n" }, "two");
  expect(await json(["export", dir, ...store])).toMatchObject({ generation: 2, added: 1 });
  expect(git(dir, "fsck", "--strict", "--no-dangling")).toMatchObject({ code: 0, err: "" });
  expect(git(dir, "log", "--format=%s", "main").out).toBe("two\none\n");
  // Exports written before the marker have exactly this config; they are recognised and marked.
  writeFileSync(join(dir, "config"), "[core]\n\trepositoryformatversion = 0\n\tbare = true\n");
  await commit({ "a.md": "3\n" }, "three");
  expect(await json(["export", dir, ...store])).toMatchObject({ generation: 3, added: 1 });
  expect(git(dir, "config", "slivingdoc.export").out).toBe("true\n");
  expect(git(dir, "rev-list", "--count", "main").out).toBe("3\n");
  // A first export killed just after it wrote its marked config is completed by the next.
  const cut = join(root, "export-cut");
  mkdirSync(cut);
  writeFileSync(join(cut, "config"), readFileSync(join(dir, "config")));
  expect(await json(["export", cut, ...store])).toMatchObject({ generation: 3, added: 3 });
  expect(git(cut, "fsck", "--strict", "--no-dangling")).toMatchObject({ code: 0, err: "" });
  expect(git(cut, "log", "--format=%s").out).toBe("three\ntwo\none\n");
});

test("past compaction, history younger than --history-period (30 days) stays whole: log and export reach generation 1", async () => {
  requireBinary();
  const store = freshStore();
  const commit = await notebook(store);
  for (let i = 1; i <= 40; i++) await commit({ "n.md": `${i}\n` }, `c${i}`);
  const log = await json(["log", ...store]);
  expect([log.oldestRetained, log.entries.length]).toEqual([1, 40]);
  const dir = join(root, "export-whole");
  expect(await json(["export", dir, ...store])).toMatchObject({ generation: 40, oldestRetained: 1, shallow: false });
  expect(git(dir, "fsck", "--strict", "--no-dangling")).toMatchObject({ code: 0, err: "" });
  expect(git(dir, "rev-list", "--count", "main").out.trim()).toBe("40");
  for (const bad of ["soon", "-1", "1w", "999999999999d"]) expect((await run(["log", ...store, "--history-period", bad])).code).toBe(EXIT_CODES.STARTUP);
}, 120_000);

test("export after compaction with --history-period 0: the oldest retained commit is a shallow boundary git accepts", async () => {
  requireBinary();
  const store = freshStore();
  const commit = await notebook(store);
  for (let i = 1; i <= 40; i++) await commit({ "n.md": `${i}\n` }, `c${i}`, [], { SLIVINGDOC_HISTORY_PERIOD: "0" });
  const log = await json(["log", ...store]);
  expect(log.oldestRetained).toBeGreaterThan(1);
  expect(log.entries.at(-1).files).toBeNull();
  const dir = join(root, "export-shallow");
  const exported = await json(["export", dir, ...store]);
  expect(exported).toMatchObject({ generation: 40, shallow: true, oldestRetained: log.oldestRetained });
  expect(git(dir, "fsck", "--strict", "--no-dangling")).toMatchObject({ code: 0, err: "" });
  expect(git(dir, "rev-list", "--count", "main").out.trim()).toBe(String(40 - log.oldestRetained + 1));
  const tooOld = await run(["show", "1", ...store, "--json"]);
  expect(JSON.parse(tooOld.stdout).message).toContain(`the oldest retained generation is ${log.oldestRetained}`);
}, 120_000);
