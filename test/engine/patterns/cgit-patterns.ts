/** C git's answers for the pattern tests: a scratch work tree, and `check-ignore` / `check-attr` over it. */
import { mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { isolatedGitEnv } from "../../support/seeded.ts";

/** A scratch repository, made once and given a new work tree for each case. */
export class ScratchRepo {
  readonly home = mkdtempSync(join(tmpdir(), "slivingdoc-patterns-"));
  readonly dir = join(this.home, "repo");

  constructor() {
    mkdirSync(this.dir);
    this.git(["init", "-q"], "");
  }

  /** The work tree holds exactly `files` (path → text). */
  reset(files: ReadonlyMap<string, string>): this {
    for (const name of readdirSync(this.dir)) if (name !== ".git") rmSync(join(this.dir, name), { recursive: true, force: true });
    for (const [path, text] of files) {
      mkdirSync(dirname(join(this.dir, path)), { recursive: true });
      writeFileSync(join(this.dir, path), text);
    }
    return this;
  }

  remove(): void {
    rmSync(this.home, { recursive: true, force: true });
  }

  private git(args: string[], stdin: string): string {
    const p = Bun.spawnSync(["git", ...args], { cwd: this.dir, env: isolatedGitEnv(this.home), stdin: Buffer.from(stdin), stdout: "pipe", stderr: "pipe" });
    // check-ignore answers 1 when nothing is ignored.
    if (p.exitCode !== 0 && !(args[0] === "check-ignore" && p.exitCode === 1)) throw new Error(`git ${args[0]} failed: ${p.stderr.toString()}`);
    return p.stdout.toString();
  }

  /** For each of `paths`, whether C git ignores it (a negative pattern's match is not ignored). */
  ignored(paths: readonly string[]): Map<string, boolean> {
    const fields = this.git(["check-ignore", "--no-index", "-v", "-n", "-z", "--stdin"], paths.map((p) => `${p}\0`).join("")).split("\0");
    const result = new Map<string, boolean>();
    for (let i = 0; i + 3 < fields.length; i += 4) {
      const [source, , pattern, path] = fields.slice(i, i + 4) as [string, string, string, string];
      result.set(path, source !== "" && !pattern.startsWith("!"));
    }
    return result;
  }

  /** For each of `paths`, C git's `merge` attribute as check-attr prints it: unspecified, set, unset or the value. */
  mergeAttr(paths: readonly string[]): Map<string, string> {
    const fields = this.git(["check-attr", "-z", "--stdin", "merge"], paths.map((p) => `${p}\0`).join("")).split("\0");
    const result = new Map<string, string>();
    for (let i = 0; i + 2 < fields.length; i += 3) result.set(fields[i]!, fields[i + 2]!);
    return result;
  }
}
