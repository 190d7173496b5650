/**
 * How `serve` ends, through the built binary and real signals: SIGTERM,
 * SIGINT and SIGHUP finish the call in flight, write out the process
 * memory, log "server stopped" and exit 0, as stdin's end and a client that
 * closed both pipes do; the session directory of a server started without
 * --workspace-root goes away with its private state only when nothing
 * unpublished is in it — on each of those ends, and for a server killed
 * (SIGKILL), at the next server's start.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { seedNotebookByCli } from "../support/fixture.ts";
import { runCli } from "../support/kill-harness.ts";
import { BINARY, requireBinary } from "../support/mcp.ts";
import { type RawMcp, spawnMcp } from "../support/raw-mcp.ts";

const root = mkdtempSync(join(tmpdir(), "slivingdoc-stop-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));

function envFor(name: string) {
  const env = {
    PATH: process.env.PATH ?? "/usr/bin:/bin",
    HOME: join(root, name, "home"),
    TMPDIR: join(root, name, "tmp"),
    SLIVINGDOC_STORE: `sqlite:${join(root, name, "store.db")}`,
    SLIVINGDOC_PRIVATE_ROOT: join(root, name, "private"),
  } satisfies Record<string, string>;
  mkdirSync(env.TMPDIR, { recursive: true });
  mkdirSync(env.HOME, { recursive: true });
  return env;
}

function cli(env: Record<string, string>, ...args: string[]): void {
  const run = Bun.spawnSync([BINARY, ...args], { env, stdout: "pipe", stderr: "pipe" });
  if (run.exitCode !== 0) throw new Error(`slivingdoc ${args[0]} exited ${run.exitCode}: ${run.stderr.toString()}`);
}

/** A notebook of `count` files published through the CLI, so a server's pull has work to do. */
async function seed(env: ReturnType<typeof envFor>, count: number): Promise<void> {
  // A private root of its own: the server's checkout is then the only one in env's.
  const seeder = { ...env, SLIVINGDOC_PRIVATE_ROOT: `${env.SLIVINGDOC_PRIVATE_ROOT}-seed` };
  const files = Object.fromEntries(Array.from({ length: count }, (_, i) => [`note-${i}.md`, `# note ${i}\n\nline ${i}\n`]));
  await seedNotebookByCli((args) => runCli(args, seeder, { timeoutMs: 60_000 }), `${env.HOME}-seed`, files);
}

function serve(env: Record<string, string>, args: string[] = []): RawMcp {
  requireBinary();
  return spawnMcp([BINARY, "serve", ...args], env);
}

const messagesOf = (s: RawMcp) => s.records().map((r) => r.msg);

describe("a stop signal", () => {
  test("SIGTERM during a pull: the pull finishes and answers, then the server stops and exits 0", async () => {
    const env = envFor("term");
    await seed(env, 1500);
    const s = serve(env);
    await s.initialize();
    s.callTool(1, "notes_pull", {});
    await s.logged("tool call started");
    s.kill("SIGTERM");
    const answer = await s.answer(1);
    expect(await s.exited).toBe(0);
    expect(answer.result.isError ?? false).toBe(false);
    expect(answer.result.structuredContent.filesChanged).toBe(1500);
    // The pull wrote every file, and nothing in them was unpublished: the session went at the end.
    expect(existsSync(answer.result.structuredContent.path as string)).toBe(false);
    const msgs = messagesOf(s);
    // The signal came while the call ran: "stopping" is logged before the call completes.
    expect(msgs.indexOf("stopping")).toBeGreaterThan(msgs.indexOf("tool call started"));
    expect(msgs.indexOf("stopping")).toBeLessThan(msgs.indexOf("tool call completed"));
    expect(msgs.at(-1)).toBe("server stopped");
    expect(s.records().find((r) => r.msg === "stopping")!.signal).toBe("SIGTERM");
  });

  test("a call sent after the signal is not started", async () => {
    const env = envFor("late");
    const s = serve(env);
    await s.initialize();
    s.kill("SIGTERM");
    await s.logged("stopping");
    s.callTool(1, "notes_pull", {});
    expect(await s.exited).toBe(0);
    expect(messagesOf(s)).not.toContain("tool call started");
    expect(messagesOf(s).at(-1)).toBe("server stopped");
  });

  test("SIGINT while idle: the server stops and exits 0", async () => {
    const env = envFor("int");
    const s = serve(env);
    await s.initialize();
    s.kill("SIGINT");
    expect(await s.exited).toBe(0);
    expect(s.records().find((r) => r.msg === "stopping")!.signal).toBe("SIGINT");
    expect(messagesOf(s).at(-1)).toBe("server stopped");
  });

  test("the process memory is written out before it exits", async () => {
    const env = envFor("kept");
    await seed(env, 3);
    const s = serve(env);
    await s.initialize();
    s.callTool(1, "notes_pull", {});
    const dir = (await s.answer(1)).result.structuredContent.path as string;
    // A small commit keeps its stat-cache changes in memory (the file on disk stays right, only slower).
    writeFileSync(join(dir, "added.md"), "added\n");
    s.callTool(2, "notes_commit", { message: "one more" });
    expect((await s.answer(2)).result.isError ?? false).toBe(false);
    const checkouts = join(env.SLIVINGDOC_PRIVATE_ROOT, "checkouts");
    const [id] = readdirSync(checkouts);
    const cacheFile = join(checkouts, id!, "stat-cache.json");
    const before = readFileSync(cacheFile, "utf8");
    expect(before).not.toContain("added.md");
    // An edit not published yet keeps the session and its state (and the stat cache this test reads).
    writeFileSync(join(dir, "unpublished.md"), "not yet\n");
    s.kill("SIGTERM");
    expect(await s.exited).toBe(0);
    expect(readFileSync(cacheFile, "utf8")).toContain("added.md");
  });
});

