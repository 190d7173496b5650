// The GitHub repository this project is published from: one setting, the
// `repository` of package.json. Everything else derives from it — the
// release build (download URLs and provenance in the npm packages, so the
// launcher's fallback download), the release workflow (which refuses to
// publish from another repository), the npm package's README (filled in by
// the release build), and the docs' download commands, which this script
// rewrites:
//
//   node build/repository.mjs                 # print the repository (OWNER/NAME)
//   node build/repository.mjs OWNER/NAME      # publish under OWNER/NAME: package.json and the docs
//
// test/contract/repository.test.ts fails when a place disagrees with the setting.
// Plain Node, no dependencies.
import { readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

/** The files that name the repository in words or commands, relative to the project root. */
export const NAMING_FILES = ["README.md", "docs/install.md"];

const NAME = /^[A-Za-z0-9][A-Za-z0-9-]{0,38}\/[A-Za-z0-9._-]{1,100}$/;

/** OWNER/NAME from a package.json `repository` (string or { url }), or null. */
export function repositoryOf(pkg) {
  const url = typeof pkg.repository === "string" ? pkg.repository : pkg.repository?.url;
  const m = /github\.com[/:]([^/]+\/[^/]+?)(?:\.git)?\/?$/.exec(url ?? "");
  return m ? m[1] : null;
}

/** The repository of the project at `root`; throws when package.json names none. */
export function projectRepository(root) {
  const pkg = JSON.parse(readFileSync(join(root, "package.json"), "utf8"));
  const repo = repositoryOf(pkg);
  if (!repo) throw new Error('package.json has no GitHub "repository"; set one with `node build/repository.mjs OWNER/NAME`');
  return repo;
}

/** Set the repository of the project at `root` to `next`: package.json, and every mention in NAMING_FILES. */
export function setRepository(root, next) {
  if (!NAME.test(next)) throw new Error(`not a GitHub repository name: ${next} (expected OWNER/NAME)`);
  const previous = projectRepository(root);
  const pkgFile = join(root, "package.json");
  const pkg = JSON.parse(readFileSync(pkgFile, "utf8"));
  pkg.repository = { type: "git", url: `git+https://github.com/${next}.git` };
  writeFileSync(pkgFile, `${JSON.stringify(pkg, null, 2)}\n`);
  for (const file of NAMING_FILES) {
    const path = join(root, file);
    const text = readFileSync(path, "utf8");
    writeFileSync(path, text.split(previous).join(next));
  }
  return previous;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const root = join(dirname(fileURLToPath(import.meta.url)), "..");
  try {
    const next = process.argv[2];
    if (next === undefined) process.stdout.write(`${projectRepository(root)}\n`);
    else process.stderr.write(`repository: ${setRepository(root, next)} → ${next} in package.json and ${NAMING_FILES.join(", ")}\n`);
  } catch (e) {
    process.stderr.write(`repository: ${e.message}\n`);
    process.exit(1);
  }
}
