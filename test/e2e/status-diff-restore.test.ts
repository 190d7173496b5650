/**
 * `slivingdoc status`, `diff` and `restore` through the binary, the steps
 * of undoing a mistake (docs/history.md): what a commit would publish, C
 * git's own diff of the same files as the judge of the patch, the behind
 * count and its absence when the store is out of reach, nothing written by
 * the readers, and restore's refusals.
 */
import { afterAll, expect, test } from "bun:test";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { EXIT_CODES } from "../../src/contract/tokens.ts";
import { checkoutId } from "../../src/engine/checkout/registry.ts";
import { isolatedGitEnv } from "../support/seeded.ts";
import { BINARY, requireBinary } from "../support/mcp.ts";

const root = mkdtempSync(join(tmpdir(), "slivingdoc-status-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));
const env = { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: join(root, "home"), XDG_STATE_HOME: join(root, "state"), TMPDIR: tmpdir() };

let n = 0;
/** A fresh store for one test. */
function freshStore(): string[] {
  return ["--store", `sqlite:${join(root, `store-${++n}.db`)}`];
}

async function run(...args: string[]) {
  const p = Bun.spawn([BINARY, ...args], { cwd: root, env, stdout: "pipe", stderr: "pipe" });
  const [stdout, stderr, code] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited]);
  return { stdout, stderr, code };
}

async function ok(...args: string[]) {
  const r = await run(...args);
  if (r.code !== 0) throw new Error(`${args.join(" ")}: ${r.code}\n${r.stderr}`);
  return r;
}

function write(dir: string, files: Record<string, string | null>): void {
  for (const [path, text] of Object.entries(files)) {
    const file = join(dir, path);
    if (text === null) rmSync(file, { force: true });
    else {
      mkdirSync(dirname(file), { recursive: true });
      writeFileSync(file, text);
    }
  }
}

/** Every file under `dir` with its modification time: what "writes nothing" compares. */
function snapshot(dir: string): Record<string, string> {
  const out: Record<string, string> = {};
  const walk = (d: string) => {
    for (const e of readdirSync(d, { withFileTypes: true })) {
      const p = join(d, e.name);
      if (e.isDirectory()) walk(p);
      else out[p] = `${statSync(p).mtimeMs}:${readFileSync(p).toString("base64")}`;
    }
  };
  if (existsSync(dir)) walk(dir);
  return out;
}

const BASELINE: Record<string, string> = {
  "plan.md": "goal: ship\nstatus: draft\nowner: a\n",
  "docs/guide.md": Array.from({ length: 30 }, (_, i) => `line ${i + 1}\n`).join(""),
  "docs/old.md": "to be deleted\nsecond\n",
  "code.txt": "int main()\n{\n    if (x) {\n        return 1;\n    }\n\n    return 0;\n}\n",
  "no newline.md": "a\nb",
  "crlf.md": "one\r\ntwo\r\n",
  "naïve.md": "café\n",
  "empty-gone.md": "",
  "old space.md": "gone\n",
};

const LOCAL: Record<string, string | null> = {
  "plan.md": "goal: ship\nstatus: review\nowner: a\nnew: line\n",
  "docs/guide.md": Array.from({ length: 30 }, (_, i) => (i === 3 || i === 25 ? `changed ${i}\n` : `line ${i + 1}\n`)).join(""),
  "docs/old.md": null,
  "code.txt": "int main()\n{\n    if (x) {\n        return 1;\n    }\n\n    if (y) {\n        return 2;\n    }\n\n    return 0;\n}\n",
  "no newline.md": "a\nc",
  "crlf.md": "one\r\n2\r\n",
  "naïve.md": "café crème\n",
  "empty-gone.md": null,
  "new/empty.md": "",
  "new/added.md": "fresh\nfile",
  // A name with a space: git ends its ---/+++ lines with a tab, but not /dev/null's.
  "new/with space.md": "x\n",
  "old space.md": null,
};