describe("a client that goes away", () => {
  test("both pipes closed mid-commit: the commit lands, the server stops as at stdin's end and exits 0, without a stack trace", async () => {
    const env = envFor("gone");
    const s = serve(env);
    await s.initialize();
    s.callTool(1, "notes_pull", {});
    const dir = (await s.answer(1)).result.structuredContent.path as string;
    // Enough files that the commit is still running when the pipes close.
    for (let i = 0; i < 1500; i++) writeFileSync(join(dir, `gone-${i}.md`), `note ${i}\n`);
    s.callTool(2, "notes_commit", { message: "the client left" });
    await s.logged("tool call started");
    await s.closeOutput();
    s.endInput();
    expect(await s.exited).toBe(0);
    // Every line on stderr is a log record: no stack trace, no runtime's message.
    expect(s.records().filter((r) => r.msg === null)).toEqual([]);
    expect(s.records().filter((r) => r.level === "error")).toEqual([]);
    expect(messagesOf(s).at(-1)).toBe("server stopped");
    const commit = s.records().find((r) => r.msg === "tool call completed" && r.tool === "notes_commit");
    expect(commit?.outcome).toBe("OK");
    const other = join(root, "gone-other");
    cli(env, "pull", other);
    expect(readdirSync(other).length).toBe(1500);
    // Everything in it published: the session went, as at stdin's end.
    expect(readdirSync(env.TMPDIR).filter((n) => n.startsWith("slivingdoc-"))).toEqual([]);
  });
});

describe("a client that closed stdout only", () => {
  test("stdin left open: the answer that finds no reader ends the session as stdin's end would, exit 0", async () => {
    const env = envFor("stdout-gone");
    await seed(env, 2);
    const s = serve(env);
    await s.initialize();
    await s.closeOutput();
    s.callTool(1, "notes_pull", {});
    // Nothing closes stdin: the server ends of its own.
    expect(await s.exited).toBe(0);
    expect(s.records().filter((r) => r.msg === null)).toEqual([]);
    expect(messagesOf(s)).toContain("tool call completed");
    expect(messagesOf(s).at(-1)).toBe("server stopped");
    expect(readdirSync(env.TMPDIR).filter((n) => n.startsWith("slivingdoc-"))).toEqual([]);
  });
});

