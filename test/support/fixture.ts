/**
 * A temporary world for engine tests: a real SQLite store file, a private
 * root, and checkout directories, all removed afterwards.
 */
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync, existsSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, relative } from "node:path";
import type { EngineDeps } from "../../src/engine/engine.ts";
import { ProcessMemory } from "../../src/engine/process-memory.ts";
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
  const s = store ?? openSqliteStore(storeFile);
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
