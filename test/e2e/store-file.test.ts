/**
 * An embedded store whose file is not what it should be
 * (src/store/sqlite.ts, src/surfaces/verified-store.ts). One that cannot be
 * opened — not a database, damaged, or another user's — is refused at the
 * start of every command and of `serve`, like a store that fails the probe:
 * INCOMPATIBLE_STORE naming the cause in words, exit 2, one line, no stack
 * trace, nothing on stdout even with --json, and the file left as it was.
 * One that opens, but whose pages holding `current` or a pack are damaged,
 * answers STORAGE_INTEGRITY with what failed. One removed or replaced
 * under a running `serve` is seen as it is now, at every call: no call is
 * acknowledged into a file that is no longer the store's. Against the
 * built binary.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { chmodSync, chownSync, copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, renameSync, rmSync, truncateSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { EXIT_CODES } from "../../src/contract/tokens.ts";
import { MANIFEST_KEY, parseManifest } from "../../src/engine/publish/manifest.ts";
import { openSqliteStore } from "../../src/store/sqlite.ts";
import { OPERATIONS } from "../../src/surfaces/operations.ts";
import { filesOf, seedNotebookByCli, write } from "../support/fixture.ts";
import { BINARY, call, connect, requireBinary, runBinary } from "../support/mcp.ts";
import { holdWriteLock } from "../support/sqlite-lock-holder.ts";
import { SYSTEM_CLOCK } from "../../src/surfaces/system-clock.ts";

// Permissions bind only an unprivileged process: as root, the binary runs as
// nobody (65534), in a world of its own, so another user's store is one.
const asRoot = process.getuid?.() === 0;
const world = mkdtempSync(join(tmpdir(), "slivingdoc-store-file-"));
afterAll(() => rmSync(world, { recursive: true, force: true }));
chmodSync(world, 0o755);
const own = (path: string) => {
  if (asRoot) chownSync(path, 65534, 65534);
};
own(world);

const env = (store: string) => ({
  PATH: process.env.PATH ?? "/usr/bin:/bin",
  HOME: join(world, "home"),
  TMPDIR: world,
  SLIVINGDOC_STORE: `sqlite:${store}`,
  SLIVINGDOC_PRIVATE_ROOT: join(world, "private"),
});

async function run(store: string, args: string[], stdin = "") {
  requireBinary();
  const prefix = asRoot ? ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"] : [];
  const p = Bun.spawn([...prefix, BINARY, ...args], { cwd: world, env: env(store), stdin: new TextEncoder().encode(stdin), stdout: "pipe", stderr: "pipe" });
  const [stdout, stderr, code] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited]);
  return { stdout, stderr, code };
}

/** Text that compresses poorly, so that its pack spans many pages of the store file. */
const big = Array.from({ length: 6_000 }, () => crypto.randomUUID()).join("\n");

/** Every command of the registry with what it requires, `serve` and `web`. */
const COMMANDS: string[][] = [
  ...OPERATIONS.map((op) => [
    op.cli.name,
    ...Object.entries(op.cli.flags).flatMap(([name, flag]) => (flag.required ? [`--${name}`, "1"] : [])),
    ...(op.cli.positional?.required ? ["1"] : []),
    "--json",
  ]),
  ["serve"],
  ["web", "--port", "0", "--json"],
];

/** A store with a notebook in it: one commit of `files`, written by the binary, its write-ahead log checkpointed. */
async function notebookStore(name: string, files: Record<string, string>): Promise<string> {
  const dir = join(world, name);
  mkdirSync(dir);
  own(dir);
  const store = join(dir, "store.db");
  const checkout = join(dir, "checkout");
  await seedNotebookByCli((args) => run(store, args), checkout, files, own);
  // Closing the last connection moved every commit into the file itself.
  expect(existsSync(`${store}-wal`)).toBe(false);
  return store;
}

