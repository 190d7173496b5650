/**
 * Everyday accidents, as a user makes them with the built binary: a
 * checkout removed and made again (`rm -rf`, a fresh container volume over
 * old private state), moved (`mv`), or swapped away and back; its private
 * state damaged; a checkout killed while it held its lock.
 */
import { afterAll, expect, test } from "bun:test";
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { read, write } from "../support/fixture.ts";

const root = mkdtempSync(join(tmpdir(), "slivingdoc-accidents-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));
const binary = join(import.meta.dir, "../../dist/slivingdoc");

/** A world of its own: one store file and one private root shared by every call. */
function world(name: string) {
  const base = join(root, name);
  mkdirSync(base, { recursive: true });
  const env = {
    ...(process.env as Record<string, string>),
    HOME: join(base, "home"),
    SLIVINGDOC_STORE: `sqlite:${join(base, "store.db")}`,
    SLIVINGDOC_PRIVATE_ROOT: join(base, "private"),
    S3_BUCKET: "",
  };
  const run = async (...args: string[]) => {
    const p = Bun.spawn([binary, ...args], { cwd: base, env, stdout: "pipe", stderr: "pipe" });
    const [stdout, stderr, code] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited]);
    return { stdout, stderr, code, json: stdout ? JSON.parse(stdout) : null };
  };
  return { dir: (n: string) => join(base, n), run, privateRoot: join(base, "private"), env };
}

test("rm -rf of a checkout, then pull: a full copy, and the next commit deletes nothing", async () => {
  const { dir, run } = world("rm-rf");
  const a = dir("rm1");
  expect((await run("pull", a)).code).toBe(0);
  write(a, "a.md", "one\n");
  write(a, "b.md", "two\n");
  expect((await run("commit", "-m", "init", a)).code).toBe(0);

  rmSync(a, { recursive: true, force: true });
  const pulled = await run("pull", "--json", a);
  expect(pulled.code).toBe(0);
  expect(pulled.json).toMatchObject({ generation: 1, filesChanged: 2 });
  expect([read(a, "a.md"), read(a, "b.md")]).toEqual(["one\n", "two\n"]);
  const synced = await run("commit", "-m", "just syncing", "--json", a);
  expect(synced.json).toMatchObject({ generation: 1, files: [] });

  // Removed and made again, empty, without a pull: a commit asks for one.
  rmSync(a, { recursive: true, force: true });
  mkdirSync(a);
  const refused = await run("commit", "-m", "from an empty directory", "--json", a);
  expect(refused.json).toMatchObject({ code: "INVALID_REQUEST", reason: "PULL_REQUIRED", action: "PULL" });
  expect(refused.json.message).toContain("removed or replaced");

  // The store was never touched: a fresh checkout has both files.
  const c = dir("c");
  expect((await run("pull", c)).code).toBe(0);
  expect([read(c, "a.md"), read(c, "b.md")]).toEqual(["one\n", "two\n"]);
});

test("deleting every file inside a checkout is still a deletion, and publishes as one", async () => {
  const { dir, run } = world("delete-inside");
  const a = dir("a");
  await run("pull", a);
  write(a, "a.md", "one\n");
  write(a, "sub/b.md", "two\n");
  await run("commit", "-m", "init", a);
  for (const name of readdirSync(a)) rmSync(join(a, name), { recursive: true });
  const committed = await run("commit", "-m", "clear out", "--json", a);
  expect(committed.json).toMatchObject({ generation: 2, filesChanged: 2, deletions: 2 });
  const c = dir("c");
  await run("pull", c);
  expect(readdirSync(c)).toEqual([]);
});

test("a directory put in place of a checkout, holding files of its own, is merged as a new checkout: nothing lost", async () => {
  const { dir, run } = world("replaced");
  const a = dir("a");
  await run("pull", a);
  write(a, "shared.md", "accepted\n");
  await run("commit", "-m", "init", a);
  rmSync(a, { recursive: true });
  // Say, a fresh volume with a file of its own, mounted where the checkout was.
  mkdirSync(a);
  write(a, "mine.md", "only here\n");
  const pulled = await run("pull", "--json", a);
  expect(pulled.code).toBe(0);
  expect([read(a, "shared.md"), read(a, "mine.md")]).toEqual(["accepted\n", "only here\n"]);
  const committed = await run("commit", "-m", "mine", "--json", a);
  expect(committed.json).toMatchObject({ generation: 2, files: [{ path: "mine.md", insertions: 1, deletions: 0 }] });
});