describe("the session directory", () => {
  const sessions = (env: ReturnType<typeof envFor>) => readdirSync(env.TMPDIR).filter((n) => n.startsWith("slivingdoc-"));
  const checkouts = (env: ReturnType<typeof envFor>) => {
    try {
      return readdirSync(join(env.SLIVINGDOC_PRIVATE_ROOT, "checkouts"));
    } catch {
      return [];
    }
  };

  test("never pulled: removed when the server stops", async () => {
    const env = envFor("untouched");
    const s = serve(env);
    await s.initialize();
    expect(sessions(env).length).toBe(1);
    s.endInput();
    expect(await s.exited).toBe(0);
    expect(sessions(env)).toEqual([]);
  });

  test("pulled from an empty store and left empty: removed, with its private state", async () => {
    const env = envFor("empty");
    const s = serve(env);
    await s.initialize();
    s.callTool(1, "notes_pull", {});
    expect((await s.answer(1)).result.isError ?? false).toBe(false);
    expect(checkouts(env).length).toBe(1);
    s.kill("SIGTERM");
    expect(await s.exited).toBe(0);
    expect(sessions(env)).toEqual([]);
    expect(checkouts(env)).toEqual([]);
  });

  test("every pulled file deleted: kept, and a commit from it publishes the deletions", async () => {
    const env = envFor("deleted");
    await seed(env, 2);
    const s = serve(env);
    await s.initialize();
    s.callTool(1, "notes_pull", {});
    const dir = (await s.answer(1)).result.structuredContent.path as string;
    for (const name of readdirSync(dir)) rmSync(join(dir, name));
    s.endInput();
    expect(await s.exited).toBe(0);
    expect(existsSync(dir)).toBe(true);
    expect(checkouts(env).length).toBe(1);
    // The deletions are still there to publish: another checkout then sees an empty notebook.
    cli(env, "commit", "-m", "delete all", dir);
    const other = join(root, "deleted-other");
    cli(env, "pull", other);
    expect(readdirSync(other)).toEqual([]);
  });

  /** A server that pulled a notebook of `count` files: its notebook directory. */
  async function pulled(s: RawMcp): Promise<string> {
    await s.initialize();
    s.callTool(1, "notes_pull", {});
    const answer = await s.answer(1);
    expect(answer.result.isError ?? false).toBe(false);
    return answer.result.structuredContent.path as string;
  }

  for (const end of ["stdin", "SIGTERM", "SIGINT", "SIGHUP"] as const) {
    test(`pulled files, nothing changed, then ${end === "stdin" ? "stdin's end" : end}: removed, with its private state`, async () => {
      const env = envFor(`unchanged-${end}`);
      await seed(env, 3);
      const s = serve(env);
      const dir = await pulled(s);
      expect(readdirSync(dir).sort()).toEqual(["note-0.md", "note-1.md", "note-2.md"]);
      if (end === "stdin") s.endInput();
      else s.kill(end);
      expect(await s.exited).toBe(0);
      expect(messagesOf(s).at(-1)).toBe("server stopped");
      expect(sessions(env)).toEqual([]);
      expect(checkouts(env)).toEqual([]);
    });
  }

  test("an edited file, a new one, or one the ignore rules leave out: kept as it is", async () => {
    const cases: Record<string, (dir: string) => void> = {
      edited: (dir) => writeFileSync(join(dir, "note-0.md"), "# note 0\n\nchanged\n"),
      added: (dir) => writeFileSync(join(dir, "new.md"), "new\n"),
      ignored: (dir) => writeFileSync(join(dir, ".DS_Store"), "\0\0"),
    };
    for (const [name, change] of Object.entries(cases)) {
      const env = envFor(`kept-${name}`);
      await seed(env, 1);
      const s = serve(env);
      const dir = await pulled(s);
      change(dir);
      const files = readdirSync(dir).sort();
      s.kill("SIGINT");
      expect(await s.exited).toBe(0);
      expect({ name, files: readdirSync(dir).sort(), checkouts: checkouts(env).length }).toEqual({ name, files, checkouts: 1 });
    }
  });

  test("a server killed (SIGKILL): its session is swept by the next server's start when nothing in it is unpublished, kept otherwise", async () => {
    const env = envFor("killed");
    await seed(env, 2);
    // A server still running keeps its session, whatever it holds.
    const alive = serve(env);
    const aliveDir = await pulled(alive);
    const clean = serve(env);
    const cleanDir = await pulled(clean);
    const edited = serve(env);
    const editedDir = await pulled(edited);
    writeFileSync(join(editedDir, "note-1.md"), "an unpublished edit\n");
    clean.kill("SIGKILL");
    edited.kill("SIGKILL");
    await Promise.all([clean.exited, edited.exited]);
    expect(sessions(env).length).toBe(3);
    const next = serve(env);
    await next.initialize();
    await next.logged("sessions of stopped servers swept");
    expect(next.records().find((r) => r.msg === "sessions of stopped servers swept")).toMatchObject({ removed: 1, kept: 1 });
    expect(existsSync(cleanDir)).toBe(false);
    expect(readFileSync(join(editedDir, "note-1.md"), "utf8")).toBe("an unpublished edit\n");
    expect(readdirSync(aliveDir).sort()).toEqual(["note-0.md", "note-1.md"]);
    // The edited one's state stays with it: a commit from it still publishes the edit.
    cli(env, "commit", "-m", "after the kill", editedDir);
    for (const s of [alive, next]) {
      s.endInput();
      expect(await s.exited).toBe(0);
    }
    expect(sessions(env).length).toBe(1);
  });
});