/** The stored bodies of `current` and of its first pack, read by the test itself. */
async function storedBodies(store: string): Promise<{ manifest: Uint8Array; pack: Uint8Array }> {
  const s = openSqliteStore(store, SYSTEM_CLOCK);
  try {
    const manifest = (await s.get(MANIFEST_KEY))!.body;
    const pack = (await s.get(parseManifest(manifest).packs[0]!.key))!.body;
    return { manifest, pack };
  } finally {
    await s.close();
    // What this process made beside the store (its queue's files) stays the binary's user's to write.
    for (const name of readdirSync(dirname(store))) own(join(dirname(store), name));
  }
}

/** Overwrite the whole database page that holds `bytes` (a run of them, as the file stores them). */
function damagePageHolding(store: string, bytes: Uint8Array): void {
  const file = readFileSync(store);
  const pageSize = file.readUInt16BE(16) === 1 ? 65536 : file.readUInt16BE(16);
  const at = file.indexOf(Buffer.from(bytes));
  expect(at).toBeGreaterThan(0);
  expect(file.indexOf(Buffer.from(bytes), at + 1)).toBe(-1);
  const page = Math.floor(at / pageSize);
  expect(page).toBeGreaterThan(0); // not the schema's page
  file.fill(0xab, page * pageSize, (page + 1) * pageSize);
  writeFileSync(store, file);
}

const NOT_WRITABLE = "this user may not write its file or the file's directory; run as the user who owns them, or give this user write access to both";

/** A copy of a notebook's store with file mode `mode`, in a directory that is another user's (read-only to its owner when the tests are not root). */
async function theirs(name: string, mode: number): Promise<string> {
  const dir = join(world, name);
  mkdirSync(dir);
  const store = join(dir, "store.db");
  copyFileSync(await notebookStore(`${name}-source`, { "a.md": "a\n" }), store);
  chmodSync(store, mode);
  chmodSync(dir, 0o555);
  afterAll(() => chmodSync(dir, 0o755));
  return store;
}

describe("a store that cannot be opened is refused at start-up, by every command, serve and web", () => {
  const cases: Array<[string, () => Promise<string>, string]> = [
    [
      "random bytes: not a database",
      async () => {
        const store = join(world, "random.db");
        writeFileSync(store, crypto.getRandomValues(new Uint8Array(20_000)));
        own(store);
        return store;
      },
      "its file is not a database; point --store at the notebook's store file, or move this one away to start an empty notebook",
    ],
    [
      "a truncated store: damaged",
      async () => {
        const store = await notebookStore("truncated", { "a.md": big });
        truncateSync(store, readFileSync(store).length >> 1);
        return store;
      },
      "its file is damaged; put back a copy (with its -wal file), or move it away to start an empty notebook",
    ],
    ["another user's store, in a directory this user may not write: not writable", () => theirs("theirs", 0o444), NOT_WRITABLE],
    // SQLite opens the file, then cannot make its write-ahead log beside it (SQLITE_READONLY_DIRECTORY).
    ["a store file anyone may write, in a directory this user may not: not writable", () => theirs("their-directory", 0o666), NOT_WRITABLE],
  ];
  for (const [name, make, cause] of cases) {
    test(name, async () => {
      const store = await make();
      const before = readFileSync(store);
      for (const args of COMMANDS) {
        const r = await run(store, args);
        const shown = `${args.join(" ")}: exit ${r.code}\n${r.stdout}${r.stderr}`;
        expect(shown).toBe(`${args.join(" ")}: exit ${EXIT_CODES.STARTUP}\nslivingdoc: INCOMPATIBLE_STORE: the store cannot be opened: ${cause}\n`);
        // Neither the private path nor SQLite's own words.
        expect(r.stderr).not.toContain(world);
        expect(r.stderr).not.toMatch(/SQLITE|malformed|readonly database|unable to open/);
      }
      expect(readFileSync(store).equals(before)).toBe(true);
    });
  }
});