test("diff prints what C git prints for the same change, and --stat too", async () => {
  requireBinary();
  const store = freshStore();
  const nb = join(root, "cmp");
  await ok("pull", ...store, nb);
  write(nb, BASELINE);
  await ok("commit", "-m", "baseline", ...store, nb);
  write(nb, LOCAL);

  // C git: the baseline committed, the same edits staged.
  const repo = join(root, "cmp-git");
  mkdirSync(repo);
  // The machine's git configuration shut out (diff.algorithm, diff.noprefix, …).
  const git = (cwd: string, ...args: string[]) => ({ out: Bun.spawnSync(["git", ...args], { cwd, env: isolatedGitEnv(root), stdout: "pipe" }).stdout.toString() });
  git(repo, "init", "-q");
  write(repo, BASELINE);
  git(repo, "add", "-A");
  git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "baseline");
  write(repo, LOCAL);
  git(repo, "add", "-A");
  const cgit = (...args: string[]) => git(repo, "-c", "core.quotePath=false", "diff", "--cached", "--no-renames", ...args).out;

  const diff = await ok("diff", ...store, nb);
  expect(diff.stdout).toBe(cgit());
  expect(diff.stderr).toBe("");
  const stat = await ok("diff", "--stat", ...store, nb);
  expect(stat.stdout).toBe(cgit("--stat"));

  const json = JSON.parse((await ok("diff", "--json", ...store, nb)).stdout);
  expect(json.files.map((f: { path: string; change: string }) => `${f.change} ${f.path}`)).toEqual([
    "modified code.txt",
    "modified crlf.md",
    "modified docs/guide.md",
    "deleted docs/old.md",
    "deleted empty-gone.md",
    "modified naïve.md",
    "added new/added.md",
    "added new/empty.md",
    "added new/with space.md",
    "modified no newline.md",
    "deleted old space.md",
    "modified plan.md",
  ]);
  // The hunks, without the index lines: no result carries an object id.
  expect(JSON.stringify(json)).not.toMatch(/[0-9a-f]{7}\.\.[0-9a-f]{7}/);
  expect(json.files.find((f: { path: string }) => f.path === "plan.md").hunks).toBe(
    "@@ -1,3 +1,4 @@\n goal: ship\n-status: draft\n+status: review\n owner: a\n+new: line\n",
  );
});

test("status lists what a commit would publish, markers, read-only changes and how far behind; status and diff write nothing", async () => {
  requireBinary();
  const store = freshStore();
  const a = join(root, "st-a");
  const b = join(root, "st-b");
  await ok("pull", ...store, a);
  write(a, { "keep.md": "k\n", "ro/rules.md": "rule\n", "gone.md": "g\n" });
  await ok("commit", "-m", "one", ...store, a);
  await ok("pull", ...store, b);
  write(b, { "keep.md": "k\nfrom b\n" });
  await ok("commit", "-m", "two", ...store, b);
  write(b, { "keep.md": "k\nfrom b\nagain\n" });
  await ok("commit", "-m", "three", ...store, b);

  write(a, {
    "gone.md": null,
    "new.md": "<<<<<<< local\nmine\n=======\ntheirs\n>>>>>>> accepted\n",
    "ro/rules.md": "rule changed\n",
  });
  const before = { ...snapshot(a), ...snapshot(join(root, "state")) };
  const status = await ok("status", "--json", "--read-only-paths", "ro", ...store, a);
  expect(JSON.parse(status.stdout)).toEqual({
    path: a,
    generation: 1,
    accepted: 3,
    behind: 2,
    files: [
      { path: "gone.md", change: "deleted", insertions: 0, deletions: 1 },
      { path: "new.md", change: "added", insertions: 5, deletions: 0 },
      { path: "ro/rules.md", change: "modified", insertions: 1, deletions: 1 },
    ],
    unresolved: [{ path: "new.md", ranges: [{ start: 1, end: 5 }] }],
    readOnlyChanges: ["ro/rules.md"],
    ignored: [],
    interrupted: false,
  });
  // --json is the object alone; the answer in words goes to stdout without it.
  expect(status.stderr).toBe("");
  const words = await ok("status", "--read-only-paths", "ro", ...store, a);
  expect(words.stderr).toBe("");
  expect(words.stdout).toContain("at generation 1, 2 generations behind the accepted 3");
  expect(words.stdout).toContain("  deleted  gone.md | +0 -1");
  expect(words.stdout).toContain("  new.md · lines 1-5");
  await ok("diff", ...store, a);
  await ok("diff", "--stat", ...store, a);
  // Neither the checkout nor the private state changed (no baseline, stat cache, blob or lock left).
  expect({ ...snapshot(a), ...snapshot(join(root, "state")) }).toEqual(before);

  const clean = await ok("status", ...store, b);
  expect(clean.stdout).toBe(`status of ${b}: at generation 3, the accepted one\nnothing to publish: the files agree with the baseline\n`);
  const none = await ok("diff", ...store, b);
  expect(none.stdout).toBe("");
});