test("a checkout removed and made again with a file of its own, its state set aside by an earlier call: still a checkout's place, pulled without --adopt", async () => {
  const { dir, run } = world("replaced-set-aside");
  const a = dir("a");
  expect((await run("pull", a)).code).toBe(0);
  rmSync(a, { recursive: true });
  write(a, "mine.md", "only here\n");
  // This call sets the old state aside: the path has no state of its own after it.
  expect((await run("commit", "-m", "x", "--json", a)).json).toMatchObject({ reason: "PULL_REQUIRED" });
  expect((await run("pull", "--json", a)).code).toBe(0);
  expect(read(a, "mine.md")).toBe("only here\n");
});

/** A checkout at `dir` with gone.md and keep.md published, then gone.md deleted and keep.md appended to, unpublished. */
async function withUnpublishedEdits(run: (...args: string[]) => Promise<{ code: number }>, dir: string): Promise<void> {
  expect((await run("pull", dir)).code).toBe(0);
  write(dir, "gone.md", "to be deleted\n");
  write(dir, "keep.md", "one\n");
  expect((await run("commit", "-m", "init", dir)).code).toBe(0);
  rmSync(join(dir, "gone.md"));
  write(dir, "keep.md", "one\nappended\n");
}

const UNPUBLISHED = [
  { path: "gone.md", change: "deleted", insertions: 0, deletions: 1 },
  { path: "keep.md", change: "modified", insertions: 1, deletions: 0 },
];

test("a checkout moved with mv keeps every unpublished edit, its deletions included", async () => {
  const { dir, run } = world("mv");
  const nb = dir("nb");
  const nb2 = dir("nb2");
  await withUnpublishedEdits(run, nb);
  renameSync(nb, nb2);
  // status before any pull already knows the checkout at its new path.
  expect((await run("status", "--json", nb2)).json).toMatchObject({ generation: 1, files: UNPUBLISHED });
  const pulled = await run("pull", "--json", nb2);
  expect(pulled.json).toMatchObject({ generation: 1, files: [] });
  expect([read(nb2, "gone.md"), read(nb2, "keep.md")]).toEqual([null, "one\nappended\n"]);
  expect((await run("status", "--json", nb2)).json).toMatchObject({ files: UNPUBLISHED });
  const committed = await run("commit", "-m", "after the move", "--json", nb2);
  expect(committed.json).toMatchObject({ generation: 2, filesChanged: 2, insertions: 1, deletions: 1 });
  const other = dir("other");
  await run("pull", other);
  expect([read(other, "gone.md"), read(other, "keep.md")]).toEqual([null, "one\nappended\n"]);
});

test("moved, with a new directory made at the old path: each is its own checkout, and a commit from the moved one publishes its deletion", async () => {
  const { dir, run } = world("mv-reused");
  const nb = dir("nb");
  const nb2 = dir("nb2");
  await withUnpublishedEdits(run, nb);
  renameSync(nb, nb2);
  mkdirSync(nb);
  // Its first call is a commit: the state follows the directory to its new path.
  const committed = await run("commit", "-m", "after the move", "--json", nb2);
  expect(committed.json).toMatchObject({ generation: 2, filesChanged: 2, insertions: 1, deletions: 1 });
  // The new directory at the old path is a new checkout: it was never pulled.
  expect((await run("commit", "-m", "x", "--json", nb)).json).toMatchObject({ reason: "PULL_REQUIRED" });
  expect((await run("pull", "--json", nb)).code).toBe(0);
  expect([read(nb, "gone.md"), read(nb, "keep.md")]).toEqual([null, "one\nappended\n"]);
});

/**
 * A checkout at `nb` that pulled generation 1 (a.md, b.md, c.md, gone.md); then
 * another checkout published generation 2 (b.md and c.md changed); then, unpublished
 * and without a pull, nb appended to a.md and c.md and deleted gone.md.
 */
