#!/usr/bin/env node
// The `slivingdoc` command of the npm package: finds the binary for this
// platform and runs it. Plain CommonJS without dependencies, so it runs on
// any Node.js from 18 on without Bun. build/release.ts copies it into the
// package as bin/slivingdoc.js; the repository's tests require it directly
// for its pure functions.
//
// The binary comes from the platform package npm installed from
// optionalDependencies (@slivingdoc/<platform>). Where that is missing (an
// install with --omit=optional, a mirror without it, a copied node_modules),
// the launcher downloads the release asset once, checks it against the
// SHA256SUMS shipped inside this package, and keeps it in the user's cache.
//
// It writes nothing to stdout: under `serve`, stdout is the MCP channel.
"use strict";

const { spawn } = require("node:child_process");
const crypto = require("node:crypto");
const fs = require("node:fs");
const os = require("node:os");
const path = require("node:path");

/** Every platform with a release binary, as `${process.platform}-${process.arch}` plus `-musl` for musl Linux. */
const PLATFORMS = ["linux-x64", "linux-x64-musl", "linux-arm64", "linux-arm64-musl", "darwin-x64", "darwin-arm64", "win32-x64"];

/** Exit code of a launcher refusal: the binary's own code for "startup refusal, nothing was touched". */
const REFUSAL = 2;

class LauncherError extends Error {}

/**
 * The platform key for a platform, architecture and (on Linux) C library,
 * or null when there is no binary for it.
 */
function platformKey(platform, arch, libc) {
  const key = platform === "linux" && libc === "musl" ? `${platform}-${arch}-musl` : `${platform}-${arch}`;
  return PLATFORMS.includes(key) ? key : null;
}

/** The C library of this Linux: musl (Alpine, Void) or glibc. */
function detectLibc() {
  // The loader script names its C library; reading it is cheaper than a report.
  try {
    const ldd = fs.readFileSync("/usr/bin/ldd", "latin1");
    if (ldd.includes("musl")) return "musl";
    if (ldd.includes("GNU C Library") || ldd.includes("GLIBC")) return "glibc";
  } catch {
    // No /usr/bin/ldd (minimal images): ask Node which C library it runs on.
  }
  const report = typeof process.report?.getReport === "function" ? process.report.getReport() : null;
  return report?.header?.glibcVersionRuntime ? "glibc" : "musl";
}

/** The npm package holding the binary for a platform key. */
function packageName(key) {
  return `@slivingdoc/${key}`;
}

/** The binary's file name inside its platform package. */
function binaryName(key) {
  return key.startsWith("win32-") ? "slivingdoc.exe" : "slivingdoc";
}

/** The release asset (and SHA256SUMS entry) of a platform key. */
function assetName(key) {
  return key.startsWith("win32-") ? `slivingdoc-${key}.exe` : `slivingdoc-${key}`;
}

/** SHA256SUMS (`sha256sum` output: hex, two spaces or " *", name) as a Map of name to hex. */
function parseSums(text) {
  const sums = new Map();
  for (const line of text.split(/\r?\n/)) {
    const m = /^([0-9a-fA-F]{64}) [ *](.+)$/.exec(line);
    if (m) sums.set(m[2], m[1].toLowerCase());
  }
  return sums;
}

/** The per-user cache directory of this operating system. */
function cacheRoot(env, platform, home) {
  if (platform === "win32") return env.LOCALAPPDATA || path.join(home, "AppData", "Local");
  if (platform === "darwin") return path.join(home, "Library", "Caches");
  return env.XDG_CACHE_HOME && path.isAbsolute(env.XDG_CACHE_HOME) ? env.XDG_CACHE_HOME : path.join(home, ".cache");
}

/**
 * Where release assets are downloaded from: SLIVINGDOC_DOWNLOAD_BASE (a
 * mirror, or a test server), else this version's GitHub release of the
 * package's repository.
 */
function downloadBase(pkg, env) {
  if (env.SLIVINGDOC_DOWNLOAD_BASE) return env.SLIVINGDOC_DOWNLOAD_BASE.replace(/\/+$/, "");
  const url = typeof pkg.repository === "string" ? pkg.repository : pkg.repository?.url;
  const m = /github\.com[/:]([^/]+\/[^/]+?)(?:\.git)?\/?$/.exec(url || "");
  if (!m) throw new LauncherError("this package names no GitHub repository to download from; set SLIVINGDOC_DOWNLOAD_BASE");
  return `https://github.com/${m[1]}/releases/download/v${pkg.version}`;
}

/** The installed platform package's binary, or null. */
function installedBinary(key) {
  let manifest;
  try {
    manifest = require.resolve(`${packageName(key)}/package.json`);
  } catch {
    return null;
  }
  const file = path.join(path.dirname(manifest), "bin", binaryName(key));
  return fs.existsSync(file) ? file : null;
}

