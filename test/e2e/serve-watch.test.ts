/**
 * `serve` watches its checkout (engine/checkout/watcher.ts) so a warm call
 * scans only what changed. Every edit made between calls is still
 * published — one written just before the call, a same-size rewrite, new
 * and renamed directories, one moved out of the checkout, a file a new
 * `.gitignore` hides — as another checkout, pulled by a separate process,
 * shows.
 */
import { afterAll, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, renameSync, rmSync, unlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { BINARY, call, connect, requireBinary } from "../support/mcp.ts";

const root = mkdtempSync(join(tmpdir(), "slivingdoc-serve-watch-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));
const env = {
  PATH: process.env.PATH ?? "/usr/bin:/bin",
  HOME: join(root, "home"),
  TMPDIR: tmpdir(),
  XDG_STATE_HOME: join(root, "state"),
  SLIVINGDOC_STORE: `sqlite:${join(root, "store.db")}`,
};

/** Every notebook file below `dir` with its text (slivingdoc's own mark left out). */
function tree(dir: string, rel = ""): Record<string, string> {
  const found: Record<string, string> = {};
  for (const entry of readdirSync(join(dir, rel), { withFileTypes: true })) {
    const path = rel + entry.name;
    if (rel === "" && entry.name.startsWith(".slivingdoc-")) continue;
    if (entry.isDirectory()) Object.assign(found, tree(dir, `${path}/`));
    else found[path] = readFileSync(join(dir, path), "utf8");
  }
  return found;
}

/** The notebook as the store holds it: pulled into a checkout of its own by a separate CLI process. */
async function published(): Promise<Record<string, string>> {
  const other = join(root, "other");
  const p = Bun.spawn([BINARY, "pull", other], { cwd: root, env, stdout: "pipe", stderr: "pipe" });
  const [stderr, code] = await Promise.all([new Response(p.stderr).text(), p.exited]);
  if (code !== 0) throw new Error(`pull exited ${code}: ${stderr}`);
  return tree(other);
}

const write = (dir: string, path: string, text: string) => {
  mkdirSync(join(dir, path, ".."), { recursive: true });
  writeFileSync(join(dir, path), text);
};

test("under serve, every edit made between calls is published, even one written just before the call", async () => {
  requireBinary();
  const dir = join(root, "served");
  const session = await connect(env, ["--workspace-root", dir]);
  try {
    await call(session, "notes_pull", {});
    const steps: Array<[string, () => void, Record<string, string>]> = [
      ["a first file", () => write(dir, "a.md", "one\n"), { "a.md": "one\n" }],
      ["a rewrite of the same size", () => write(dir, "a.md", "two\n"), { "a.md": "two\n" }],
      ["a new directory", () => (write(dir, "d/x.md", "x\n"), write(dir, "d/e/y.md", "y\n")), { "a.md": "two\n", "d/x.md": "x\n", "d/e/y.md": "y\n" }],
      ["an edit below it", () => write(dir, "d/e/y.md", "y2\n"), { "a.md": "two\n", "d/x.md": "x\n", "d/e/y.md": "y2\n" }],
      ["a directory renamed", () => renameSync(join(dir, "d"), join(dir, "f")), { "a.md": "two\n", "f/x.md": "x\n", "f/e/y.md": "y2\n" }],
      ["a file deleted, another added", () => (unlinkSync(join(dir, "a.md")), write(dir, "b.md", "b\n")), { "b.md": "b\n", "f/x.md": "x\n", "f/e/y.md": "y2\n" }],
      ["a directory moved out of the checkout", () => renameSync(join(dir, "f", "e"), join(root, "moved-out")), { "b.md": "b\n", "f/x.md": "x\n" }],
      ["a file a new .gitignore hides", () => (write(dir, ".gitignore", "*.log\n"), write(dir, "f/n.log", "log\n")), { ".gitignore": "*.log\n", "b.md": "b\n", "f/x.md": "x\n" }],
      ["an edit after the .gitignore", () => write(dir, "f/x.md", "x2\n"), { ".gitignore": "*.log\n", "b.md": "b\n", "f/x.md": "x2\n" }],
    ];
    for (const [what, change, expected] of steps) {
      change();
      const result = await call(session, "notes_commit", { message: what });
      expect(result.isError, `${what}: ${result.text}`).toBe(false);
      expect(await published(), what).toEqual(expected);
    }
  } finally {
    await session.close();
  }
}, 120_000);