async function behindWithEdits(run: (...args: string[]) => Promise<{ code: number }>, nb: string, other: string): Promise<void> {
  expect((await run("pull", nb)).code).toBe(0);
  for (const name of ["a", "b", "c", "gone"]) write(nb, `${name}.md`, `${name}\n`);
  expect((await run("commit", "-m", "init", nb)).code).toBe(0);
  expect((await run("pull", other)).code).toBe(0);
  write(other, "b.md", "b\nfrom other\n");
  write(other, "c.md", "c\nfrom other\n");
  expect((await run("commit", "-m", "other", other)).code).toBe(0);
  write(nb, "a.md", "a\nmine\n");
  write(nb, "c.md", "c\nmine\n");
  rmSync(join(nb, "gone.md"));
}

/**
 * The pull of a directory holding behindWithEdits's files without their state: merged
 * against generation 1, which its files match best, so only c.md, which both sides
 * changed, conflicts; a.md keeps its edit, b.md takes the other's, gone.md comes back;
 * and once c.md is resolved, the commit publishes a.md and c.md, and no deletion.
 */
async function pullsAgainstRetained(run: (...args: string[]) => Promise<{ code: number; json: any }>, dir: string): Promise<void> {
  const pulled = await run("pull", "--json", dir);
  expect(pulled.json).toMatchObject({ code: "CONTENT_CONFLICT", reason: "MERGE_CONFLICT" });
  expect(pulled.json.files.map((f: { path: string }) => f.path)).toEqual(["c.md"]);
  expect([read(dir, "a.md"), read(dir, "b.md"), read(dir, "gone.md")]).toEqual(["a\nmine\n", "b\nfrom other\n", "gone\n"]);
  expect(read(dir, "c.md")).toContain("<<<<<<<");
  write(dir, "c.md", "c\nmine\nfrom other\n");
  const committed = await run("commit", "-m", "after the state was lost", "--json", dir);
  expect(committed.json).toMatchObject({ generation: 3, filesChanged: 2, deletions: 0 });
  expect(committed.json.files.map((f: { path: string }) => f.path)).toEqual(["a.md", "c.md"]);
}

test("a copy (cp -r) is a new checkout merged against the generation it was at: only what both sides changed conflicts; the original keeps its state", async () => {
  const { dir, run } = world("copy");
  const nb = dir("nb");
  const copy = dir("copy");
  await behindWithEdits(run, nb, dir("other"));
  cpSync(nb, copy, { recursive: true });
  await pullsAgainstRetained(run, copy);
  // The original still knows its own edits, its deletion included.
  expect((await run("status", "--json", nb)).json).toMatchObject({
    generation: 1,
    files: [
      { path: "a.md", change: "modified" },
      { path: "c.md", change: "modified" },
      { path: "gone.md", change: "deleted" },
    ],
  });
});

test("a checkout whose private state is gone (a lost volume) is merged against the retained generation its files match best", async () => {
  const { dir, run, privateRoot } = world("lost-state");
  const nb = dir("nb");
  await behindWithEdits(run, nb, dir("other"));
  rmSync(privateRoot, { recursive: true });
  expect((await run("commit", "-m", "x", "--json", nb)).json).toMatchObject({ reason: "PULL_REQUIRED" });
  await pullsAgainstRetained(run, nb);
});

test("a damaged state.json: the pull merges against the retained generation the files match best", async () => {
  const { dir, run, privateRoot } = world("damaged-retained");
  const nb = dir("nb");
  await behindWithEdits(run, nb, dir("other"));
  const nbState = readdirSync(join(privateRoot, "checkouts"))
    .map((id) => join(privateRoot, "checkouts", id))
    .find((s) => readFileSync(join(s, "state.json"), "utf8").includes(`"${nb}"`))!;
  writeFileSync(join(nbState, "state.json"), "{\"version\":");
  expect((await run("status", "--json", nb)).json).toMatchObject({ reason: "PULL_REQUIRED" });
  await pullsAgainstRetained(run, nb);
});