describe("a store that opens, but whose reads find damage: STORAGE_INTEGRITY with what failed", () => {
  test("the page holding `current`: MANIFEST_INVALID", async () => {
    const store = await notebookStore("current-damaged", { "a.md": big });
    damagePageHolding(store, (await storedBodies(store)).manifest);
    for (const args of [["pull", "--json", join(world, "current-damaged", "fresh")], ["generation", "--json"]]) {
      const r = await run(store, args);
      expect(r.code).toBe(EXIT_CODES.OPERATOR);
      expect(JSON.parse(r.stdout)).toMatchObject({ code: "STORAGE_INTEGRITY", reason: "MANIFEST_INVALID", action: "OPERATOR", retryable: false });
      expect(r.stdout + r.stderr).not.toContain(world);
    }
  });

  test("a page of a pack: PACK_INVALID, and the manifest still reads", async () => {
    const store = await notebookStore("pack-damaged", { "a.md": big });
    const { pack } = await storedBodies(store);
    const middle = pack.length >> 1;
    damagePageHolding(store, pack.subarray(middle, middle + 64));
    const r = await run(store, ["pull", "--json", join(world, "pack-damaged", "fresh")]);
    expect(r.code).toBe(EXIT_CODES.OPERATOR);
    expect(JSON.parse(r.stdout)).toMatchObject({ code: "STORAGE_INTEGRITY", reason: "PACK_INVALID", action: "OPERATOR", retryable: false });
    expect(r.stdout + r.stderr).not.toContain(world);
    const generation = await run(store, ["generation", "--json"]);
    expect([generation.code, JSON.parse(generation.stdout)]).toEqual([0, { generation: 1 }]);
  });
});

/** The generation the store at `store` holds, read by the test itself. */
async function generationOf(store: string): Promise<number> {
  const s = openSqliteStore(store, SYSTEM_CLOCK);
  try {
    const current = await s.get(MANIFEST_KEY);
    return current === null ? 0 : parseManifest(current.body).generation;
  } finally {
    await s.close();
  }
}

