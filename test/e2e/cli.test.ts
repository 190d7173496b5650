/**
 * The CLI as a user runs it: spawned from source, asserting stdout, stderr
 * and the exit code together.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { EXIT_CODES } from "../../src/contract/tokens.ts";
import { openSqliteStore } from "../../src/store/sqlite.ts";
import { DEFAULT_COMMIT_RETRIES, resolveConfig } from "../../src/surfaces/config.ts";
import { engineDeps, processMemory } from "../../src/surfaces/engine-deps.ts";
import { read, write } from "../support/fixture.ts";
import { BINARY, requireBinary } from "../support/mcp.ts";
import { SYSTEM_CLOCK } from "../../src/surfaces/system-clock.ts";

const root = mkdtempSync(join(tmpdir(), "slivingdoc-cli-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));
const main = join(import.meta.dir, "../../src/main.ts");
const env = {
  ...(process.env as Record<string, string>),
  HOME: join(root, "home"),
  XDG_DATA_HOME: join(root, "data"),
  XDG_STATE_HOME: join(root, "state"),
  SLIVINGDOC_STORE: "",
  S3_BUCKET: "",
};

async function cli(cwd: string, ...args: string[]) {
  const p = Bun.spawn([process.execPath, main, ...args], { cwd, env, stdout: "pipe", stderr: "pipe" });
  const [stdout, stderr, code] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited]);
  return { stdout, stderr, code };
}

describe("zero configuration: the embedded store", () => {
  test("a conflict in human output names the CLI's next step; --json keeps the contract's words", async () => {
    // A store of its own: the test below counts generations from 1 on the default store.
    const own = ["--store", `sqlite:${join(root, "words.db")}`];
    const c = join(root, "c");
    const d = join(root, "d");
    expect((await cli(root, "pull", ...own, c)).code).toBe(0);
    write(c, "words.md", "one\n");
    expect((await cli(c, "commit", ...own, "-m", "words")).code).toBe(0);
    expect((await cli(root, "pull", ...own, d)).code).toBe(0);
    write(c, "words.md", "one (c)\n");
    write(d, "words.md", "one (d)\n");
    expect((await cli(c, "commit", ...own, "-m", "c")).code).toBe(0);
    const human = await cli(d, "commit", ...own, "-m", "d");
    expect(human.code).toBe(EXIT_CODES.CONTENT_CONFLICT);
    expect(human.stderr).toContain("Resolve the conflict blocks before `slivingdoc commit`.");
    expect(human.stderr).not.toContain("notes_commit");
    write(d, "words.md", "one (c)\n");
    const json = await cli(d, "pull", ...own, "--json");
    expect(json.code).toBe(0);
    write(c, "words.md", "one (c again)\n");
    write(d, "words.md", "one (d again)\n");
    expect((await cli(c, "commit", ...own, "-m", "c again")).code).toBe(0);
    const contract = await cli(d, "commit", ...own, "-m", "d again", "--json");
    expect(contract.code).toBe(EXIT_CODES.CONTENT_CONFLICT);
    expect(JSON.parse(contract.stdout).message).toStartWith("Resolve the conflict blocks before notes_commit.");
  });

  test("pull, edit, commit in two terminals; conflict, resolve, commit again", async () => {
    const a = join(root, "a");
    const b = join(root, "b");
    const first = await cli(root, "pull", a);
    expect(first).toEqual({ stdout: "", stderr: `pulled ${a}: up to date at generation 0\n`, code: 0 });
    // The default store lives under XDG_DATA_HOME, the private state under XDG_STATE_HOME.
    expect(existsSync(join(root, "data", "slivingdoc", "store.db"))).toBe(true);
    expect(existsSync(join(root, "state", "slivingdoc", "checkouts"))).toBe(true);

    write(a, "plan.md", "goal: ship\nstatus: draft\n");
    const committed = await cli(a, "commit", "-m", "plan");
    expect(committed.code).toBe(0);
    expect(committed.stderr).toBe(`committed ${a} at generation 1: 1 file changed, 2 insertions(+), 0 deletions(-)\n  plan.md | +2 -0\n`);

    expect((await cli(root, "pull", b)).code).toBe(0);
    write(a, "plan.md", "goal: ship\nstatus: review (a)\n");
    write(b, "plan.md", "goal: ship\nstatus: blocked (b)\n");
    expect((await cli(a, "commit", "-m", "a")).code).toBe(0);
    const conflict = await cli(b, "commit", "-m", "b", "--json");
    expect(conflict.code).toBe(EXIT_CODES.CONTENT_CONFLICT);
    const envelope = JSON.parse(conflict.stdout);
    expect(envelope).toMatchObject({
      code: "CONTENT_CONFLICT",
      reason: "MERGE_CONFLICT",
      action: "EDIT_FILES",
      retryable: false,
      files: [{ path: "plan.md", reason: "TEXT_CONFLICT", ranges: [{ start: 2, end: 6 }] }],
      readOnly: [],
      writable: [],
    });
    expect(envelope.diagnosticId).toMatch(/^[0-9a-f]{16}$/);
    // --json: the envelope is the whole output; nothing in words beside it.
    expect(conflict.stderr).toBe("");
    expect(readFileSync(join(b, "plan.md"), "utf8")).toBe(
      "goal: ship\n<<<<<<< local\nstatus: blocked (b)\n=======\nstatus: review (a)\n>>>>>>> accepted\n",
    );

    const markers = await cli(b, "commit", "-m", "b again");
    expect(markers.code).toBe(EXIT_CODES.CONTENT_CONFLICT);
    expect(markers.stderr).toContain("CONTENT_CONFLICT · UNRESOLVED_MARKERS");

    write(b, "plan.md", "goal: ship\nstatus: review, unblocked\n");
    const resolved = await cli(b, "commit", "-m", "resolved", "--json");
    expect(resolved.code).toBe(0);
    expect(JSON.parse(resolved.stdout)).toEqual({
      code: "OK",
      path: b,
      generation: 3,
      filesChanged: 1,
      insertions: 1,
      deletions: 1,
      files: [{ path: "plan.md", insertions: 1, deletions: 1 }],
      readOnly: [],
      writable: [],
    });
    expect((await cli(a, "pull")).code).toBe(0);
    expect(readFileSync(join(a, "plan.md"), "utf8")).toBe("goal: ship\nstatus: review, unblocked\n");
  });
});

describe("long work", () => {
  /** The CLI on a store of its own, on a terminal (script(1) gives it one) or in a pipe: its exit code and all it printed. */
  const onStore = (store: string) => (args: string[], tty: boolean) => {
    const command = [process.execPath, main, ...args].map((a) => `'${a}'`).join(" ");
    const argv = tty ? ["script", "-qec", command, "/dev/null"] : ["sh", "-c", command];
    const p = Bun.spawnSync(argv, { cwd: root, env: { ...env, SLIVINGDOC_STORE: `sqlite:${join(root, store)}` }, stdout: "pipe", stderr: "pipe" });
    return { code: p.exitCode, out: p.stdout.toString() + p.stderr.toString() };
  };

  test("a large pull shows progress on a terminal only, and lists at most 50 files", async () => {
    const big = join(root, "big");
    const run = onStore("big.db");
    expect(run(["pull", big], false).code).toBe(0);
    for (let i = 0; i < 450; i++) write(big, `n${i}.md`, `note ${i}\n`);
    expect(run(["commit", "-m", "many", big], false).code).toBe(0);
    const onTerminal = run(["pull", join(root, "big-tty")], true);
    expect(onTerminal.code).toBe(0);
    expect(onTerminal.out).toContain("\r400 files written…");
    expect(onTerminal.out).toContain("  … and 400 more files (--json lists them all)");
    const piped = run(["pull", join(root, "big-pipe")], false);
    expect(piped.code).toBe(0);
    expect(piped.out).not.toContain("files written");
  });

  test("a commit of 2,000 files or more shows its stages on a terminal only: scan, pack, upload", async () => {
    const many = join(root, "many");
    const run = onStore("many.db");
    expect(run(["pull", many], false).code).toBe(0);
    for (let i = 0; i < 2100; i++) write(many, `f${i}.md`, `file ${i}\n`);
    const onTerminal = run(["commit", "-m", "many files", many], true);
    expect(onTerminal.code).toBe(0);
    expect(onTerminal.out).toContain("files scanned: 2100 of 2100…");
    for (const stage of ["packing…", "uploading…", "publishing…"]) expect(onTerminal.out).toContain(stage);
    // A small notebook's quick commit says nothing of its stages; a pipe and --json never do.
    const few = join(root, "few");
    const runFew = onStore("few.db");
    expect(runFew(["pull", few], false).code).toBe(0);
    write(few, "a.md", "one\n");
    const small = runFew(["commit", "-m", "one file", few], true);
    expect(small.code).toBe(0);
    expect(small.out).not.toContain("packing…");
    for (let i = 0; i < 2100; i++) write(many, `f${i}.md`, `file ${i} again\n`);
    const piped = run(["commit", "-m", "again", many], false);
    expect(piped.code).toBe(0);
    expect(piped.out).not.toContain("…\u001b");
    expect(piped.out).not.toContain("packing");
    expect(piped.out).not.toContain("scanned");
    for (let i = 0; i < 2100; i++) write(many, `f${i}.md`, `file ${i} once more\n`);
    const json = run(["commit", "-m", "once more", "--json", many], true);
    expect(json.code).toBe(0);
    expect(json.out).not.toContain("packing");
  });
});

