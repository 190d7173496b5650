/**
 * The layers stay as the folder tree shows them (docs: README "For
 * contributors"): imports point down only — surfaces → engine → store →
 * contract — isomorphic-git is imported in one engine file, the AWS SDK in
 * one store file, and `process` is touched only by the surfaces and main.ts.
 */
import { expect, test } from "bun:test";
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join, relative } from "node:path";

const src = join(import.meta.dir, "../../src");
const files = (function walk(dir: string): string[] {
  return readdirSync(dir).flatMap((n) => (statSync(join(dir, n)).isDirectory() ? walk(join(dir, n)) : n.endsWith(".ts") ? [join(dir, n)] : []));
})(src).map((f) => relative(src, f));

const LAYERS = ["contract", "store", "engine", "surfaces"] as const;
const layerOf = (file: string) => LAYERS.indexOf(file.split("/")[0] as (typeof LAYERS)[number]);

/** Static imports and re-exports, dynamic `import()`, and `require()` (the surfaces load the engine lazily with it). */
function importsIn(text: string): string[] {
  return [
    ...text.matchAll(/^\s*(?:import|export)\s[^;]*?from\s+"([^"]+)"/gm),
    ...text.matchAll(/^\s*import\s+"([^"]+)"/gm),
    ...text.matchAll(/\bimport\(\s*"([^"]+)"\s*\)/g),
    ...text.matchAll(/\brequire\(\s*"([^"]+)"\s*\)/g),
  ].map((m) => m[1]!);
}

const imports = (file: string) => importsIn(readFileSync(join(src, file), "utf8"));

/** A file's code without its comments, which may name anything. */
const codeOf = (file: string) => readFileSync(join(src, file), "utf8").replace(/\/\*[\s\S]*?\*\/|\/\/.*$/gm, "");

test("the import finder sees every form of import", () => {
  expect(importsIn('import { a } from "./a.ts";\nimport "./d.ts";\nconst b = await import("./b.ts");\nconst c = require("./c.ts") as C;')).toEqual(["./a.ts", "./d.ts", "./b.ts", "./c.ts"]);
  // The lazy loads this test exists for are really seen.
  expect(imports("surfaces/engine-deps.ts")).toContain("../engine/engine.ts");
  expect(imports("surfaces/mcp/session.ts")).toContain("../../engine/discard-unchanged.ts");
});

test("imports point down the layers only", () => {
  const upward: string[] = [];
  for (const file of files) {
    const own = layerOf(file);
    if (own < 0) continue; // main.ts sits above every layer
    for (const spec of imports(file).filter((s) => s.startsWith("."))) {
      const target = relative(src, join(src, file, "..", spec));
      const layer = layerOf(target);
      if (layer > own) upward.push(`${file} → ${target}`);
    }
  }
  expect(upward).toEqual([]);
});

/**
 * The engine's parts, each a folder (its README says what it owns), from
 * the bottom floor up; the files at the engine's root are the operations,
 * on the top floor. A part imports its own floor and those below it only.
 */
const ENGINE_FLOORS = ["shapes", "patterns", "memory", "merge/xdiff", "git", "merge", "checkout", "publish", "history", "operations"] as const;

function engineFloor(file: string): number {
  const inside = file.slice("engine/".length);
  const part = ENGINE_FLOORS.filter((f) => f !== "operations" && inside.startsWith(`${f}/`)).sort((a, b) => b.length - a.length)[0] ?? "operations";
  return ENGINE_FLOORS.indexOf(part);
}

test("every engine file is in a part or among the operations, and every part has its README", () => {
  const folders = new Set(files.filter((f) => f.startsWith("engine/")).map((f) => f.split("/").slice(1, -1).join("/")).filter((d) => d !== ""));
  expect([...folders].filter((d) => !ENGINE_FLOORS.includes(d as (typeof ENGINE_FLOORS)[number])).sort()).toEqual([]);
  const readmes = ENGINE_FLOORS.filter((f) => f !== "operations").filter((f) => {
    try {
      return statSync(join(src, "engine", f, "README.md")).isFile();
    } catch {
      return false;
    }
  });
  expect(readmes).toEqual(ENGINE_FLOORS.filter((f) => f !== "operations"));
});

test("inside the engine, imports point down its floors only", () => {
  const upward: string[] = [];
  for (const file of files.filter((f) => f.startsWith("engine/"))) {
    for (const spec of imports(file).filter((s) => s.startsWith("."))) {
      const target = relative(src, join(src, file, "..", spec));
      if (target.startsWith("engine/") && engineFloor(target) > engineFloor(file)) upward.push(`${file} → ${target}`);
    }
  }
  expect(upward).toEqual([]);
});