test("a volume swapped away and back (A, then B, then A at one path over the same private state): A's unpublished edits are all kept", async () => {
  const { dir, run } = world("swap");
  const v = dir("v");
  await withUnpublishedEdits(run, v); // volume A
  // Unmount A (here: move it out of the way) and mount an empty volume B at the same path.
  renameSync(v, dir("volume-a"));
  mkdirSync(v);
  const b = await run("pull", "--json", v);
  expect(b.json).toMatchObject({ generation: 1, filesChanged: 2 });
  write(v, "b.md", "only on B\n");
  // And back: B away, A at the path again.
  renameSync(v, dir("volume-b"));
  renameSync(dir("volume-a"), v);
  expect((await run("status", "--json", v)).json).toMatchObject({ generation: 1, files: UNPUBLISHED });
  const a = await run("pull", "--json", v);
  expect(a.json).toMatchObject({ generation: 1, files: [] });
  expect([read(v, "gone.md"), read(v, "keep.md")]).toEqual([null, "one\nappended\n"]);
  // B back once more: its own unpublished file is still its own.
  renameSync(v, dir("volume-a"));
  renameSync(dir("volume-b"), v);
  expect((await run("status", "--json", v)).json).toMatchObject({ files: [{ path: "b.md", change: "added" }] });
  // And A's commit, from A, publishes A's edits.
  renameSync(v, dir("volume-b"));
  renameSync(dir("volume-a"), v);
  const committed = await run("commit", "-m", "from A", "--json", v);
  expect(committed.json).toMatchObject({ generation: 2, filesChanged: 2, insertions: 1, deletions: 1 });
});

/** Ways a checkout's state.json (or journal) can be damaged; each gets the state of checkout `a`, and the private root. */
const DAMAGE: Array<[string, (stateDir: string, otherStateDir: string) => void]> = [
  ["a truncated state.json", (s) => writeFileSync(join(s, "state.json"), readFileSync(join(s, "state.json"), "utf8").slice(0, 40))],
  ["{} as state.json", (s) => writeFileSync(join(s, "state.json"), "{}")],
  ["another checkout's state.json", (s, other) => writeFileSync(join(s, "state.json"), readFileSync(join(other, "state.json")))],
  ["a damaged journal.json", (s) => writeFileSync(join(s, "journal.json"), '{"version":1,"target":')],
];

for (const [what, damage] of DAMAGE) {
  test(`${what}: commit and status ask for a pull, the pull rebuilds the state keeping every file`, async () => {
    const { dir, run, privateRoot } = world(`damaged-${DAMAGE.findIndex(([w]) => w === what)}`);
    const a = dir("a");
    const other = dir("other");
    expect((await run("pull", other)).code).toBe(0);
    const otherState = join(privateRoot, "checkouts", readdirSync(join(privateRoot, "checkouts"))[0]!);
    expect((await run("pull", a)).code).toBe(0);
    write(a, "one.md", "one\n");
    write(a, "two.md", "two\n");
    expect((await run("commit", "-m", "init", a)).code).toBe(0);
    // Unpublished: an appended line, a new file, a deletion.
    write(a, "one.md", "one\nunpublished\n");
    write(a, "mine.md", "mine\n");
    rmSync(join(a, "two.md"));
    const ids = readdirSync(join(privateRoot, "checkouts"));
    const stateDir = join(privateRoot, "checkouts", ids.find((id) => join(privateRoot, "checkouts", id) !== otherState)!);
    damage(stateDir, otherState);

    for (const op of [["commit", "-m", "m"], ["commit", "-m", "again"], ["status"]]) {
      const refused = await run(...op, "--json", a);
      expect(refused.code).toBe(3);
      expect(refused.json).toMatchObject({ code: "INVALID_REQUEST", reason: "PULL_REQUIRED", action: "PULL", retryable: false });
      expect(refused.json.message).toContain("damaged");
      // No library's text: not in the message, and no cause line on stderr.
      expect(`${refused.json.message}\n${refused.stderr}`).not.toMatch(/JSON|Zod|zod|Parse|expected|cause/);
    }
    const pulled = await run("pull", "--json", a);
    // No file here is exactly as any retained generation holds it, so there is no base to
    // merge against: a file that differs from the notebook holds both versions.
    expect(pulled.json).toMatchObject({ code: "CONTENT_CONFLICT", reason: "MERGE_CONFLICT", files: [{ path: "one.md" }] });
    expect(read(a, "one.md")).toContain("unpublished\n");
    expect(read(a, "mine.md")).toBe("mine\n");
    // A deletion cannot be kept without the state that knew the file: it comes back.
    expect(read(a, "two.md")).toBe("two\n");
    write(a, "one.md", "one\nunpublished\n");
    const committed = await run("commit", "-m", "after the repair", "--json", a);
    expect(committed.json).toMatchObject({ generation: 2, filesChanged: 2 });
  });
}

