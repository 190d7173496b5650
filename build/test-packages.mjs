// Debian packages the suites call as programs, installed by `npm test`
// before any suite runs: a suite installs nothing itself, and fails, naming
// what is missing, when it is not there. Plain Node, as the rest of build/.
import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";

/** Each package, with the file that shows it is installed. */
export const TEST_PACKAGES = {
  // test/e2e/state-flush.test.ts: the order of renames and flushes, as the kernel sees them.
  strace: "/usr/bin/strace",
  // test/e2e/web-browser.test.ts: Debian's Chromium, driven by playwright-core (which downloads no browser).
  chromium: "/usr/bin/chromium",
};

/**
 * Install the missing ones with apt-get (an `apt-get update` first only if
 * the install fails). Where that cannot be done (not root, no apt-get, a
 * refusal) it says so and goes on: the suites that need them fail, saying why.
 */
export function ensureTestPackages(log = (line) => process.stderr.write(`${line}\n`)) {
  const missing = Object.entries(TEST_PACKAGES)
    .filter(([, marker]) => !existsSync(marker))
    .map(([name]) => name);
  if (missing.length === 0) return;
  if (process.getuid?.() !== 0 || !existsSync("/usr/bin/apt-get")) {
    log(`npm test: ${missing.join(", ")} missing, and this is not root with apt-get: the suites that use them will fail (apt-get install ${missing.join(" ")})`);
    return;
  }
  log(`npm test: installing ${missing.join(", ")} (apt-get)…`);
  const env = { ...process.env, DEBIAN_FRONTEND: "noninteractive" };
  // Another install running holds dpkg's lock a while: wait for it.
  const apt = (...args) => spawnSync("apt-get", ["-o", "DPkg::Lock::Timeout=300", ...args], { env, stdio: ["ignore", "ignore", "pipe"], encoding: "utf8" });
  const install = () => apt("install", "-y", "--no-install-recommends", ...missing);
  let r = install();
  if (r.status !== 0) {
    apt("update");
    r = install();
  }
  if (r.status !== 0) log(`npm test: apt-get install ${missing.join(" ")} failed: ${(r.stderr ?? "").trim().split("\n").slice(-3).join(" / ")}`);
}