test("no import circles, type-only imports counted", () => {
  const edges = new Map(files.map((f) => [f, imports(f).filter((s) => s.startsWith(".")).map((s) => relative(src, join(src, f, "..", s)))]));
  const circles: string[] = [];
  const state = new Map<string, "open" | "done">();
  const path: string[] = [];
  const visit = (f: string) => {
    state.set(f, "open");
    path.push(f);
    for (const t of edges.get(f) ?? []) {
      if (state.get(t) === "open") circles.push([...path.slice(path.indexOf(t)), t].join(" → "));
      else if (!state.has(t)) visit(t);
    }
    path.pop();
    state.set(f, "done");
  };
  for (const f of files) if (!state.has(f)) visit(f);
  expect(circles).toEqual([]);
});

/**
 * No hub: a file most of the code imports makes every walk through it go
 * back and forth, and every change to it touch everyone. So no file outside
 * contract/ (the tokens, errors and results everything answers with) is
 * imported by more than a third of the other files in src/; each part
 * declares what it needs in its own folder instead (the engine's ports,
 * engine/checkout/deps.ts and engine/engine.ts).
 */
function hubs(edges: Map<string, string[]>): string[] {
  const importers = new Map<string, Set<string>>();
  for (const [from, targets] of edges) for (const t of targets) importers.set(t, (importers.get(t) ?? new Set()).add(from));
  const bound = (edges.size - 1) / 3;
  return [...importers].filter(([t, by]) => !t.startsWith("contract/") && by.size > bound).map(([t, by]) => `${t} (${by.size} of ${edges.size - 1})`);
}

test("no file outside contract/ is imported by more than a third of the other files", () => {
  const edges = new Map(files.map((f) => [f, [...new Set(imports(f).filter((s) => s.startsWith(".")).map((s) => relative(src, join(src, f, "..", s))))]]));
  expect(hubs(edges)).toEqual([]);
  // The measure sees a hub, and lets contract/ be one.
  const star = (hub: string) => new Map([["a.ts", [hub]], ["b.ts", [hub]], ["c.ts", []], ["d.ts", []], [hub, []]]);
  expect(hubs(star("engine/hub.ts"))).toEqual(["engine/hub.ts (2 of 4)"]);
  expect(hubs(star("contract/errors.ts"))).toEqual([]);
});