test("the private state of a removed checkout is set aside by the next call, not checked by every call forever; at most 16 are kept", async () => {
  const { dir, run, privateRoot } = world("prune");
  const names = Array.from({ length: 18 }, (_, i) => `t${i}`);
  for (const n of names) expect((await run("pull", dir(n))).code).toBe(0);
  for (const n of names) rmSync(dir(n), { recursive: true });
  expect(readdirSync(join(privateRoot, "checkouts"))).toHaveLength(18);
  expect((await run("pull", dir("kept"))).code).toBe(0);
  expect(readdirSync(join(privateRoot, "checkouts"))).toHaveLength(1);
  expect(readdirSync(join(privateRoot, "set-aside"))).toHaveLength(16);
  expect(existsSync(dir("kept"))).toBe(true);
});

test("a commit of 200 files killed at instants across its run never wedges the checkout", async () => {
  const { dir, run, privateRoot } = world("wedge");
  const a = dir("a");
  await run("pull", a);
  const env = {
    ...(process.env as Record<string, string>),
    SLIVINGDOC_STORE: `sqlite:${join(root, "wedge", "store.db")}`,
    SLIVINGDOC_PRIVATE_ROOT: privateRoot,
    S3_BUCKET: "",
  };
  for (let i = 0; i < 20; i++) {
    for (let f = 0; f < 200; f++) writeFileSync(join(a, `f${f}.md`), `file ${f}, round ${i}\n`);
    const p = Bun.spawn([binary, "commit", "-m", `round ${i}`, a], { env, stdout: "ignore", stderr: "ignore" });
    // Kill at a spread of instants: from before the lock is taken to after the publication.
    const started = Date.now();
    await new Promise<void>((resolve) => {
      const wait = () => (Date.now() - started >= (i * 7) % 120 || p.exitCode !== null ? resolve() : setTimeout(wait, 1));
      wait();
    });
    p.kill("SIGKILL");
    await p.exited;
    const next = await run("pull", "--json", a);
    expect(next.json?.reason).not.toBe("LOCAL_STATE");
    expect(next.code).toBe(0);
  }
});

// Wedged locks left by older versions: an empty lock file once it is a moment old.
test("an empty lock file does not wedge the checkout", async () => {
  const { dir, run, privateRoot } = world("empty-lock");
  const a = dir("a");
  await run("pull", a);
  const [id] = readdirSync(join(privateRoot, "checkouts"));
  const lock = join(privateRoot, "checkouts", id!, "lock");
  writeFileSync(lock, "");
  const { utimesSync } = await import("node:fs");
  utimesSync(lock, Date.now() / 1000 - 10, Date.now() / 1000 - 10);
  const pulled = await run("pull", "--json", a);
  expect([pulled.code, pulled.json.generation]).toEqual([0, 0]);
  expect(existsSync(lock)).toBe(false);
});

/** A directory that was never a checkout, holding what a home directory does: 3 files, a credentials file among them. */
function foreignHome(home: string): string[] {
  write(home, ".aws/credentials", "[default]\naws_access_key_id = AKIAFAKEFAKEFAKEFAKE\naws_secret_access_key = fake/secret/for/the/test\n");
  write(home, ".bashrc", "export PATH=$HOME/bin:$PATH\n");
  write(home, "todo.txt", "buy milk\n");
  return readdirSync(home, { recursive: true }).map(String).sort();
}

