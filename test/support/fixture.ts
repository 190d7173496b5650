/**
 * A temporary world for engine tests: a real SQLite store file, a private
 * root, and checkout directories, all removed afterwards.
 */
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync, existsSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, relative } from "node:path";
import { commit } from "../../src/engine/commit.ts";
import type { EngineDeps } from "../../src/engine/engine.ts";
import { ProcessMemory } from "../../src/engine/process-memory.ts";
import { pull } from "../../src/engine/pull.ts";
import type { ObjectStore } from "../../src/store/object-store.ts";
import { openSqliteStore } from "../../src/store/sqlite.ts";
import { SYSTEM_CLOCK, SYSTEM_RANDOM } from "../../src/surfaces/engine-deps.ts";
import { isProcessAlive } from "../../src/surfaces/process-identity.ts";

export interface World {
  root: string;
  storeFile: string;
  privateRoot: string;
  store: ObjectStore;
  /** The process memory of the world's one "process": every deps() shares it. */
  memory: ProcessMemory;
  deps(overrides?: Partial<EngineDeps>): EngineDeps;
  checkout(name: string): string;
  close(): Promise<void>;
}


export function makeWorld(store?: ObjectStore, storeId?: string): World {
  const root = mkdtempSync(join(tmpdir(), "slivingdoc-test-"));
  const storeFile = join(root, "store.db");
  const privateRoot = join(root, "private");
  const s = store ?? openSqliteStore(storeFile, SYSTEM_CLOCK);
  const memory = new ProcessMemory(SYSTEM_RANDOM);
  return {
    root,
    storeFile,
    privateRoot,
    store: s,
    memory,
    deps: (overrides = {}) => ({
      ...SYSTEM_CLOCK,
      ...SYSTEM_RANDOM,
      store: s,
      storeId: storeId ?? `sqlite:${storeFile}`,
      privateRoot,
      self: { pid: process.pid, isAlive: isProcessAlive },
      memory,
      commitRetries: 10,
      ...overrides,
    }),
    checkout: (name) => join(root, "ws", name),
    close: async () => {
      await s.close();
      rmSync(root, { recursive: true, force: true });
    },
  };
}

export function write(dir: string, path: string, content: string | Uint8Array): void {
  const file = join(dir, path);
  mkdirSync(dirname(file), { recursive: true });
  writeFileSync(file, content);
}

export function read(dir: string, path: string): string | null {
  const file = join(dir, path);
  return existsSync(file) ? readFileSync(file, "utf8") : null;
}

/** How a test runs one engine call when each call is its own process (its own store handle and memory). */
export type Runner = <T>(op: (deps: EngineDeps) => Promise<T>) => Promise<T>;

/**
 * The set-up most scenarios start from: `dir` pulled, `files` written into
 * it, and published as one commit, "seed". Through `deps`, or through `run`
 * for each of the two calls.
 */
export async function seedNotebook(on: EngineDeps | Runner, dir: string, files: Record<string, string>): Promise<void> {
  const run: Runner = typeof on === "function" ? on : (op) => op(on);
  await run((d) => pull(d, { path: dir }));
  for (const [path, content] of Object.entries(files)) write(dir, path, content);
  await run((d) => commit(d, { path: dir, message: "seed" }));
}

/** How a command-line call ended: its exit code (null: killed) and what it wrote. */
export interface CliOutcome {
  code: number | null;
  stdout: string;
  stderr: string;
}

/**
 * The same set-up through the command line: `cli` runs the binary (or
 * `bun src/main.ts`) with these arguments as the test runs it elsewhere; a
 * call that fails stops the test with what it said. `wrote` is told of each
 * file written, before the commit.
 */
export async function seedNotebookByCli(
  cli: (args: string[]) => Promise<CliOutcome>,
  dir: string,
  files: Record<string, string>,
  wrote?: (file: string) => void,
): Promise<void> {
  const ok = async (args: string[]) => {
    const r = await cli(args);
    if (r.code !== 0) throw new Error(`slivingdoc ${args.join(" ")} exited ${r.code}\n${r.stdout}${r.stderr}`);
  };
  await ok(["pull", dir]);
  for (const [path, content] of Object.entries(files)) {
    write(dir, path, content);
    wrote?.(join(dir, path));
  }
  await ok(["commit", "-m", "seed", dir]);
}

/** The store's whole content, to prove a refusal changed nothing remote. */
export async function snapshotStore(store: ObjectStore): Promise<string> {
  const objects = await store.list("");
  const parts: string[] = [];
  for (const o of objects) {
    const got = await store.get(o.key);
    parts.push(`${o.key}:${got?.etag}:${o.size}`);
  }
  return parts.join("\n");
}

/** Run `fn` expecting a DomainError; return it. */
export async function refusal(fn: () => Promise<unknown>): Promise<import("../../src/contract/errors.ts").DomainError> {
  try {
    await fn();
  } catch (e) {
    if ((e as Error).name === "DomainError") return e as import("../../src/contract/errors.ts").DomainError;
    throw e;
  }
  throw new Error("expected a domain error, got success");
}

/** The store's manifest and its ETag, as a test reads them. */
export async function readCurrent(store: ObjectStore): Promise<{ manifest: import("../../src/engine/publish/manifest.ts").Manifest; etag: string }> {
  const { MANIFEST_KEY, parseManifest } = await import("../../src/engine/publish/manifest.ts");
  const got = await store.get(MANIFEST_KEY);
  return { manifest: parseManifest(got!.body), etag: got!.etag };
}

/** Every file below `dir`, by relative path, byte for byte (base64): to prove a refusal left every visible file as it was. */
export function filesOf(dir: string): Record<string, string> {
  const out: Record<string, string> = {};
  const walk = (d: string) => {
    for (const e of readdirSync(d, { withFileTypes: true })) {
      const full = join(d, e.name);
      if (e.isDirectory()) walk(full);
      else out[relative(dir, full)] = readFileSync(full).toString("base64");
    }
  };
  walk(dir);
  return out;
}