test("isomorphic-git in one engine file, the AWS SDK in one store file", () => {
  const users = (pkg: RegExp) => files.filter((f) => imports(f).some((s) => pkg.test(s))).sort();
  expect(users(/^isomorphic-git/)).toEqual(["engine/git/object-cache.ts"]);
  expect(users(/^@aws-sdk\//)).toEqual(["store/s3.ts"]);
  expect(users(/^@modelcontextprotocol\//).every((f) => f.startsWith("surfaces/mcp/"))).toBe(true);
  expect(users(/^commander$/)).toEqual(["surfaces/cli/help.ts"]);
});

/**
 * Time and chance come in EngineDeps (contract/clock.ts), made by the
 * surfaces: the engine reads no clock, timer or random source itself, so a
 * test can set each. `new Date(x)` turns a value into a date and reads no
 * clock; `new Date()` does.
 */
const GLOBAL_TIME_AND_CHANCE = [
  /\bDate\.now\b/,
  /\bnew Date\(\s*\)/,
  /\bperformance\.now\b/,
  /\bMath\.random\b/,
  /\bBun\.sleep\b/,
  /\bsetTimeout\b/,
  /\brandomHex\b/,
  /\brandom-hex\.ts\b/,
  /\bgetRandomValues\b/,
  /\brandomUUID\b/,
  /\brandomBytes\b/,
];

test("the engine reads no clock, timer or random source of its own", () => {
  const reading = files.filter((f) => {
    if (!f.startsWith("engine/")) return false;
    const code = codeOf(f);
    return GLOBAL_TIME_AND_CHANCE.some((read) => read.test(code));
  });
  expect(reading).toEqual([]);
  // The check sees what it looks for.
  expect(GLOBAL_TIME_AND_CHANCE.some((read) => read.test("const at = Date.now();"))).toBe(true);
  expect(GLOBAL_TIME_AND_CHANCE.some((read) => read.test("const at = new Date(seconds * 1000);"))).toBe(false);
});

/**
 * A store reads the clock whoever opens it gives it (object-store.ts
 * StoreClock), so a test can set it. The call deadline (deadline.ts) is the
 * one exception: it is the process's own time limit, set by the surfaces
 * and read against the system timer its abort signal runs on.
 */
test("the stores read no clock of their own", () => {
  const CLOCK_READS = [/\bDate\.now\b/, /\bnew Date\(\s*\)/, /\bperformance\.now\b/];
  const reading = files.filter((f) => f.startsWith("store/") && f !== "store/deadline.ts" && CLOCK_READS.some((read) => read.test(codeOf(f))));
  expect(reading).toEqual([]);
});

/**
 * A kind of store is its files under src/store/ — its store, and its kind
 * (store/kind.ts), which parses its URL and flags and declares its
 * secrets, capabilities and probe — and one line in the store registry
 * (surfaces/stores.ts): no other code names one, so a new kind touches
 * nothing else (and one test: the conformance suite with its capabilities).
 */
test("only the store layer and the store registry name a kind of store", () => {
  const naming = files.filter((f) => {
    if (f.startsWith("store/") || f === "surfaces/stores.ts") return false;
    const code = codeOf(f);
    return /\b(sqlite|s3|S3|AWS_[A-Z_]+)\b/.test(code);
  });
  expect(naming).toEqual([]);
});

test("only the surfaces and main.ts touch `process`", () => {
  const touching = files.filter((f) => {
    if (f === "main.ts" || f.startsWith("surfaces/")) return false;
    const code = codeOf(f);
    return /\bprocess\.(?!exitCode)/.test(code);
  });
  expect(touching).toEqual([]);
});

/**
 * What every start loads: the modules main.ts reaches by static imports
 * (type-only ones cost nothing). The engine, the MCP SDK and the AWS SDK
 * stay out, loaded by `import()` or `require()` when a command needs them:
 * `serve` answers `initialize` before loading any of them
 * (docs/performance.md, scenario `start-up`).
 */
/** The modules `from` reach by static imports (type-only ones cost nothing), and the packages they import. */
function loadedBy(...from: string[]): { modules: string[]; packages: string[] } {
  const staticImports = (file: string) =>
    [...readFileSync(join(src, file), "utf8").matchAll(/^\s*(?:(?:import|export)\s+(?!type\s)[^;]*?from\s+|import\s+)"([^"]+)"/gm)].map((m) => m[1]!);
  const seen = new Set<string>();
  const packages = new Set<string>();
  const visit = (file: string) => {
    if (seen.has(file)) return;
    seen.add(file);
    for (const spec of staticImports(file)) {
      if (spec.startsWith(".")) visit(relative(src, join(src, file, "..", spec)));
      else packages.add(spec);
    }
  };
  for (const file of from) visit(file);
  return { modules: [...seen], packages: [...packages] };
}

/**
 * Every CLI call reads its state files and most read a manifest: checking
 * their shapes must not cost a schema library's construction on each start
 * (src/engine/shapes/schema.ts says what it cost).
 */
test("the engine checks its records' shapes without a schema library", () => {
  const { packages } = loadedBy(...files.filter((f) => f.startsWith("engine/")));
  expect(packages.filter((p) => /^zod/.test(p))).toEqual([]);
});

test("a start loads neither the engine nor the MCP or AWS SDKs", () => {
  const { modules, packages } = loadedBy("main.ts");
  expect(modules.filter((f) => f.startsWith("engine/"))).toEqual([]);
  expect(packages.filter((p) => /^@modelcontextprotocol\/|^@aws-sdk\/|^isomorphic-git|^zod/.test(p))).toEqual([]);
});

/**
 * `serve` runs the registry's entries that are tools, and renders none of
 * their results: what it loads (serve.ts, then server.ts once the handshake
 * is answered) holds no CLI code. The renderers are the CLI's, found by the
 * operation's name (surfaces/cli/renderers.ts).
 */
test("the MCP server loads no CLI code", () => {
  const { modules } = loadedBy("surfaces/mcp/serve.ts", "surfaces/mcp/server.ts");
  expect(modules).toContain("surfaces/operations.ts");
  expect(modules.filter((f) => f.startsWith("surfaces/cli/"))).toEqual([]);
});

/** The files of src/ that `file` imports in any form (static, `import()`, `require()`). */
const importedBy = (file: string) => imports(file).filter((s) => s.startsWith(".")).map((s) => relative(src, join(src, file, "..", s)));

/**
 * Neither the MCP server nor the registry's entries import the CLI, in any
 * form: an entry holds no rendering, and no lazy `require()` of the CLI's
 * code stands in for one.
 */
test("neither the MCP server nor the operations registry imports the CLI", () => {
  const clean = files.filter((f) => f.startsWith("surfaces/mcp/") || f.startsWith("surfaces/operations") || f === "surfaces/operation.ts");
  expect(clean).toContain("surfaces/operations.ts");
  expect(clean).toContain("surfaces/mcp/server.ts");
  const intoCli = clean.flatMap((f) => importedBy(f).filter((t) => t.startsWith("surfaces/cli/")).map((t) => `${f} → ${t}`));
  expect(intoCli).toEqual([]);
});
