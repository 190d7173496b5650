/**
 * `npm run build:release`: the standalone binary for every platform, their
 * SHA256SUMS, and the npm packages that deliver them.
 *
 *   bun build/release.ts [--targets all|host|KEY,KEY…] [--out DIR] [--repo OWNER/NAME]
 *
 * The repository comes from package.json (build/repository.mjs sets it);
 * --repo overrides it for tests of the packages.
 *
 * Writes, under DIR (default dist/):
 *   release/slivingdoc-<key>[.exe] and release/SHA256SUMS — the GitHub release assets
 *   npm/<key>/       — the platform package @slivingdoc/<key>: the binary, with os/cpu/libc
 *   npm/slivingdoc/  — the `slivingdoc` package: the launcher, SHA256SUMS, and every
 *                      platform package in optionalDependencies
 *
 * Cross-compiling needs the Bun runtime of each target. Bun would download
 * it itself from a hard-wired registry.npmjs.org URL into ~/.bun; instead
 * this script fetches the same @oven/bun-* package with `npm pack`, so it
 * goes through npm's configured registry (a mirror works), npm checks its
 * integrity, and it is cached in the user cache directory; Bun gets the
 * executable with `compile.executablePath`. The registry is the only
 * network access.
 *
 * `--targets host` (or SLIVINGDOC_RELEASE_TARGETS=host) builds only this
 * machine's platform, for the test of the npm packages.
 */
import { spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import { chmodSync, copyFileSync, existsSync, linkSync, mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from "node:fs";
import { homedir } from "node:os";
import { isAbsolute, join, resolve } from "node:path";
import pkg from "../package.json" with { type: "json" };
import { binaryBuild } from "./binary-options.ts";
import { adhocSign, binaryFormat, type BinaryFormat, machoSignatureProblems } from "./binary-format.ts";
import { repositoryOf } from "./repository.mjs";
import { assetName, binaryName, detectLibc, PLATFORMS, packageName, platformKey } from "./npm/launcher.cjs";

interface Target {
  /** The platform key: npm package suffix, asset suffix, launcher mapping. */
  key: string;
  bun: Bun.Build.CompileTarget;
  /** The npm package holding this target's Bun runtime. */
  runtime: string;
  format: BinaryFormat;
  title: string;
}

// x64 targets use Bun's "baseline" runtime (no AVX2 needed): it runs on
// older CPUs, on virtual machines that hide AVX2, and under Rosetta 2,
// which has none; a notebook CLI loses nothing measurable by it.
export const TARGETS: Target[] = [
  { key: "linux-x64", bun: "bun-linux-x64-baseline", runtime: "@oven/bun-linux-x64-baseline", format: { os: "linux", cpu: "x64", libc: "glibc" }, title: "Linux x64 (glibc)" },
  { key: "linux-x64-musl", bun: "bun-linux-x64-baseline-musl", runtime: "@oven/bun-linux-x64-musl-baseline", format: { os: "linux", cpu: "x64", libc: "musl" }, title: "Linux x64 (musl)" },
  { key: "linux-arm64", bun: "bun-linux-arm64", runtime: "@oven/bun-linux-aarch64", format: { os: "linux", cpu: "arm64", libc: "glibc" }, title: "Linux arm64 (glibc)" },
  { key: "linux-arm64-musl", bun: "bun-linux-arm64-musl", runtime: "@oven/bun-linux-aarch64-musl", format: { os: "linux", cpu: "arm64", libc: "musl" }, title: "Linux arm64 (musl)" },
  { key: "darwin-x64", bun: "bun-darwin-x64-baseline", runtime: "@oven/bun-darwin-x64-baseline", format: { os: "darwin", cpu: "x64" }, title: "macOS x64" },
  { key: "darwin-arm64", bun: "bun-darwin-arm64", runtime: "@oven/bun-darwin-aarch64", format: { os: "darwin", cpu: "arm64" }, title: "macOS arm64" },
  { key: "win32-x64", bun: "bun-windows-x64-baseline", runtime: "@oven/bun-windows-x64-baseline", format: { os: "win32", cpu: "x64" }, title: "Windows x64" },
];

// The launcher and this list must agree, or a platform would have a package nobody runs.
if (TARGETS.map((t) => t.key).join() !== PLATFORMS.join()) throw new Error("build/release.ts TARGETS and the launcher's PLATFORMS differ");

const root = join(import.meta.dir, "..");
const version = pkg.version;

function fail(message: string): never {
  console.error(`build:release: ${message}`);
  process.exit(1);
}

function parseArgs(argv: string[]): { targets: string; out: string; repo: string | undefined } {
  const args: Record<string, string> = {};
  for (let i = 0; i < argv.length; i++) {
    const m = /^--(targets|out|repo)(?:=(.*))?$/.exec(argv[i]!);
    if (!m) fail(`unknown argument ${argv[i]}; usage: bun build/release.ts [--targets all|host|KEY,…] [--out DIR] [--repo OWNER/NAME]`);
    const value = m[2] ?? argv[++i];
    if (value === undefined) fail(`--${m[1]} needs a value`);
    args[m[1]!] = value;
  }
  return { targets: args.targets ?? process.env.SLIVINGDOC_RELEASE_TARGETS ?? "all", out: resolve(args.out ?? join(root, "dist")), repo: args.repo };
}

function selectTargets(spec: string): Target[] {
  if (spec === "all") return TARGETS;
  const keys = spec.split(",").map((k) => k.trim());
  const host = platformKey(process.platform, process.arch, process.platform === "linux" ? detectLibc() : undefined);
  return keys.map((k) => {
    const key = k === "host" ? host : k;
    const target = TARGETS.find((t) => t.key === key);
    if (!target) fail(k === "host" ? `no release target for this machine (${process.platform}-${process.arch})` : `unknown target ${k}; the targets are ${PLATFORMS.join(", ")}`);
    return target;
  });
}

/**
 * The GitHub repository the launcher downloads release assets from and npm
 * provenance names: package.json's `repository`, the project's one setting
 * of it (build/repository.mjs); --repo only for tests of the packages.
 */
function repository(flag: string | undefined): string {
  const repo = flag ?? repositoryOf(pkg);
  if (!repo) fail('package.json names no GitHub "repository"; set it with `node build/repository.mjs OWNER/NAME`');
  return repo;
}

function cacheDir(): string {
  const xdg = process.env.XDG_CACHE_HOME;
  return join(xdg && isAbsolute(xdg) ? xdg : join(homedir(), ".cache"), "slivingdoc", "bun-runtime");
}

/** The Bun runtime executable of a target at this Bun's version, fetched once from the npm registry. */
function runtimeFor(target: Target): string {
  const dir = join(cacheDir(), `${target.runtime.replace("@oven/", "")}-${Bun.version}`);
  const exe = join(dir, "bin", target.format.os === "win32" ? "bun.exe" : "bun");
  if (existsSync(exe)) return exe;
  mkdirSync(cacheDir(), { recursive: true });
  const tmp = mkdtempSync(`${dir}.partial-`);
  try {
    const spec = `${target.runtime}@${Bun.version}`;
    console.error(`build:release: fetching ${spec} from the npm registry`);
    const packed = spawnSync("npm", ["pack", spec, "--json", "--pack-destination", tmp], { cwd: tmp, encoding: "utf8" });
    if (packed.status !== 0) fail(`npm pack ${spec} failed:\n${packed.stderr}`);
    const [info] = JSON.parse(packed.stdout) as Array<{ filename: string }>;
    const untar = spawnSync("tar", ["-xzf", join(tmp, info!.filename), "-C", tmp, "--strip-components=1", "package"], { encoding: "utf8" });
    if (untar.status !== 0) fail(`could not unpack ${info!.filename}:\n${untar.stderr}`);
    const manifest = JSON.parse(readFileSync(join(tmp, "package.json"), "utf8")) as { name: string; version: string };
    if (manifest.name !== target.runtime || manifest.version !== Bun.version) fail(`${spec} unpacked as ${manifest.name}@${manifest.version}`);
    rmSync(join(tmp, info!.filename));
    try {
      renameSync(tmp, dir);
    } catch (e) {
      // Another build finished the same fetch first; its copy is as good.
      if (!existsSync(exe)) throw e;
    }
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
  return exe;
}

function sameFormat(a: BinaryFormat, b: BinaryFormat): boolean {
  return a.os === b.os && a.cpu === b.cpu && a.libc === b.libc;
}

/** Median wall time of `--version` in milliseconds, after one warm-up run; checks the embedded version. */
function startupMs(file: string): number {
  const times: number[] = [];
  for (let i = 0; i < 6; i++) {
    const started = performance.now();
    const run = spawnSync(file, ["--version"], { encoding: "utf8" });
    const elapsed = performance.now() - started;
    if (run.status !== 0 || run.stdout.split("\n")[0] !== `slivingdoc ${version}`) fail(`${file} --version gave ${JSON.stringify(run.stdout)} (exit ${run.status}), not slivingdoc ${version}`);
    if (i > 0) times.push(elapsed);
  }
  times.sort((a, b) => a - b);
  return times[Math.floor(times.length / 2)]!;
}

const PLATFORM_README = (t: Target) => `# ${packageName(t.key)}

The slivingdoc binary for ${t.title}, version ${version}. Installed by the
[slivingdoc](https://www.npmjs.com/package/slivingdoc) package as an optional
dependency on matching machines; run it with \`npx slivingdoc\`.
`;

async function main(): Promise<void> {
  const options = parseArgs(process.argv.slice(2));
  const targets = selectTargets(options.targets);
  const repo = repository(options.repo);
  const releaseDir = join(options.out, "release");
  const npmDir = join(options.out, "npm");
  // Start clean, so SHA256SUMS and the packages describe exactly this build.
  rmSync(releaseDir, { recursive: true, force: true });
  rmSync(npmDir, { recursive: true, force: true });
  mkdirSync(releaseDir, { recursive: true });

  const hostLibc = process.platform === "linux" ? detectLibc() : undefined;
  const host: BinaryFormat = { os: process.platform as BinaryFormat["os"], cpu: process.arch as BinaryFormat["cpu"], ...(hostLibc ? { libc: hostLibc } : {}) };
  const repositoryField = { type: "git", url: `git+https://github.com/${repo}.git` };
  const sums: string[] = [];
  const report: string[] = [];

  for (const target of targets) {
    const executablePath = runtimeFor(target);
    const outfile = join(releaseDir, assetName(target.key));
    const started = performance.now();
    const result = await Bun.build(await binaryBuild(outfile, { target: target.bun, executablePath }));
    if (!result.success) {
      for (const log of result.logs) console.error(log);
      fail(`compiling ${target.key} failed`);
    }
    for (const output of result.outputs) if (output.path.endsWith(".map")) rmSync(output.path, { force: true });

    let bytes: Uint8Array = readFileSync(outfile);
    const format = binaryFormat(bytes);
    if (format instanceof Error || !sameFormat(format, target.format)) {
      fail(`${target.key}: built ${format instanceof Error ? format.message : JSON.stringify(format)}, expected ${JSON.stringify(target.format)}`);
    }
    let note = "";
    if (target.format.os === "darwin") {
      const problems = machoSignatureProblems(bytes);
      if (problems.length > 0) {
        bytes = adhocSign(bytes, "slivingdoc");
        const still = machoSignatureProblems(bytes);
        if (still.length > 0) fail(`${target.key}: the ad-hoc signature is still invalid: ${still.join("; ")}`);
        writeFileSync(outfile, bytes);
        note = `re-signed ad hoc (the signature Bun left: ${problems.join("; ")})`;
      } else note = "ad-hoc signature valid";
    }
    chmodSync(outfile, 0o755);
    const sha = createHash("sha256").update(bytes).digest("hex");
    sums.push(`${sha}  ${assetName(target.key)}`);
    const seconds = ((performance.now() - started) / 1000).toFixed(1);
    const startup = sameFormat(target.format, host) ? `${startupMs(outfile).toFixed(0)} ms` : "not runnable here";
    const mb = (statSync(outfile).size / 1e6).toFixed(1);
    report.push(`${target.key.padEnd(17)} ${`${mb} MB`.padStart(9)}  start-up ${startup.padEnd(17)} built in ${seconds} s  ${note}`);

    const dir = join(npmDir, target.key);
    mkdirSync(join(dir, "bin"), { recursive: true });
    // A hard link where the file system allows: the package holds the very file that was hashed.
    try {
      linkSync(outfile, join(dir, "bin", binaryName(target.key)));
    } catch {
      copyFileSync(outfile, join(dir, "bin", binaryName(target.key)));
      chmodSync(join(dir, "bin", binaryName(target.key)), 0o755);
    }
    const manifest = {
      name: packageName(target.key),
      version,
      description: `The slivingdoc binary for ${target.title}; installed by the slivingdoc package.`,
      license: pkg.license,
      repository: repositoryField,
      os: [target.format.os],
      cpu: [target.format.cpu],
      ...(target.format.libc ? { libc: [target.format.libc] } : {}),
      files: ["bin"],
      preferUnplugged: true,
    };
    writeFileSync(join(dir, "package.json"), `${JSON.stringify(manifest, null, 2)}\n`);
    writeFileSync(join(dir, "README.md"), PLATFORM_README(target));
  }

  const sumsText = `${sums.sort((a, b) => a.slice(66).localeCompare(b.slice(66))).join("\n")}\n`;
  writeFileSync(join(releaseDir, "SHA256SUMS"), sumsText);

  // The shim: the same for any selection of targets, except SHA256SUMS, which lists what was built.
  const shim = join(npmDir, "slivingdoc");
  mkdirSync(join(shim, "bin"), { recursive: true });
  copyFileSync(join(import.meta.dir, "npm", "launcher.cjs"), join(shim, "bin", "slivingdoc.js"));
  chmodSync(join(shim, "bin", "slivingdoc.js"), 0o755);
  writeFileSync(join(shim, "SHA256SUMS"), sumsText);
  const readme = readFileSync(join(import.meta.dir, "npm", "README.md"), "utf8").replaceAll("{{version}}", version).replaceAll("{{repo}}", repo);
  writeFileSync(join(shim, "README.md"), readme);
  const shimManifest = {
    name: "slivingdoc",
    version,
    description: pkg.description,
    license: pkg.license,
    repository: repositoryField,
    keywords: ["mcp", "mcp-server", "notebook", "agents", "s3"],
    bin: { slivingdoc: "bin/slivingdoc.js" },
    files: ["bin", "SHA256SUMS"],
    engines: { node: ">=18" },
    optionalDependencies: Object.fromEntries(TARGETS.map((t) => [packageName(t.key), version])),
  };
  writeFileSync(join(shim, "package.json"), `${JSON.stringify(shimManifest, null, 2)}\n`);

  console.error(`build:release: slivingdoc ${version} with Bun ${Bun.version}, download base https://github.com/${repo}/releases/download/v${version}`);
  for (const line of report) console.error(`  ${line}`);
  console.error(`  wrote ${releaseDir} (binaries, SHA256SUMS) and ${npmDir} (${targets.length + 1} packages)`);
}

await main();
