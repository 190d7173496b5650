/**
 * The GitHub repository is one setting (package.json `repository`, set with
 * build/repository.mjs): every place that names it agrees, and setting
 * another name rewrites them all.
 */
import { expect, test } from "bun:test";
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { NAMING_FILES, projectRepository, setRepository } from "../../build/repository.mjs";

const root = join(import.meta.dir, "../..");

/** Every OWNER/NAME of a GitHub URL in a text, except links to other projects' issues (docs/s3.md has none in NAMING_FILES). */
function mentions(text: string): string[] {
  return [...text.matchAll(/github\.com[/:]([\w-]+\/[\w.-]*?[\w-])(?:\.git)?(?=[/#)\s`".,]|$)/g)].map((m) => m[1]!);
}

test("package.json names the repository, and every doc that names it says the same", () => {
  const repo = projectRepository(root);
  expect(repo).toMatch(/^[\w.-]+\/[\w.-]+$/);
  for (const file of NAMING_FILES) {
    const found = mentions(readFileSync(join(root, file), "utf8"));
    expect({ file, some: found.length > 0 }).toEqual({ file, some: true });
    expect({ file, others: found.filter((m) => m !== repo) }).toEqual({ file, others: [] });
  }
});

test("setting another repository rewrites package.json and every doc, and nothing of the old name stays", () => {
  const copy = mkdtempSync(join(tmpdir(), "slivingdoc-repo-"));
  try {
    for (const file of ["package.json", ...NAMING_FILES]) {
      mkdirSync(dirname(join(copy, file)), { recursive: true });
      cpSync(join(root, file), join(copy, file));
    }
    const old = projectRepository(root);
    expect(setRepository(copy, "acme-labs/notes")).toBe(old);
    expect(projectRepository(copy)).toBe("acme-labs/notes");
    const pkg = JSON.parse(readFileSync(join(copy, "package.json"), "utf8"));
    expect(pkg.repository).toEqual({ type: "git", url: "git+https://github.com/acme-labs/notes.git" });
    for (const file of NAMING_FILES) {
      const text = readFileSync(join(copy, file), "utf8");
      expect(text).not.toContain(old);
      expect(text).toContain("https://github.com/acme-labs/notes/releases/");
    }
    expect(() => setRepository(copy, "not a name")).toThrow("OWNER/NAME");
  } finally {
    rmSync(copy, { recursive: true, force: true });
  }
});
