/**
 * Debian packages a test needs, installed when missing: `npm test` runs on a
 * fresh machine as root, and brings in what its suites use itself.
 */
import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";

/** A test that this machine cannot run, and why; the test fails with it. */
export class CannotRun extends Error {
  constructor(what: string, why: string, instead: string) {
    super(`${what} cannot run on this machine: ${why}. ${instead}`);
  }
}

export function run(cmd: string, args: string[], options: { input?: string | Buffer; env?: Record<string, string | undefined> } = {}): { status: number; stdout: string; stderr: string } {
  const r = spawnSync(cmd, args, { input: options.input, env: options.env ?? process.env, encoding: "utf8", maxBuffer: 256 * 1024 * 1024 });
  if (r.error) return { status: 127, stdout: "", stderr: String(r.error.message) };
  return { status: r.status ?? 1, stdout: r.stdout, stderr: r.stderr };
}

export function must(what: string, r: { status: number; stdout: string; stderr: string }): string {
  if (r.status !== 0) throw new Error(`${what} failed (exit ${r.status}):\n${(r.stderr || r.stdout).split("\n").slice(-25).join("\n")}`);
  return r.stdout;
}

/**
 * Install each package whose marker file is missing, with apt-get (an
 * `apt-get update` first only if the install fails). Throws `cannot(why)`
 * where that is impossible: not root, no apt-get, or apt-get refusing.
 */
export function ensurePackages(packages: Record<string, string>, cannot: (why: string) => Error): void {
  const missing = Object.entries(packages)
    .filter(([, marker]) => !existsSync(marker))
    .map(([name]) => name);
  if (missing.length === 0) return;
  if (process.getuid?.() !== 0) throw cannot(`${missing.join(", ")} missing, and this process is not root, so it cannot apt-get install them`);
  if (!existsSync("/usr/bin/apt-get")) throw cannot(`${missing.join(", ")} missing, and there is no apt-get`);
  const env = { ...process.env, DEBIAN_FRONTEND: "noninteractive" };
  // Another install running (a second suite, the machine's own updates) holds dpkg's lock a while: wait for it.
  const lock = ["-o", "DPkg::Lock::Timeout=300"];
  const install = () => run("apt-get", [...lock, "install", "-y", "--no-install-recommends", ...missing], { env });
  let r = install();
  if (r.status !== 0) {
    run("apt-get", [...lock, "update"], { env });
    r = install();
  }
  if (r.status !== 0) throw cannot(`apt-get install ${missing.join(" ")} failed: ${r.stderr.trim().split("\n").slice(-3).join(" / ")}`);
}
