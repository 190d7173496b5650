/**
 * The npm distribution as a user gets it: the release build for this
 * machine only, the `slivingdoc` package and this platform's package packed
 * with `npm pack`, installed into an empty prefix from the two tarballs
 * alone (no registry: it points at a closed port), and run through the Node
 * launcher — `npx slivingdoc --version`, an MCP session with the SDK's
 * client, exit codes and SIGTERM. Then the launcher without its platform
 * package: it downloads the binary from a local server, refuses a tampered
 * one, and caches a verified one. And the launcher's platform mapping.
 *
 * Needs node, npm and tar on PATH and, on the first run only, the npm
 * registry (build/release.ts fetches this platform's Bun runtime into
 * ~/.cache/slivingdoc/bun-runtime).
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import { cpSync, existsSync, lstatSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, readlinkSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import {
  assetName,
  binaryName,
  cacheRoot,
  detectLibc,
  downloadBase,
  PLATFORMS,
  packageName,
  parseSums,
  platformKey,
} from "../../build/npm/launcher.cjs";
import { spawnMcp } from "../support/raw-mcp.ts";

const repoRoot = join(import.meta.dir, "../..");
const version = JSON.parse(readFileSync(join(repoRoot, "package.json"), "utf8")).version as string;
const work = mkdtempSync(join(tmpdir(), "slivingdoc-npm-"));
afterAll(() => rmSync(work, { recursive: true, force: true }));

describe("the launcher's pure functions", () => {
  test("platform, architecture and C library map to a platform key, or to none", () => {
    const cases: Array<[string, string, string | undefined, string | null]> = [
      ["linux", "x64", "glibc", "linux-x64"],
      ["linux", "x64", "musl", "linux-x64-musl"],
      ["linux", "arm64", "glibc", "linux-arm64"],
      ["linux", "arm64", "musl", "linux-arm64-musl"],
      ["darwin", "x64", undefined, "darwin-x64"],
      ["darwin", "arm64", undefined, "darwin-arm64"],
      ["darwin", "arm64", "musl", "darwin-arm64"], // the C library only matters on Linux
      ["win32", "x64", undefined, "win32-x64"],
      ["win32", "arm64", undefined, null],
      ["linux", "ia32", "glibc", null],
      ["linux", "arm", "glibc", null],
      ["freebsd", "x64", undefined, null],
      ["android", "arm64", undefined, null],
    ];
    for (const [platform, arch, libc, key] of cases) expect({ platform, arch, libc, key: platformKey(platform, arch, libc) }).toEqual({ platform, arch, libc, key });
    expect(PLATFORMS).toEqual(["linux-x64", "linux-x64-musl", "linux-arm64", "linux-arm64-musl", "darwin-x64", "darwin-arm64", "win32-x64"]);
  });

  test("package, binary and asset names; .exe only on Windows", () => {
    expect([packageName("linux-arm64-musl"), binaryName("linux-arm64-musl"), assetName("linux-arm64-musl")]).toEqual([
      "@slivingdoc/linux-arm64-musl",
      "slivingdoc",
      "slivingdoc-linux-arm64-musl",
    ]);
    expect([packageName("win32-x64"), binaryName("win32-x64"), assetName("win32-x64")]).toEqual(["@slivingdoc/win32-x64", "slivingdoc.exe", "slivingdoc-win32-x64.exe"]);
  });

  test("SHA256SUMS parsing takes sha256sum's text and binary markers and skips anything else", () => {
    const a = "a".repeat(64);
    const b = "B".repeat(64);
    const sums = parseSums(`${a}  slivingdoc-linux-x64\r\n${b} *slivingdoc-win32-x64.exe\nnot a line\n${"c".repeat(63)}  short\n`);
    expect([...sums]).toEqual([
      ["slivingdoc-linux-x64", a],
      ["slivingdoc-win32-x64.exe", "b".repeat(64)],
    ]);
  });

  test("the cache lives where each operating system keeps per-user caches", () => {
    expect(cacheRoot({}, "linux", "/home/u")).toBe("/home/u/.cache");
    expect(cacheRoot({ XDG_CACHE_HOME: "/x/cache" }, "linux", "/home/u")).toBe("/x/cache");
    expect(cacheRoot({ XDG_CACHE_HOME: "relative" }, "linux", "/home/u")).toBe("/home/u/.cache");
    expect(cacheRoot({}, "darwin", "/Users/u")).toBe("/Users/u/Library/Caches");
    expect(cacheRoot({ LOCALAPPDATA: "C:\\Users\\u\\AppData\\Local" }, "win32", "C:\\Users\\u")).toBe("C:\\Users\\u\\AppData\\Local");
  });

  test("the download base is this version's GitHub release, unless SLIVINGDOC_DOWNLOAD_BASE says otherwise", () => {
    const release = "https://github.com/acme/slivingdoc/releases/download/v1.2.3";
    for (const repository of ["git+https://github.com/acme/slivingdoc.git", "https://github.com/acme/slivingdoc", { url: "git@github.com:acme/slivingdoc.git" }]) {
      expect(downloadBase({ version: "1.2.3", repository }, {})).toBe(release);
    }
    expect(downloadBase({ version: "1.2.3", repository: "x" }, { SLIVINGDOC_DOWNLOAD_BASE: "http://127.0.0.1:9/mirror/" })).toBe("http://127.0.0.1:9/mirror");
    expect(() => downloadBase({ version: "1.2.3" }, {})).toThrow("SLIVINGDOC_DOWNLOAD_BASE");
  });
});

describe("the packed packages, installed from their tarballs", () => {
  const host = platformKey(process.platform, process.arch, process.platform === "linux" ? detectLibc() : undefined);
  const out = join(work, "out");
  const prefix = join(work, "prefix");
  const launcher = join(prefix, "node_modules", ".bin", "slivingdoc");
  let binary = "";
  // npm with no registry at all: a closed port, offline, and a fresh cache and config. Under
  // `npm test`, the outer npm's npm_config_* variables (its prefix, cache, config) are dropped.
  const inherited = Object.entries(process.env).filter(([k]) => !k.toLowerCase().startsWith("npm_"));
  const npmEnv: Record<string, string> = {
    ...(Object.fromEntries(inherited) as Record<string, string>),
    npm_config_registry: "http://127.0.0.1:9/",
    npm_config_offline: "true",
    npm_config_cache: join(work, "npm-cache"),
    npm_config_userconfig: join(work, "npmrc"),
    npm_config_audit: "false",
    npm_config_fund: "false",
    npm_config_update_notifier: "false",
  };

  function envFor(name: string, extra: Record<string, string> = {}): Record<string, string> {
    mkdirSync(join(work, name, "tmp"), { recursive: true });
    return {
      PATH: process.env.PATH ?? "/usr/bin:/bin",
      HOME: join(work, name, "home"),
      TMPDIR: join(work, name, "tmp"),
      XDG_CACHE_HOME: join(work, name, "cache"),
      SLIVINGDOC_STORE: `sqlite:${join(work, name, "store.db")}`,
      SLIVINGDOC_PRIVATE_ROOT: join(work, name, "private"),
      ...extra,
    };
  }

  function run(cmd: string[], options: { cwd?: string; env?: Record<string, string> } = {}) {
    const r = spawnSync(cmd[0]!, cmd.slice(1), { cwd: options.cwd ?? work, env: options.env ?? npmEnv, encoding: "utf8" });
    if (r.error) throw r.error;
    return { status: r.status, signal: r.signal, stdout: r.stdout, stderr: r.stderr };
  }

  beforeAll(
    () => {
      if (!host) throw new Error(`this machine (${process.platform}-${process.arch}) has no release target`);
      writeFileSync(npmEnv.npm_config_userconfig!, "");
      const built = run([process.execPath, join(repoRoot, "build/release.ts"), "--targets", "host", "--out", out, "--repo", "acme/slivingdoc"], { cwd: repoRoot, env: process.env as Record<string, string> });
      if (built.status !== 0) throw new Error(`build/release.ts failed:\n${built.stderr}`);
      binary = join(out, "release", assetName(host));
      mkdirSync(join(work, "packs"));
      const packed = run(["npm", "pack", join(out, "npm", "slivingdoc"), join(out, "npm", host), "--pack-destination", join(work, "packs"), "--json"]);
      if (packed.status !== 0) throw new Error(`npm pack failed:\n${packed.stderr}`);
      const tarballs = (JSON.parse(packed.stdout) as Array<{ filename: string }>).map((p) => join(work, "packs", p.filename));
      mkdirSync(prefix);
      const installed = run(["npm", "install", "--prefix", prefix, ...tarballs]);
      if (installed.status !== 0) throw new Error(`npm install from the tarballs failed:\n${installed.stderr}`);
    },
    { timeout: 180_000 },
  );

  test("the shim lists every platform package; this platform's carries os, cpu and libc", () => {
    const shim = JSON.parse(readFileSync(join(prefix, "node_modules", "slivingdoc", "package.json"), "utf8"));
    expect(shim.bin).toEqual({ slivingdoc: "bin/slivingdoc.js" });
    expect(shim.optionalDependencies).toEqual(Object.fromEntries(PLATFORMS.map((k) => [packageName(k), version])));
    expect(shim.repository.url).toBe("git+https://github.com/acme/slivingdoc.git");
    const platform = JSON.parse(readFileSync(join(prefix, "node_modules", packageName(host!), "package.json"), "utf8"));
    expect({ os: platform.os, cpu: platform.cpu, libc: platform.libc }).toEqual({
      os: [process.platform],
      cpu: [process.arch],
      libc: process.platform === "linux" ? [detectLibc()] : undefined,
    });
    expect(readlinkSync(launcher)).toBe("../slivingdoc/bin/slivingdoc.js");
    expect(lstatSync(join(prefix, "node_modules", packageName(host!), "bin", binaryName(host!))).mode & 0o111).toBe(0o111);
    // The checksums inside the shim are the release's.
    expect(readFileSync(join(prefix, "node_modules", "slivingdoc", "SHA256SUMS"), "utf8")).toBe(readFileSync(join(out, "release", "SHA256SUMS"), "utf8"));
  });

  test("npx slivingdoc --version runs the platform package's binary, with no download", () => {
    const env = { ...npmEnv, XDG_CACHE_HOME: join(work, "npx-cache") };
    const r = run(["npx", "slivingdoc", "--version"], { cwd: prefix, env });
    expect({ status: r.status, first: r.stdout.split("\n")[0] }).toEqual({ status: 0, first: `slivingdoc ${version}` });
    expect(r.stderr).not.toContain("downloading");
    expect(existsSync(join(work, "npx-cache"))).toBe(false);
  });

  test("an MCP client lists the two tools through the launcher and calls one", async () => {
    const transport = new StdioClientTransport({ command: launcher, args: ["serve"], env: envFor("mcp"), stderr: "pipe" });
    const client = new Client({ name: "slivingdoc-npm-test", version: "1.0.0" });
    await client.connect(transport);
    try {
      expect(client.getServerVersion()).toEqual({ name: "slivingdoc", version });
      const { tools } = await client.listTools();
      expect(tools.map((t) => t.name)).toEqual(["notes_pull", "notes_commit"]);
      const pulled = await client.callTool({ name: "notes_pull", arguments: {} });
      expect((pulled.structuredContent as { code: string }).code).toBe("OK");
    } finally {
      await client.close();
    }
  });

  test("exit codes and stderr pass through: --bogus is the binary's startup refusal, 2", () => {
    const env = envFor("exit");
    const direct = run([binary, "--bogus"], { env });
    const shimmed = run([launcher, "--bogus"], { env });
    expect(direct.status).toBe(2);
    expect(shimmed).toEqual(direct);
  });

  /** The pid of the one process whose parent is `parent` (Linux /proc). */
  function childOf(parent: number): number {
    const children = readdirSync("/proc")
      .filter((d) => /^\d+$/.test(d))
      .filter((d) => {
        try {
          // Field 4 of /proc/PID/stat, after the parenthesised command name.
          return Number(readFileSync(`/proc/${d}/stat`, "utf8").split(") ")[1]!.split(" ")[1]) === parent;
        } catch {
          return false; // exited while we looked
        }
      });
    if (children.length !== 1) throw new Error(`expected one child of ${parent}, found ${children.length}`);
    return Number(children[0]);
  }

  /** Starts `serve`, waits for its answer to initialize, sends SIGTERM, and reports how it ended. */
  async function terminate(command: string, env: Record<string, string>) {
    const s = spawnMcp([command, "serve"], env);
    s.send({ jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "t", version: "1" } } });
    expect((await s.answer(1)).result).toBeDefined();
    const child = command === binary ? null : childOf(s.pid);
    s.kill("SIGTERM");
    await s.child.exited;
    return { exitCode: s.child.exitCode, signalCode: s.child.signalCode, child };
  }

  test("SIGTERM to the launcher stops the binary, and the launcher ends as the binary does", async () => {
    expect(process.platform).toBe("linux"); // childOf reads /proc
    const direct = await terminate(binary, envFor("term-direct"));
    const shimmed = await terminate(launcher, envFor("term-shim"));
    expect({ exitCode: shimmed.exitCode, signalCode: shimmed.signalCode }).toEqual({ exitCode: direct.exitCode, signalCode: direct.signalCode });
    expect(() => process.kill(shimmed.child!, 0)).toThrow();
  });

  describe("without the platform package", () => {
    const served = new Map<string, Uint8Array>();
    const requests: string[] = [];
    let server: ReturnType<typeof Bun.serve>;
    let bare = "";

    beforeAll(() => {
      // The shim alone, as after `npm install --omit=optional`: no @slivingdoc/* anywhere above it.
      bare = join(work, "bare", "slivingdoc");
      cpSync(join(prefix, "node_modules", "slivingdoc"), bare, { recursive: true });
      server = Bun.serve({
        hostname: "127.0.0.1",
        port: 0,
        fetch(req) {
          const path = new URL(req.url).pathname;
          requests.push(path);
          const body = served.get(path);
          return body ? new Response(body) : new Response("not found", { status: 404 });
        },
      });
    });
    afterAll(() => server.stop(true));

    async function launch(base: string, env: Record<string, string>, preload: string[] = []) {
      const p = Bun.spawn(["node", ...preload, join(bare, "bin", "slivingdoc.js"), "--version"], {
        env: { ...env, SLIVINGDOC_DOWNLOAD_BASE: `http://127.0.0.1:${server.port}${base}` },
        stdout: "pipe",
        stderr: "pipe",
      });
      const [stdout, stderr, status] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited]);
      return { status, stdout, stderr };
    }

    test("a tampered binary is refused, neither cached nor run", async () => {
      const bytes = new Uint8Array(readFileSync(binary));
      bytes[bytes.length - 1]! ^= 1;
      served.set(`/tampered/${assetName(host!)}`, bytes);
      const env = envFor("tampered");
      const r = await launch("/tampered", env);
      expect(r.status).toBe(2);
      expect(r.stdout).toBe("");
      expect(r.stderr).toContain("slivingdoc: launcher refusal: verification failed:");
      expect(r.stderr).toContain(assetName(host!));
      expect(existsSync(join(env.XDG_CACHE_HOME!, "slivingdoc", "bin", version, assetName(host!)))).toBe(false);
    });

    test("a missing asset is a clear refusal", async () => {
      const r = await launch("/empty", envFor("missing"));
      expect(r.status).toBe(2);
      expect(r.stderr).toContain(`/empty/${assetName(host!)}: HTTP 404`);
    });

    test("the verified binary is downloaded once, cached, and run", async () => {
      const bytes = new Uint8Array(readFileSync(binary));
      served.set(`/good/${assetName(host!)}`, bytes);
      const env = envFor("good");
      const first = await launch("/good", env);
      expect({ status: first.status, first: first.stdout.split("\n")[0] }).toEqual({ status: 0, first: `slivingdoc ${version}` });
      expect(first.stderr).toContain("downloading");
      const cached = join(env.XDG_CACHE_HOME!, "slivingdoc", "bin", version, assetName(host!));
      expect(createHash("sha256").update(readFileSync(cached)).digest("hex")).toBe(createHash("sha256").update(bytes).digest("hex"));
      const before = requests.length;
      const second = await launch("/gone", env);
      expect({ status: second.status, first: second.stdout.split("\n")[0], stderr: second.stderr }).toEqual({ status: 0, first: `slivingdoc ${version}`, stderr: "" });
      expect(requests.length).toBe(before);
    });

    test("an unsupported platform is a clear refusal naming the supported ones", async () => {
      const preload = join(work, "ia32.cjs");
      writeFileSync(preload, 'Object.defineProperty(process, "arch", { value: "ia32" });\n');
      const r = await launch("/good", envFor("ia32"), ["--require", preload]);
      expect(r.status).toBe(2);
      expect(r.stderr).toContain("launcher refusal: unsupported platform: there is no slivingdoc binary for ");
      expect(r.stderr).toContain(PLATFORMS.join(", "));
    });
  });
});