describe("gc", () => {
  test("removes an unreferenced pack past the grace period, never a referenced one; --dry-run changes nothing", async () => {
    const { openSqliteStore } = await import("../../src/store/sqlite.ts");
    const file = join(root, "gc.db");
    const e = { ...env, SLIVINGDOC_STORE: `sqlite:${file}` };
    const run = async (...args: string[]) => {
      const p = Bun.spawn([process.execPath, main, ...args], { cwd: root, env: e, stdout: "pipe", stderr: "pipe" });
      return { stdout: await new Response(p.stdout).text(), stderr: await new Response(p.stderr).text(), code: await p.exited };
    };
    const dir = join(root, "gc-notebook");
    expect((await run("pull", dir)).code).toBe(0);
    write(dir, "a.md", "a\n");
    expect((await run("commit", "-m", "a", dir)).code).toBe(0);
    const store = openSqliteStore(file, SYSTEM_CLOCK);
    const orphan = `packs/${"ab".repeat(32)}.pack`;
    await store.putIfAbsent(orphan, new TextEncoder().encode("an orphan of a lost race"));
    const young = await run("gc", "--json");
    expect(young.code).toBe(0);
    expect(JSON.parse(young.stdout)).toEqual({ generation: 1, referenced: 1, deleted: 0, young: 1, onHead: 0, checkoutBaselines: 0, proposals: 0, dryRun: false, reason: "nothing to delete" });
    const dry = await run("gc", "--grace", "0", "--dry-run", "--json");
    expect(JSON.parse(dry.stdout)).toMatchObject({ deleted: 1, dryRun: true });
    expect(await store.get(orphan)).not.toBeNull();
    const real = await run("gc", "--grace", "0");
    expect(real.code).toBe(0);
    // gc's report is its answer: on stdout.
    expect([real.stdout, real.stderr]).toEqual(["gc: generation 1, 1 packs referenced; removed 1 unreferenced packs, kept 0 younger than the grace period\n", ""]);
    expect(await store.get(orphan)).toBeNull();
    await store.close();
    // The notebook is intact.
    expect((await run("pull", join(root, "gc-check"))).code).toBe(0);
    expect(read(join(root, "gc-check"), "a.md")).toBe("a\n");
    const bad = await run("gc", "--grace", "soon");
    expect([bad.code, bad.stderr]).toEqual([2, "slivingdoc: invalid configuration: --grace must be a duration such as 90s, 30m, 1h or 2d\n"]);
    // Past what a number of milliseconds holds exactly: refused in the flag's words, not as an input field.
    const huge = await run("gc", "--grace", "999999999999d", "--json");
    expect([huge.code, huge.stdout, huge.stderr]).toEqual([2, "", "slivingdoc: invalid configuration: --grace must be a duration of at most 104249991d; got 999999999999d\n"]);
  });
});

