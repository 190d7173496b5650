/**
 * A team's everyday edits over MCP, as hosts drive two agents: appends to
 * one log under `merge=union` and ticks on one board under `merge=lines`
 * land without a conflict, with the tool strings unchanged; and a notebook
 * exported with its `.gitattributes` merges the same way in C git.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { git } from "../support/cgit.ts";
import { BINARY, call, connect } from "../support/mcp.ts";

const root = mkdtempSync(join(tmpdir(), "slivingdoc-teams-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));

function envFor(name: string, store: string): Record<string, string> {
  const env = {
    PATH: process.env.PATH ?? "/usr/bin:/bin",
    HOME: join(root, name, "home"),
    TMPDIR: join(root, name, "tmp"),
    SLIVINGDOC_STORE: `sqlite:${store}`,
    SLIVINGDOC_PRIVATE_ROOT: join(root, name, "private"),
  };
  mkdirSync(env.TMPDIR, { recursive: true });
  return env;
}

const board = (ticked: number[]) =>
  Array.from({ length: 6 }, (_, i) => `- [${ticked.includes(i + 1) ? "x" : " "}] task ${i + 1}\n`).join("");

describe("two agents over MCP on one notebook with the recommended attributes", () => {
  test("both append to the log and tick neighbouring tasks: every commit lands, nothing is lost", async () => {
    const store = join(root, "store.db");
    const alice = await connect(envFor("alice", store));
    const bob = await connect(envFor("bob", store));
    try {
      const da = (await call(alice, "notes_pull")).data.path as string;
      writeFileSync(join(da, ".gitattributes"), "log.md merge=union\ntasks.md merge=lines\n");
      writeFileSync(join(da, "log.md"), "# log\n");
      writeFileSync(join(da, "tasks.md"), board([]));
      expect((await call(alice, "notes_commit", { message: "set up" })).isError).toBe(false);
      const db = (await call(bob, "notes_pull")).data.path as string;

      for (let round = 1; round <= 3; round++) {
        // Both start from the same accepted state, then both commit: the
        // second commit has to merge the first one's append and tick.
        expect((await call(alice, "notes_pull")).isError).toBe(false);
        expect((await call(bob, "notes_pull")).isError).toBe(false);
        writeFileSync(join(da, "log.md"), `${readFileSync(join(da, "log.md"), "utf8")}alice ${round}\n`);
        writeFileSync(join(db, "log.md"), `${readFileSync(join(db, "log.md"), "utf8")}bob ${round}\n`);
        const tick = (dir: string, task: number) =>
          writeFileSync(join(dir, "tasks.md"), readFileSync(join(dir, "tasks.md"), "utf8").replace(`- [ ] task ${task}\n`, `- [x] task ${task}\n`));
        tick(da, 2 * round - 1);
        tick(db, 2 * round);
        const a = await call(alice, "notes_commit", { message: `alice ${round}` });
        const b = await call(bob, "notes_commit", { message: `bob ${round}` });
        expect(a.isError).toBe(false);
        expect(b.isError).toBe(false);
        expect(b.data).toMatchObject({ code: "OK", generation: 1 + 2 * round });
      }
      expect((await call(alice, "notes_pull")).isError).toBe(false);
      const log = readFileSync(join(da, "log.md"), "utf8");
      // A union keeps the merging side's lines first, as `git merge-file --union` keeps ours.
      expect(log).toBe("# log\nbob 1\nalice 1\nbob 2\nalice 2\nbob 3\nalice 3\n");
      expect(readFileSync(join(da, "tasks.md"), "utf8")).toBe(board([1, 2, 3, 4, 5, 6]));
      expect(readFileSync(join(db, "log.md"), "utf8")).toBe(log);
    } finally {
      await alice.close();
      await bob.close();
    }
  }, 60_000);

  test("export keeps .gitattributes, so C git's own merge of two appends is a union too", async () => {
    const store = join(root, "export.db");
    const env = envFor("exporter", store);
    const session = await connect(env);
    let dir: string;
    try {
      dir = (await call(session, "notes_pull")).data.path as string;
      writeFileSync(join(dir, ".gitattributes"), "log.md merge=union\n");
      writeFileSync(join(dir, "log.md"), "# log\n");
      expect((await call(session, "notes_commit", { message: "log" })).isError).toBe(false);
    } finally {
      await session.close();
    }
    const out = join(root, "exported");
    const run = Bun.spawnSync([BINARY, "export", out], { env, stderr: "pipe" });
    expect(run.exitCode).toBe(0);
    const repo = join(root, "clone");
    expect(git(root, "clone", "-q", out, repo).code).toBe(0);
    const id = ["-c", "user.name=t", "-c", "user.email=t@example.invalid"];
    expect(readFileSync(join(repo, ".gitattributes"), "utf8")).toBe("log.md merge=union\n");
    git(repo, "checkout", "-q", "-b", "other");
    writeFileSync(join(repo, "log.md"), "# log\nother\n");
    expect(git(repo, ...id, "commit", "-qam", "other").code).toBe(0);
    git(repo, "checkout", "-q", "-");
    writeFileSync(join(repo, "log.md"), "# log\nmine\n");
    expect(git(repo, ...id, "commit", "-qam", "mine").code).toBe(0);
    expect(git(repo, ...id, "merge", "-q", "--no-edit", "other").code).toBe(0);
    expect(readFileSync(join(repo, "log.md"), "utf8")).toBe("# log\nmine\nother\n");
  }, 60_000);
});
