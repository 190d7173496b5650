/**
 * A fresh clone's `npm ci` warns of nothing the project could prevent. npm
 * (from 11) names every dependency whose install script package.json's
 * `allowScripts` does not decide, and is moving to skipping them: each one
 * in the lockfile is decided, so the install stays quiet and does what it
 * did. Bun's is allowed: it links the platform's binary into
 * node_modules/.bin, without which `bun` is a placeholder file.
 */
import { expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";

const root = join(import.meta.dir, "../..");
const json = (file: string) => JSON.parse(readFileSync(join(root, file), "utf8"));

test("every locked dependency with an install script is decided in allowScripts", () => {
  const lock = json("package-lock.json") as { packages: Record<string, { hasInstallScript?: boolean; version?: string }> };
  const allow = (json("package.json") as { allowScripts?: Record<string, boolean> }).allowScripts ?? {};
  const undecided = Object.entries(lock.packages)
    .filter(([path, p]) => path !== "" && p.hasInstallScript === true)
    .map(([path, p]) => ({ name: path.slice(path.lastIndexOf("node_modules/") + "node_modules/".length), version: p.version }))
    .filter(({ name, version }) => !(name in allow) && !(`${name}@${version}` in allow))
    .map(({ name, version }) => `${name}@${version}`);
  expect(undecided).toEqual([]);
});