test("offline: status and diff still answer, without the behind count, and say so", async () => {
  requireBinary();
  const store = freshStore();
  const file = store[1]!.slice("sqlite:".length);
  const nb = join(root, "offline");
  await ok("pull", ...store, nb);
  write(nb, { "a.md": "a\n" });
  await ok("commit", "-m", "one", ...store, nb);
  write(nb, { "a.md": "a\nb\n" });
  renameSync(file, `${file}.away`);
  const status = await ok("status", "--json", ...store, nb);
  const result = JSON.parse(status.stdout);
  expect([result.behind, result.accepted, result.behindUnknown]).toEqual([null, null, "the store could not be reached"]);
  expect(result.files).toEqual([{ path: "a.md", change: "modified", insertions: 1, deletions: 0 }]);
  expect((await ok("status", ...store, nb)).stdout).toContain("behind: unknown (the store could not be reached)");
  const diff = await ok("diff", ...store, nb);
  expect(diff.stdout).toContain("+b\n");
  // Reading did not make a new, empty store in its place.
  expect(existsSync(file)).toBe(false);
  renameSync(`${file}.away`, file);
});

test("restore brings a deleted directory back as local edits, refuses to overwrite unpublished edits unless --force, and the commit publishes it", async () => {
  requireBinary();
  const store = freshStore();
  const nb = join(root, "restore");
  await ok("pull", ...store, nb);
  write(nb, { "docs/a.md": "a\n", "docs/deep/b.md": "b\n", "plan.md": "p\n" });
  await ok("commit", "-m", "docs", ...store, nb);
  rmSync(join(nb, "docs"), { recursive: true });
  await ok("commit", "-m", "agent wipes docs", ...store, nb);

  const restored = await ok("restore", "--from", "1", "--dir", nb, ...store, "docs/");
  expect(restored.stdout).toContain("restored 2 files from generation 1");
  expect(readFileSync(join(nb, "docs/deep/b.md"), "utf8")).toBe("b\n");
  // Local edits: the baseline did not move, and nothing was published.
  const status = JSON.parse((await ok("status", "--json", ...store, nb)).stdout);
  expect([status.generation, status.behind, status.files.map((f: { path: string }) => f.path)]).toEqual([2, 0, ["docs/a.md", "docs/deep/b.md"]]);
  expect((await ok("generation", ...store)).stdout).toBe("generation 2\n");

  // An unpublished edit is named, and nothing is written.
  write(nb, { "plan.md": "p\nmine\n" });
  const refused = await run("restore", "--from", "1", "--dir", nb, "--json", ...store);
  expect(refused.code).toBe(EXIT_CODES.INVALID_REQUEST);
  const envelope = JSON.parse(refused.stdout);
  expect([envelope.code, envelope.reason, envelope.action]).toEqual(["INVALID_REQUEST", "MALFORMED_INPUT", "FIX_INPUT"]);
  expect(envelope.message).toContain("plan.md");
  expect(envelope.message).toContain("--force");
  expect(readFileSync(join(nb, "plan.md"), "utf8")).toBe("p\nmine\n");
  await ok("restore", "--from", "1", "--dir", nb, "--force", ...store, "plan.md");
  expect(readFileSync(join(nb, "plan.md"), "utf8")).toBe("p\n");

  await ok("commit", "-m", "restore docs", ...store, nb);
  const other = join(root, "restore-other");
  await ok("pull", ...store, other);
  expect(readFileSync(join(other, "docs/a.md"), "utf8")).toBe("a\n");
  expect((await ok("generation", ...store)).stdout).toBe("generation 3\n");
});