describe("the store file removed or replaced under a running serve: every call sees the file the path names now", () => {
  const files = (store: string) => [store, `${store}-wal`, `${store}-shm`];

  test("removed after a pull: every notes_commit is refused as a store that holds no notebook, and serve makes no store file", async () => {
    const store = await notebookStore("removed", { "a.md": "a\n" });
    const agent = join(world, "removed", "agent");
    const session = await connect(env(store), ["--workspace-root", agent]);
    try {
      expect((await call(session, "notes_pull", {})).data).toMatchObject({ generation: 1 });
      write(agent, "b.md", "b\n");
      expect((await call(session, "notes_commit", { message: "b" })).data).toMatchObject({ generation: 2 });
      for (const f of files(store)) rmSync(f, { force: true });
      for (const n of [3, 4, 5]) {
        write(agent, `n${n}.md`, `${n}\n`);
        const before = filesOf(agent);
        const out = await call(session, "notes_commit", { message: `after the store went: ${n}` });
        expect(out.isError).toBe(true);
        expect(out.data).toMatchObject({ code: "STORAGE_INTEGRITY", reason: "HISTORY_INVALID", action: "OPERATOR", retryable: false });
        expect(String(out.data.message)).toContain("this checkout was brought to generation 2");
        expect(String(out.data.message)).toContain("but the store holds no notebook");
        expect(filesOf(agent)).toEqual(before);
      }
    } finally {
      await session.finish();
    }
    expect(files(store).filter((f) => existsSync(f))).toEqual([]);
  });

  test("removed while it held no notebook: the first publication is refused, not made into a new file", async () => {
    const dir = join(world, "removed-empty");
    mkdirSync(dir);
    own(dir);
    const store = join(dir, "store.db");
    const agent = join(dir, "agent");
    const session = await connect(env(store), ["--workspace-root", agent]);
    try {
      expect((await call(session, "notes_pull", {})).data).toMatchObject({ generation: 0 });
      for (const f of files(store)) rmSync(f, { force: true });
      write(agent, "a.md", "a\n");
      const out = await call(session, "notes_commit", { message: "into nothing" });
      expect(out.isError).toBe(true);
      expect(out.data).toMatchObject({ code: "STORAGE_INTEGRITY", reason: "HISTORY_INVALID", action: "OPERATOR" });
      expect(String(out.data.message)).toContain("its file is gone");
    } finally {
      await session.finish();
    }
    expect(files(store).filter((f) => existsSync(f))).toEqual([]);
  });

  test("an older copy moved over it: notes_commit is refused as a store that went backwards, and the copy is left as it was", async () => {
    const store = await notebookStore("moved-over", { "a.md": "a\n" });
    const older = `${store}.older`;
    copyFileSync(store, older);
    const agent = join(world, "moved-over", "agent");
    const session = await connect(env(store), ["--workspace-root", agent]);
    try {
      expect((await call(session, "notes_pull", {})).data).toMatchObject({ generation: 1 });
      write(agent, "b.md", "b\n");
      expect((await call(session, "notes_commit", { message: "b" })).data).toMatchObject({ generation: 2 });
      renameSync(older, store);
      write(agent, "c.md", "c\n");
      const before = filesOf(agent);
      const out = await call(session, "notes_commit", { message: "over the older copy" });
      expect(out.isError).toBe(true);
      expect(out.data).toMatchObject({ code: "STORAGE_INTEGRITY", reason: "HISTORY_INVALID", action: "OPERATOR" });
      expect(String(out.data.message)).toContain("this checkout was brought to generation 2");
      expect(String(out.data.message)).toContain("but the store shows generation 1.");
      expect(filesOf(agent)).toEqual(before);
    } finally {
      await session.finish();
    }
    expect(await generationOf(store)).toBe(1);
  });
});

describe("another process holding the store file's write lock past the call deadline", () => {
  /** Short, so that the test is quick; far below SQLite's own wait for the lock (15 s). */
  const DEADLINE_MS = 2_000;
  /** What a process may take beyond its deadline: starting, answering and ending, on a busy machine. */
  const MARGIN_MS = 4_000;

  test("a commit answers by its deadline, MANIFEST_WRITE (retry), nothing published; once the lock is released the same commit lands", async () => {
    const store = await notebookStore("locked", { "a.md": "a\n" });
    const agent = join(world, "locked", "agent");
    const e = { ...env(store), SLIVINGDOC_DEADLINE: `${DEADLINE_MS}ms` };
    expect((await runBinary(["pull", agent], e, DEADLINE_MS + MARGIN_MS)).code).toBe(0);
    write(agent, "b.md", "b\n");
    const holder = await holdWriteLock(store);
    try {
      const r = await runBinary(["commit", "-m", "b", "--json", agent], e, DEADLINE_MS + MARGIN_MS);
      expect(r.stillRunning).toBe(false);
      expect(r.code).toBe(EXIT_CODES.RETRYABLE);
      expect(JSON.parse(r.stdout)).toMatchObject({ code: "STORAGE_FAILURE", reason: "MANIFEST_WRITE", action: "RETRY", retryable: true });
    } finally {
      await holder.release();
    }
    expect(await generationOf(store)).toBe(1);
    const again = await runBinary(["commit", "-m", "b", "--json", agent], e, DEADLINE_MS + MARGIN_MS);
    expect([again.code, JSON.parse(again.stdout).generation]).toEqual([0, 2]);
  });

  test("over MCP, notes_commit answers by its own deadline, and the server goes on", async () => {
    const store = await notebookStore("locked-serve", { "a.md": "a\n" });
    const agent = join(world, "locked-serve", "agent");
    const session = await connect({ ...env(store), SLIVINGDOC_DEADLINE: `${DEADLINE_MS}ms` }, ["--workspace-root", agent]);
    try {
      expect((await call(session, "notes_pull", {})).data).toMatchObject({ generation: 1 });
      write(agent, "b.md", "b\n");
      const holder = await holdWriteLock(store);
      try {
        const out = await Promise.race([call(session, "notes_commit", { message: "b" }), Bun.sleep(DEADLINE_MS + MARGIN_MS).then(() => null)]);
        expect(out).not.toBeNull();
        expect(out!.isError).toBe(true);
        expect(out!.data).toMatchObject({ code: "STORAGE_FAILURE", reason: "MANIFEST_WRITE", action: "RETRY", retryable: true });
      } finally {
        await holder.release();
      }
      expect((await call(session, "notes_commit", { message: "b" })).data).toMatchObject({ generation: 2 });
    } finally {
      await session.finish();
    }
  });
});

