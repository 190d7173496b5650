/**
 * Every release binary executed, not only built: `npm run build:release`
 * for all targets, then each binary this machine can run by some means runs
 * `--version` and one MCP session that pulls a notebook published by
 * another binary:
 *
 * - linux-x64 directly;
 * - linux-arm64 under Debian's qemu-user-static, with Debian's arm64 glibc
 *   (libc6-arm64-cross) as its library root;
 * - win32-x64 under Debian's Wine 8.0, which lacks bcryptprimitives.dll
 *   (ProcessPrng, which Bun's Windows runtime imports, came in a later
 *   Wine): the test compiles that one function with Debian's MinGW on top
 *   of Wine's own RtlGenRandom and puts it beside the .exe, as an
 *   application-local DLL. Wine hands a Unix pipe to Bun as a handle its
 *   stdin cannot read (EBADF), so the MCP session comes from a file there.
 *
 * What cannot run here, and why (docs/install.md lists it too): the musl
 * binaries need a libstdc++ built for musl, which Debian does not package —
 * the test runs them under Debian's musl loader to prove that is the only
 * library missing; the macOS binaries need macOS.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { CannotRun, ensurePackages, must, run } from "../support/debian.ts";
import { spawnMcp } from "../support/raw-mcp.ts";

const repo = join(import.meta.dir, "../..");
const version = JSON.parse(readFileSync(join(repo, "package.json"), "utf8")).version as string;
const work = mkdtempSync(join(tmpdir(), "slivingdoc-binaries-"));
afterAll(() => rmSync(work, { recursive: true, force: true }));
const release = join(work, "out", "release");
const store = join(work, "store.db");
const NOTE = "# shared\n\npublished by linux-x64\n";

const cannotRun = (why: string) => new CannotRun("the release binaries test", why, "It needs Debian 12 x64 as root with apt-get; docs/install.md, \"Every binary executed\", lists what each binary needs.");

/** How to start each binary here: the command before its arguments. */
const LAUNCH: Record<string, (file: string) => string[]> = {
  "linux-x64": (file) => [file],
  "linux-arm64": (file) => ["qemu-aarch64-static", "-L", "/usr/aarch64-linux-gnu", file],
};

beforeAll(() => {
  if (process.platform !== "linux" || process.arch !== "x64") throw cannotRun(`this is ${process.platform}-${process.arch}`);
  ensurePackages(
    {
      "qemu-user-static": "/usr/bin/qemu-aarch64-static",
      "libc6-arm64-cross": "/usr/aarch64-linux-gnu/lib/ld-linux-aarch64.so.1",
      musl: "/lib/ld-musl-x86_64.so.1",
      wine64: "/usr/lib/wine/wine64",
      "gcc-mingw-w64-x86-64-win32": "/usr/bin/x86_64-w64-mingw32-gcc",
    },
    cannotRun,
  );
  must("npm run build:release", run(process.execPath, [join(repo, "build/release.ts"), "--targets", "all", "--out", join(work, "out")]));
  // The notebook every binary pulls, published by the host's binary.
  const env = envFor("seed");
  const dir = join(work, "seed-notebook");
  must("pull", run(join(release, "slivingdoc-linux-x64"), ["pull", dir], { env }));
  writeFileSync(join(dir, "shared.md"), NOTE);
  must("commit", run(join(release, "slivingdoc-linux-x64"), ["commit", "-m", "shared", dir], { env }));
}, 600_000);

function envFor(name: string): Record<string, string> {
  return { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: join(work, name, "home"), TMPDIR: join(work, name, "tmp"), SLIVINGDOC_STORE: `sqlite:${store}`, SLIVINGDOC_PRIVATE_ROOT: join(work, name, "private") };
}

describe.each(Object.keys(LAUNCH))("%s", (key) => {
  test("--version, and an MCP session that pulls the shared notebook", async () => {
    const command = LAUNCH[key]!(join(release, `slivingdoc-${key}`));
    const printed = run(command[0]!, [...command.slice(1), "--version"]);
    expect({ status: printed.status, first: printed.stdout.split("\n")[0] }).toEqual({ status: 0, first: `slivingdoc ${version}` });
    const env = envFor(key);
    const notebook = join(work, key, "notebook");
    mkdirSync(env.TMPDIR!, { recursive: true });
    const s = spawnMcp([...command, "serve", "--workspace-root", notebook], env);
    await s.initialize();
    s.callTool(1, "notes_pull", {});
    const answer = await s.answer(1);
    s.endInput();
    expect(await s.exited).toBe(0);
    expect(answer.result.structuredContent).toMatchObject({ code: "OK", generation: 1, filesChanged: 1 });
    expect(readFileSync(join(notebook, "shared.md"), "utf8")).toBe(NOTE);
  });
});