async function fetchBytes(url) {
  if (typeof fetch !== "function") throw new LauncherError(`downloading needs Node.js 18 or later; install ${url} by hand`);
  let response;
  try {
    response = await fetch(url, { redirect: "follow", signal: AbortSignal.timeout(300_000) });
  } catch (e) {
    throw new LauncherError(`could not download ${url}: ${e.cause?.message || e.message}`);
  }
  if (!response.ok) throw new LauncherError(`could not download ${url}: HTTP ${response.status}`);
  return Buffer.from(await response.arrayBuffer());
}

/**
 * The cached binary for this version, downloaded and verified first if
 * needed. Only bytes whose SHA-256 matches the package's SHA256SUMS are
 * ever written to the cache; the rename makes concurrent first runs safe.
 */
async function downloadedBinary(key, pkg, sums, env) {
  const asset = assetName(key);
  const dir = path.join(cacheRoot(env, process.platform, os.homedir()), "slivingdoc", "bin", pkg.version);
  const file = path.join(dir, asset);
  if (fs.existsSync(file)) return file;
  const expected = sums.get(asset);
  if (!expected) throw new LauncherError(`this package's SHA256SUMS has no entry for ${asset}; refusing to download an unverifiable binary`);
  const url = `${downloadBase(pkg, env)}/${asset}`;
  process.stderr.write(`slivingdoc: ${packageName(key)} is not installed; downloading ${url} (once, into ${dir})\n`);
  const bytes = await fetchBytes(url);
  const actual = crypto.createHash("sha256").update(bytes).digest("hex");
  if (actual !== expected) {
    throw new LauncherError(`verification failed: ${url} has SHA-256 ${actual}, but SHA256SUMS says ${expected}; it was neither saved nor run`);
  }
  fs.mkdirSync(dir, { recursive: true });
  const partial = `${file}.partial-${process.pid}`;
  fs.writeFileSync(partial, bytes, { mode: 0o755 });
  fs.renameSync(partial, file);
  return file;
}

/** Runs the binary with our arguments and stdio; our exit mirrors its exit. */
function run(file, args) {
  // A package manager that drops file modes (some do) leaves it unrunnable.
  if (process.platform !== "win32") {
    try {
      fs.accessSync(file, fs.constants.X_OK);
    } catch {
      fs.chmodSync(file, 0o755);
    }
  }
  const child = spawn(file, args, { stdio: "inherit" });
  // Signals sent to the launcher (a host stopping its server, Ctrl-C) reach the binary.
  const signals = process.platform === "win32" ? ["SIGINT", "SIGTERM", "SIGBREAK"] : ["SIGINT", "SIGTERM", "SIGHUP", "SIGQUIT"];
  const forward = (signal) => {
    if (child.exitCode === null && child.signalCode === null) child.kill(signal);
  };
  for (const signal of signals) process.on(signal, forward);
  child.on("error", (e) => {
    process.stderr.write(`slivingdoc: launcher refusal: could not start ${file}: ${e.message}\n`);
    process.exit(REFUSAL);
  });
  child.on("exit", (code, signal) => {
    if (signal) {
      // Die of the same signal, so our parent sees what the binary did.
      for (const s of signals) process.removeListener(s, forward);
      process.kill(process.pid, signal);
      setTimeout(() => process.exit(128 + (os.constants.signals[signal] || 0)), 1000).unref();
      return;
    }
    process.exit(code ?? 1);
  });
}

async function main() {
  const root = path.join(__dirname, "..");
  const pkg = JSON.parse(fs.readFileSync(path.join(root, "package.json"), "utf8"));
  const libc = process.platform === "linux" ? detectLibc() : undefined;
  const key = platformKey(process.platform, process.arch, libc);
  if (!key) {
    const here = `${process.platform}-${process.arch}${libc ? ` (${libc})` : ""}`;
    throw new LauncherError(`unsupported platform: there is no slivingdoc binary for ${here}; there are binaries for ${PLATFORMS.join(", ")}`);
  }
  let file = installedBinary(key);
  if (!file) {
    let sums;
    try {
      sums = parseSums(fs.readFileSync(path.join(root, "SHA256SUMS"), "utf8"));
    } catch {
      throw new LauncherError("this package has no SHA256SUMS to verify a download against; reinstall it");
    }
    file = await downloadedBinary(key, pkg, sums, process.env);
  }
  run(file, process.argv.slice(2));
}

module.exports = { PLATFORMS, platformKey, detectLibc, packageName, binaryName, assetName, parseSums, cacheRoot, downloadBase };

if (require.main === module) {
  main().catch((e) => {
    const text = e instanceof LauncherError ? e.message : e?.stack || String(e);
    process.stderr.write(`slivingdoc: launcher refusal: ${text}\n`);
    process.exit(REFUSAL);
  });
}
