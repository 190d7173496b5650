// Installs the locked dependencies when they are missing or stale, so the
// README's commands work on a fresh clone with nothing but Node.js and npm.
// Plain Node, no dependencies: it runs before anything is installed.
import { execFileSync } from "node:child_process";
import { existsSync, statSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const marker = join(root, "node_modules", ".package-lock.json");
const lock = join(root, "package-lock.json");
const stale = !existsSync(marker) || statSync(marker).mtimeMs < statSync(lock).mtimeMs;
if (stale) {
  process.stderr.write("slivingdoc: installing dependencies (npm ci)…\n");
  execFileSync("npm", ["ci", "--no-audit", "--no-fund"], { cwd: root, stdio: ["ignore", "inherit", "inherit"] });
}