describe("configuration", () => {
  test("commit retries: the engine's default unless configured (applied when the engine is loaded)", async () => {
    const store = openSqliteStore(join(root, "retries.db"), SYSTEM_CLOCK);
    try {
      const deps = (flags: Record<string, string>, extra: Record<string, string> = {}) =>
        engineDeps(resolveConfig(flags, { HOME: join(root, "home"), XDG_STATE_HOME: join(root, "state"), ...extra }, root), store, processMemory().get()).commitRetries;
      expect(deps({})).toBe(DEFAULT_COMMIT_RETRIES);
      expect(deps({ "commit-retries": "0" })).toBe(0);
      expect(deps({}, { SLIVINGDOC_COMMIT_RETRIES: "7" })).toBe(7);
    } finally {
      await store.close();
    }
  });
});

describe("refusals before anything is touched", () => {
  const cases: Array<[string, string[], RegExp]> = [
    ["commit without -m", ["commit"], /^slivingdoc: argument refusal: commit needs a message/],
    ["two paths", ["commit", "-m", "x", "one", "two"], /^slivingdoc: argument refusal: one notebook path at most/],
    ["a misspelt flag", ["commit", "--mesage", "x"], /^slivingdoc: argument refusal: unknown option --mesage/],
    ["a misspelt command", ["comit", "-m", "x"], /^slivingdoc: argument refusal: unknown command "comit"/],
    ["a flag without its value", ["pull", "--store"], /^slivingdoc: argument refusal: option --store needs a value/],
    ["a bad store URL", ["pull", "--store", "ftp://x"], /^slivingdoc: invalid configuration: the store must be/],
    ["bad retries", ["pull", "--commit-retries", "-1"], /^slivingdoc: invalid configuration: --commit-retries/],
    ["a deadline of 0", ["pull", "--deadline", "0"], /^slivingdoc: invalid configuration: --deadline must be more than 0 and at most 24h, such as 30s or 5m$/],
    ["a deadline over a day", ["serve", "--deadline", "25h"], /^slivingdoc: invalid configuration: --deadline must be more than 0 and at most 24h/],
    ["a deadline that is not a duration", ["pull", "--deadline", "soon"], /^slivingdoc: invalid configuration: --deadline must be a duration/],
    ["an endpoint with user information", ["pull", "--store", "s3://bucket", "--endpoint", "https://AKIAIOSFODNN7EXAMPLE:pw@h"], /user information/],
    ["an invalid prefix", ["pull", "--store", "s3://bucket/../x"], /^slivingdoc: invalid configuration: the S3 object prefix/],
    // A pasted pre-signed URL: its query is never taken for the prefix, nor repeated.
    [
      "an S3 store URL with a query string",
      ["pull", "--store", "s3://bucket/p?X-Amz-Credential=AKIAIOSFODNN7EXAMPLE%2F20260101", "--endpoint", "http://127.0.0.1:9"],
      /^slivingdoc: invalid configuration: the store URL must not carry a query string or a fragment \('\?' or '#'\); give s3:\/\/BUCKET\[\/PREFIX\] or sqlite:PATH$/,
    ],
    ["an embedded store URL with a query string", ["pull", "--store", "sqlite:store.db?mode=ro"], /^slivingdoc: invalid configuration: the store URL must not carry a query string/],
    ["a store URL with a fragment", ["pull", "--store", "sqlite:store.db#x"], /^slivingdoc: invalid configuration: the store URL must not carry a query string or a fragment/],
    ["overlapping roots", ["pull", "--workspace-root", "/tmp/w", "--private-root", "/tmp/w/p"], /overlap/],
    ["an absolute path-set entry", ["pull", "--read-only-paths", "docs,/etc"], /^slivingdoc: invalid path-set entry: --read-only-paths entry "\/etc" is absolute; entries are relative to the notebook directory$/],
    ["a .. path-set entry", ["pull", "--writable-paths", "a/../b"], /^slivingdoc: invalid path-set entry: --writable-paths entry "a\/..\/b" has a '\.\.' segment$/],
    ["a .git path-set entry", ["serve", "--read-only-paths", ".git"], /^slivingdoc: invalid path-set entry: --read-only-paths entry "\.git" has a '\.git' segment$/],
    ["a path in both sets", ["serve", "--read-only-paths", "docs", "--writable-paths", "./docs/"], /^slivingdoc: overlapping path settings: "docs" is named by both --read-only-paths and --writable-paths; name each path in one setting only$/],
    ["a misspelt path-set flag", ["serve", "--read-only-path", "docs"], /^slivingdoc: argument refusal: unknown option --read-only-path$/],
    ["serve with a path", ["serve", "somewhere"], /^slivingdoc: argument refusal: serve takes no path/],
  ];
  for (const [name, args, pattern] of cases) {
    test(name, async () => {
      const fresh = mkdtempSync(join(root, "refusal-"));
      const r = await cli(fresh, ...args);
      expect(r.code).toBe(EXIT_CODES.STARTUP);
      expect(r.stdout).toBe("");
      expect(r.stderr.trimEnd()).toMatch(pattern);
      expect(r.stderr.endsWith("\n")).toBe(true);
      expect(r.stderr.trim().split("\n").length).toBe(1);
      expect(r.stderr).not.toContain("AKIA");
      expect(r.stderr).not.toContain(":pw@");
      expect(r.stderr).not.toContain("X-Amz-Credential");
      // Refused before anything was made: no store file, no private state.
      expect(readdirSync(fresh)).toEqual([]);
    });
  }

  test("a commit message refusal is INVALID_REQUEST with its exit code", async () => {
    const r = await cli(root, "commit", "-m", "   ", "--json", join(root, "a"));
    expect(r.code).toBe(EXIT_CODES.INVALID_REQUEST);
    expect(JSON.parse(r.stdout)).toMatchObject({ code: "INVALID_REQUEST", reason: "MESSAGE_BLANK", action: "FIX_INPUT" });
  });

  test("a path outside --workspace-root is PATH_OUTSIDE_ROOT naming the root", async () => {
    const ws = join(root, "ws");
    const r = await cli(root, "pull", "--workspace-root", ws, "--json", join(root, "elsewhere"));
    expect(r.code).toBe(EXIT_CODES.INVALID_REQUEST);
    const e = JSON.parse(r.stdout);
    expect([e.code, e.reason, e.action]).toEqual(["INVALID_REQUEST", "PATH_OUTSIDE_ROOT", "FIX_INPUT"]);
    expect(e.message).toContain(ws);
  });

  test("a checkout nested in another is refused", async () => {
    const outer = join(root, "outer");
    expect((await cli(root, "pull", outer)).code).toBe(0);
    const r = await cli(root, "pull", "--json", join(outer, "inner"));
    expect(r.code).toBe(EXIT_CODES.INVALID_REQUEST);
    expect(JSON.parse(r.stdout).reason).toBe("PATH_OUTSIDE_ROOT");
  });

  test("--help and --version", async () => {
    const version = JSON.parse(readFileSync(join(import.meta.dir, "../../package.json"), "utf8")).version;
    const lines = (commit: string) =>
      new RegExp(`^slivingdoc ${version.replaceAll(".", "\\.")}\ncommit: ${commit}\nstore formats: reads 1–4, writes 4\nplatform: ${process.platform}-${process.arch}\n$`);
    // From source there is no build: the commit says so.
    const v = await cli(root, "--version");
    expect(v.code).toBe(0);
    expect(v.stderr).toBe("");
    expect(v.stdout).toMatch(lines("source"));
    expect(await cli(root, "-V")).toEqual(v);
    const json = await cli(root, "--version", "--json");
    expect(json.code).toBe(0);
    expect(JSON.parse(json.stdout)).toEqual({ version, commit: "source", formats: { reads: [1, 2, 3, 4], writes: 4 }, platform: `${process.platform}-${process.arch}` });
    // The built binary names the commit it was built from ("+changes" for a build of an edited tree).
    requireBinary();
    const built = Bun.spawnSync([BINARY, "--version"], { env }).stdout.toString();
    expect(built).toMatch(lines("[0-9a-f]{12}(\\+changes)?"));
    // A commit of this repository (the build's, which later commits may have left behind).
    const commit = /^commit: ([0-9a-f]{12})/m.exec(built)![1]!;
    expect(Bun.spawnSync(["git", "cat-file", "-e", `${commit}^{commit}`], { cwd: join(import.meta.dir, "../..") }).exitCode).toBe(0);
    expect((await cli(root, "--version", "--bogus")).code).toBe(EXIT_CODES.STARTUP);
    const h = await cli(root, "commit", "--help");
    expect(h.code).toBe(0);
    expect(h.stdout).toContain("--message");
    expect(h.stdout).toContain("--commit-retries");
    expect(h.stdout).toContain("--deadline");
    // Not a terminal: 80 columns, no trailing spaces; the command's own flags first, the shared settings under their heading; one example.
    for (const args of [["--help"], ...["serve", "web", "init", "pull", "commit", "log", "doctor"].map((c) => [c, "--help"])]) {
      const text = (await cli(root, ...args)).stdout;
      expect({ args, long: text.split("\n").filter((l) => l.length > 80) }).toEqual({ args, long: [] });
      expect({ args, trailing: text.split("\n").filter((l) => / $/.test(l)) }).toEqual({ args, trailing: [] });
    }
    const own = h.stdout.indexOf("--message");
    const shared = h.stdout.indexOf("Store and process options (every command):");
    expect(own).toBeGreaterThan(0);
    expect(shared).toBeGreaterThan(own);
    expect(h.stdout.indexOf("--store")).toBeGreaterThan(shared);
    expect(h.stdout.indexOf("--deadline")).toBeGreaterThan(shared);
    expect(h.stdout).toEndWith('Example:\n  slivingdoc commit -m "plan: ship on Friday" ./notebook\n');
    expect(await cli(root, "help", "commit")).toEqual(h);
    // A mistyped command: the closest one suggested; unknown flags still refused.
    const typo = await cli(root, "comit", "-m", "x");
    expect({ code: typo.code, stdout: typo.stdout }).toEqual({ code: EXIT_CODES.STARTUP, stdout: "" });
    expect(typo.stderr).toStartWith('slivingdoc: argument refusal: unknown command "comit" (did you mean commit?);');
    expect((await cli(root, "xyzzy")).stderr).not.toContain("did you mean");
    expect((await cli(root, "commit", "--mesage", "x")).stderr).toContain("unknown option --mesage");
  });
});