describe("win32-x64 under Wine", () => {
  test("--version, and an MCP session that pulls the shared notebook", () => {
    const dir = join(work, "win32");
    mkdirSync(dir, { recursive: true });
    const exe = join(dir, "slivingdoc.exe");
    copyFileSync(join(release, "slivingdoc-win32-x64.exe"), exe);
    // ProcessPrng, the one import Wine 8.0 lacks, on top of RtlGenRandom (SystemFunction036).
    writeFileSync(
      join(dir, "bcp.c"),
      "#include <windows.h>\nBOOLEAN WINAPI SystemFunction036(PVOID, ULONG);\n" +
        "BOOL WINAPI ProcessPrng(PBYTE data, SIZE_T len) {\n  while (len > 0) {\n    ULONG n = len > 0x40000000 ? 0x40000000 : (ULONG)len;\n" +
        "    if (!SystemFunction036(data, n)) return FALSE;\n    data += n;\n    len -= n;\n  }\n  return TRUE;\n}\n",
    );
    writeFileSync(join(dir, "bcp.def"), "LIBRARY bcryptprimitives\nEXPORTS\n  ProcessPrng\n");
    must("the bcryptprimitives.dll shim", run("x86_64-w64-mingw32-gcc", ["-shared", "-O2", "-o", join(dir, "bcryptprimitives.dll"), join(dir, "bcp.c"), join(dir, "bcp.def"), "-ladvapi32"]));
    const win = (path: string) => `Z:${path.replaceAll("/", "\\")}`;
    const env = { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: join(dir, "home"), WINEPREFIX: join(dir, "prefix"), WINEDEBUG: "-all", SLIVINGDOC_STORE: `sqlite:${win(store)}`, SLIVINGDOC_PRIVATE_ROOT: win(join(dir, "private")) };
    const printed = run("/usr/lib/wine/wine64", [exe, "--version"], { env });
    expect({ status: printed.status, first: printed.stdout.replaceAll("\r\n", "\n").split("\n")[0] }).toEqual({ status: 0, first: `slivingdoc ${version}` });
    const session = [
      { jsonrpc: "2.0", id: 0, method: "initialize", params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "wine-test", version: "1" } } },
      { jsonrpc: "2.0", method: "notifications/initialized" },
      { jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "notes_pull", arguments: {} } },
    ];
    const served = run("/usr/lib/wine/wine64", [exe, "serve", "--workspace-root", win(join(dir, "notebook"))], { env, input: session.map((m) => `${JSON.stringify(m)}\n`).join("") });
    expect(served.status).toBe(0);
    const answers = served.stdout.split(/\r?\n/).filter(Boolean).map((l) => JSON.parse(l));
    expect(answers.find((a) => a.id === 1)?.result.structuredContent).toMatchObject({ code: "OK", generation: 1, filesChanged: 1 });
    expect(readFileSync(join(dir, "notebook", "shared.md"), "utf8")).toBe(NOTE);
    expect(served.stderr).toContain('"msg":"server stopped"');
    run("/usr/lib/wine/wineserver64", ["-k"], { env });
  });
});

describe("what cannot run here", () => {
  test("linux-x64-musl: Debian's musl loader loads it, and the one library it lacks is a musl libstdc++", () => {
    const r = run(join(release, "slivingdoc-linux-x64-musl"), ["--version"]);
    expect(r.status).toBe(127);
    const lines = r.stderr.split("\n").filter(Boolean);
    expect(lines[0]).toBe(`Error loading shared library libstdc++.so.6: No such file or directory (needed by ${join(release, "slivingdoc-linux-x64-musl")})`);
    expect(lines.filter((l) => l.startsWith("Error loading shared library"))).toHaveLength(1);
  });
});