describe("a store path given explicitly whose directory does not exist", () => {
  const REFUSAL = "slivingdoc: invalid configuration: the embedded store's directory does not exist; check --store (or SLIVINGDOC_STORE), or give --create to make it\n";

  test("is refused at the start of every command and of serve, by SLIVINGDOC_STORE or --store, naming no path and making nothing", async () => {
    const missing = join(world, "mistyped", "dir");
    // But init, the set-up path, which makes it (test/e2e/init.test.ts).
    const setUp = new Set(OPERATIONS.filter((op) => op.cli.createsStore === true).map((op) => op.cli.name));
    expect([...setUp]).toEqual(["init"]);
    for (const args of COMMANDS.filter(([name]) => !setUp.has(name!))) {
      for (const [how, r] of [
        ["SLIVINGDOC_STORE", await run(join(missing, "x.db"), args)],
        ["--store", await run(join(world, "elsewhere.db"), [...args, "--store", `sqlite:${join(missing, "x.db")}`])],
      ] as const) {
        expect(`${args.join(" ")} (${how}): exit ${r.code}\n${r.stdout}${r.stderr}`).toBe(`${args.join(" ")} (${how}): exit ${EXIT_CODES.STARTUP}\n${REFUSAL}`);
      }
    }
    expect(existsSync(join(world, "mistyped"))).toBe(false);
    expect(existsSync(join(world, "elsewhere.db"))).toBe(false);
  });

  test("--create makes the directory, and the store is then used as any other", async () => {
    const store = join(world, "created", "deep", "store.db");
    const agent = join(world, "created-agent");
    const pulled = await run(store, ["pull", "--create", "--json", agent]);
    expect([pulled.code, JSON.parse(pulled.stdout).generation]).toEqual([0, 0]);
    expect(existsSync(store)).toBe(true);
    write(agent, "a.md", "a\n");
    const committed = await run(store, ["commit", "-m", "a", "--json", agent]);
    expect([committed.code, JSON.parse(committed.stdout).generation]).toEqual([0, 1]);
  });

  test("the default store location is made as ever", async () => {
    const home = join(world, "default-home");
    mkdirSync(home);
    own(home);
    requireBinary();
    const prefix = asRoot ? ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"] : [];
    const { SLIVINGDOC_STORE: _none, ...rest } = env(join(world, "unused.db"));
    const p = Bun.spawn([...prefix, BINARY, "generation", "--json"], { cwd: world, env: { ...rest, HOME: home }, stdout: "pipe", stderr: "pipe" });
    const [stdout, code] = await Promise.all([new Response(p.stdout).text(), p.exited]);
    expect([code, JSON.parse(stdout)]).toEqual([0, { generation: 0 }]);
    const pulled = Bun.spawn([...prefix, BINARY, "pull", join(home, "nb")], { cwd: world, env: { ...rest, HOME: home }, stdout: "pipe", stderr: "pipe" });
    expect(await pulled.exited).toBe(0);
    expect(existsSync(join(home, ".local", "share", "slivingdoc", "store.db"))).toBe(true);
  });
});