test("restore refuses generations it cannot have, paths it cannot mean, read-only paths, and unknown flags", async () => {
  requireBinary();
  const store = freshStore();
  const nb = join(root, "restore-refusals");
  await ok("pull", ...store, nb);
  write(nb, { "ro/a.md": "a\n", "b.md": "b\n" });
  await ok("commit", "-m", "one", ...store, nb);
  write(nb, { "ro/a.md": "a2\n" });
  await ok("commit", "-m", "two", ...store, nb);

  const future = JSON.parse((await run("restore", "--from", "9", "--dir", nb, "--json", ...store)).stdout);
  expect([future.reason, future.message]).toEqual(["MALFORMED_INPUT", "Generation 9 does not exist yet; the newest is 2."]);
  // From the directory above the checkout, without --dir: the notebook is the current directory, and the answer says so.
  const above = JSON.parse((await run("restore", "--from", "1", "--json", ...store, "restore-refusals")).stdout);
  expect(above.reason).toBe("PATH_OUTSIDE_ROOT");
  expect(above.message).toEndWith("restore writes into the current directory; name the checkout with --dir, and files in it as PATH.");
  const outside = await run("restore", "--from", "1", "--dir", nb, ...store, "../escape");
  expect(outside.code).toBe(EXIT_CODES.INVALID_REQUEST);
  const nothing = await run("restore", "--from", "1", "--dir", nb, ...store, "nowhere.md");
  expect(nothing.stderr).toContain('"nowhere.md" names no file in generation 1 nor in the checkout');
  const ro = JSON.parse((await run("restore", "--from", "1", "--dir", nb, "--json", "--read-only-paths", "ro", ...store, "ro")).stdout);
  expect([ro.reason, ro.files]).toEqual(["READ_ONLY_PATH", [{ path: "ro/a.md", reason: "READ_ONLY", ranges: [] }]]);
  expect(readFileSync(join(nb, "ro/a.md"), "utf8")).toBe("a2\n");
  const whole = await ok("restore", "--from", "1", "--dir", nb, "--read-only-paths", "ro", ...store);
  expect(whole.stdout).toContain("left as they are (paths this process may not change): ro/a.md");

  for (const args of [["--from", "0"], ["--from", "x"], [], ["--from", "1", "--bogus"]]) {
    const r = await run("restore", ...args, "--dir", nb, ...store);
    expect(r.code).toBe(EXIT_CODES.STARTUP);
  }
  expect((await run("status", "--bogus", nb)).code).toBe(EXIT_CODES.STARTUP);
  expect((await run("diff", nb, "other")).code).toBe(EXIT_CODES.STARTUP);
  const never = JSON.parse((await run("status", "--json", ...store, join(root, "never-pulled"))).stdout);
  expect([never.code, never.reason]).toEqual(["INVALID_REQUEST", "PULL_REQUIRED"]);
});

test("a generation compacted away is refused with the oldest retained one", async () => {
  requireBinary();
  // Only as long as the store keeps history by count (storage-protocol.md): 40 publications pass 32.
  const store = freshStore();
  const nb = join(root, "old");
  await ok("pull", ...store, nb);
  for (let i = 1; i <= 40; i++) {
    write(nb, { "a.md": `${i}\n` });
    await ok("commit", "-m", `c${i}`, ...store, nb);
  }
  const r = await run("restore", "--from", "1", "--dir", nb, "--json", ...store);
  if (r.code === 0) {
    console.warn("the store kept generation 1: no refusal to check");
    return;
  }
  const envelope = JSON.parse(r.stdout);
  expect([envelope.code, envelope.reason, envelope.action]).toEqual(["INVALID_REQUEST", "MALFORMED_INPUT", "FIX_INPUT"]);
  expect(envelope.message).toMatch(/^Generation 1 is older than the retained history; the oldest retained generation is \d+\.$/);
  const oldest = Number(/is (\d+)\.$/.exec(envelope.message)![1]);
  expect(oldest).toBeGreaterThan(1);
  await ok("restore", "--from", String(oldest), "--dir", nb, ...store);
  expect(readFileSync(join(nb, "a.md"), "utf8")).toBe(`${oldest}\n`);
}, 120_000);