/** `serve` with these arguments and stdin closed at once: its exit code and stderr. */
async function serveOnce(env: Record<string, string>, cwd: string, ...args: string[]): Promise<{ code: number; stderr: string }> {
  const p = Bun.spawn([binary, "serve", ...args], { cwd, env, stdin: "pipe", stdout: "pipe", stderr: "pipe" });
  p.stdin.end();
  const [stderr, code] = await Promise.all([new Response(p.stderr).text(), p.exited]);
  return { code, stderr };
}

test("a first pull into a directory of files that are nothing of the notebook's (a home directory) is refused unless --adopt; nothing is published", async () => {
  const { dir, run, env } = world("foreign");
  const nb = dir("nb");
  expect((await run("pull", nb)).code).toBe(0);
  write(nb, "notes.md", "shared\n");
  expect((await run("commit", "-m", "init", nb)).code).toBe(0);
  const home = dir("home-of-someone");
  foreignHome(home);
  // A file no notebook may hold is counted, and does not turn the refusal into one of its own.
  write(home, "photo.jpg", new Uint8Array([0xff, 0xd8, 0, 0, 0xff, 0xd9]));
  const before = readdirSync(home, { recursive: true }).map(String).sort();

  const refused = await run("pull", "--json", home);
  expect(refused.code).toBe(2);
  expect(refused.stdout).toBe("");
  expect(refused.stderr).toContain("argument refusal");
  expect(refused.stderr).toContain(`pull PATH "${home}" holds 4 files and was never a checkout`);
  expect(refused.stderr).toContain("--adopt");
  // Nothing written into it, and nothing it holds can be published.
  expect(readdirSync(home, { recursive: true }).map(String).sort()).toEqual(before);
  expect((await run("commit", "-m", "oops", "--json", home)).json).toMatchObject({ reason: "PULL_REQUIRED" });
  expect((await run("generation", "--json")).json).toEqual({ generation: 1 });

  // serve over it is refused at start the same way, unless --adopt.
  const served = await serveOnce(env, dir(""), "--workspace-root", home);
  expect(served.code).toBe(2);
  expect(served.stderr).toContain("invalid configuration");
  expect(served.stderr).toContain(`--workspace-root "${home}" holds 4 files and was never a checkout`);
  expect((await serveOnce(env, dir(""), "--adopt", "--workspace-root", home)).code).toBe(0);
  // serve's own session directory is unaffected, and so is a root that is a checkout.
  expect((await serveOnce(env, dir(""))).code).toBe(0);
  expect((await serveOnce(env, dir(""), "--workspace-root", nb)).code).toBe(0);
  // A root holding an agent's checkout (with an unpublished file) is theirs: it can never be pulled itself.
  const agent = join(dir("ws"), "agent1");
  expect((await run("pull", agent)).code).toBe(0);
  write(agent, "draft.md", "unpublished\n");
  expect((await serveOnce(env, dir(""), "--workspace-root", dir("ws"))).code).toBe(0);

  // --adopt: these files are mine to publish (the ones a notebook can hold).
  rmSync(join(home, "photo.jpg"));
  const adopted = await run("pull", "--adopt", "--json", home);
  expect(adopted.code).toBe(0);
  expect(read(home, "notes.md")).toBe("shared\n");
  expect((await run("status", "--json", home)).json.files.map((f: { path: string }) => f.path)).toEqual([".aws/credentials", ".bashrc", "todo.txt"]);
});

test("a first pull into a directory of files while the store holds no notebook yet is refused too; --adopt begins the notebook with them", async () => {
  const { dir, run } = world("foreign-empty-store");
  const seed = dir("seed");
  foreignHome(seed);
  const refused = await run("pull", seed);
  expect(refused.code).toBe(2);
  expect(refused.stderr).toContain("holds 3 files and was never a checkout, and the store holds no notebook yet");
  expect((await run("generation", "--json")).json).toEqual({ generation: 0 });
  expect((await run("pull", "--adopt", seed)).code).toBe(0);
  expect((await run("commit", "-m", "seed", "--json", seed)).json).toMatchObject({ generation: 1, filesChanged: 3 });
  // Pulled again after its state is lost, it is a former checkout: no --adopt needed.
  const copy = dir("copy");
  cpSync(seed, copy, { recursive: true });
  expect((await run("pull", "--json", copy)).json).toMatchObject({ generation: 1, files: [] });
});