test("an interrupted pull or commit is reported, not repaired: the journal stays for the next pull", async () => {
  requireBinary();
  const store = freshStore();
  const nb = join(root, "interrupted");
  await ok("pull", ...store, nb);
  write(nb, { "a.md": "a\n" });
  await ok("commit", "-m", "one", ...store, nb);
  const stateDir = join(root, "state", "slivingdoc", "checkouts", checkoutId(`sqlite:${store[1]!.slice("sqlite:".length)}`, nb));
  const journal = join(stateDir, "journal.json");
  writeFileSync(journal, `${JSON.stringify({ version: 1, target: { generation: 9, head: null, tree: null }, writes: [] })}\n`);
  const status = await ok("status", "--json", ...store, nb);
  expect(JSON.parse(status.stdout).interrupted).toBe(true);
  expect((await ok("status", ...store, nb)).stdout).toContain("an interrupted pull or commit is not yet repaired");
  expect(existsSync(journal)).toBe(true);
  await ok("pull", ...store, nb);
  expect(existsSync(journal)).toBe(false);
  expect(JSON.parse((await ok("status", "--json", ...store, nb)).stdout).interrupted).toBe(false);
});

test("editor and OS files and .gitignore'd ones: pull and commit OK through the binary, never published, listed by status", async () => {
  requireBinary();
  const store = freshStore();
  const a = join(root, "ig-a");
  const b = join(root, "ig-b");
  await ok("pull", ...store, a);
  write(a, { "notes.md": "n\n", ".gitignore": "scratch/\n" });
  await ok("commit", "-m", "seed", ...store, a);
  const binary = String.fromCharCode(0, 0xff, 0xfe, 7);
  mkdirSync(join(b, "scratch"), { recursive: true });
  writeFileSync(join(b, ".notes.md.swp"), Buffer.from(binary, "latin1"));
  writeFileSync(join(b, ".DS_Store"), Buffer.from(binary, "latin1"));
  writeFileSync(join(b, "scratch", "draft.md"), "not for the team\n");
  // b was never a checkout and its draft is in no generation: the files are the agent's own,
  // kept here, and the notebook's .gitignore (not on disk before this pull) keeps the draft unpublished.
  await ok("pull", "--adopt", ...store, b);
  write(b, { "notes.md": "n\nfrom b\n" });
  const committed = JSON.parse((await ok("commit", "--json", "-m", "b", ...store, b)).stdout);
  expect(committed.files.map((f: { path: string }) => f.path)).toEqual(["notes.md"]);
  expect(readFileSync(join(b, ".DS_Store")).toString("latin1")).toBe(binary);

  expect(committed).not.toHaveProperty("ignored");
  const pulled = await ok("pull", ...store, b);
  expect(pulled.stderr).toEndWith("ignored, not published: 3 entries (.gitignore or the built-in list; slivingdoc status lists them)\n");
  const status = await ok("status", "--json", ...store, b);
  expect(JSON.parse(status.stdout).ignored).toEqual([".DS_Store", ".notes.md.swp", "scratch/"]);
  const human = await ok("status", ...store, b);
  expect(human.stdout).toContain("ignored, never published (.gitignore or the built-in list): 3 entries\n  .DS_Store\n  .notes.md.swp\n  scratch/\n");
  const c = join(root, "ig-c");
  await ok("pull", ...store, c);
  expect(readdirSync(c).sort()).toEqual([".gitignore", "notes.md"]);
});
