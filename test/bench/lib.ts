/**
 * Shared pieces of the benchmark suite (`npm run bench`, test/bench/run.ts):
 * timing and statistics, deterministic notebooks, the two stores, C git,
 * the built binary as an MCP server, and the "floor" — the bare store
 * requests a commit or a pull cannot avoid.
 *
 * Nothing here is a test: the suite measures and reports; it never asserts
 * beyond what it needs to trust a measurement (a failed call aborts it).
 */
import { spawn, spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { commit } from "../../src/engine/commit.ts";
import type { EngineDeps } from "../../src/engine/engine.ts";
import { MANIFEST_KEY, packKey } from "../../src/engine/publish/manifest.ts";
import { pull } from "../../src/engine/pull.ts";
import { ProcessMemory } from "../../src/engine/process-memory.ts";
import type { ObjectStore } from "../../src/store/object-store.ts";
import { createS3Store } from "../../src/store/s3.ts";
import { openSqliteStore } from "../../src/store/sqlite.ts";
import { isProcessAlive } from "../../src/surfaces/process-identity.ts";
import { isolatedGitEnv, mulberry32 } from "../support/seeded.ts";
import { SYSTEM_CLOCK, SYSTEM_RANDOM } from "../../src/surfaces/engine-deps.ts";

export const ROOT = join(import.meta.dir, "../..");
/** The binary under test; SLIVINGDOC_BENCH_BINARY compares another build (e.g. one compiled with bytecode). */
export const BINARY = process.env.SLIVINGDOC_BENCH_BINARY || join(ROOT, "dist/slivingdoc");
export const BUN = process.execPath;

// ------------------------------------------------------------ statistics --

export function median(xs: number[]): number {
  return percentile(xs, 50);
}

/** Nearest-rank percentile (p in 0..100) of a non-empty sample. */
export function percentile(xs: number[], p: number): number {
  if (xs.length === 0) return Number.NaN;
  const sorted = [...xs].sort((a, b) => a - b);
  const rank = Math.max(1, Math.ceil((p / 100) * sorted.length));
  return sorted[Math.min(rank, sorted.length) - 1]!;
}

export async function timed<T>(fn: () => Promise<T>): Promise<{ ms: number; value: T }> {
  const t0 = performance.now();
  const value = await fn();
  return { ms: performance.now() - t0, value };
}

export function log(line: string): void {
  process.stderr.write(`bench: ${line}\n`);
}

// ------------------------------------------------------------- notebooks --

const WORDS =
  "the agent notes plan decided ship review merge commit pull store pack tree file line draft open question answer risk owner date next step blocked done todo context summary because therefore however"
    .split(" ");

/** Deterministic prose of about `bytes` bytes, in lines of 6–14 words. */
export function prose(rand: () => number, bytes: number): string {
  const lines: string[] = [];
  let size = 0;
  while (size < bytes) {
    const n = 6 + Math.floor(rand() * 9);
    const words: string[] = [];
    for (let i = 0; i < n; i++) words.push(WORDS[Math.floor(rand() * WORDS.length)]!);
    const line = `${words.join(" ")}\n`;
    lines.push(line);
    size += line.length;
  }
  return lines.join("");
}

/**
 * A notebook of `files` UTF-8 files of about `bytesPerFile` bytes, 100 to a
 * directory (d000/f0000.md …), the same for the same seed: slivingdoc and
 * C git always get byte-identical trees.
 */
export function notebookFiles(files: number, bytesPerFile: number, seed = 1): Map<string, string> {
  const rand = mulberry32(seed);
  const out = new Map<string, string>();
  for (let i = 0; i < files; i++) {
    const dir = `d${String(Math.floor(i / 100)).padStart(3, "0")}`;
    out.set(`${dir}/f${String(i).padStart(5, "0")}.md`, `# note ${i}\n\n${prose(rand, bytesPerFile - 16)}`);
  }
  return out;
}

export function writeTree(dir: string, files: Map<string, string>): void {
  for (const [path, text] of files) {
    const file = join(dir, path);
    mkdirSync(dirname(file), { recursive: true });
    writeFileSync(file, text);
  }
}

export function treeBytes(files: Map<string, string>): number {
  let n = 0;
  for (const t of files.values()) n += Buffer.byteLength(t);
  return n;
}

export function tempDir(name: string): string {
  return mkdtempSync(join(tmpdir(), `slivingdoc-bench-${name}-`));
}

// ---------------------------------------------------------------- stores --

export interface S3Env {
  bucket: string;
  endpoint: string;
  region: string;
  forcePathStyle: boolean;
  /** Credentials and endpoint for child processes (from the RGW env file). */
  childEnv: Record<string, string>;
}

export function s3FromEnv(): S3Env | null {
  const e = process.env;
  const bucket = e.SLIVINGDOC_TEST_S3_BUCKET;
  const endpoint = e.AWS_ENDPOINT_URL_S3 ?? e.AWS_ENDPOINT_URL;
  if (!bucket || !endpoint) return null;
  const childEnv: Record<string, string> = {};
  for (const k of ["AWS_ENDPOINT_URL_S3", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_REGION", "S3_FORCE_PATH_STYLE"]) {
    if (e[k] !== undefined) childEnv[k] = e[k]!;
  }
  return { bucket, endpoint, region: e.AWS_REGION ?? "us-east-1", forcePathStyle: e.S3_FORCE_PATH_STYLE === "1", childEnv };
}

/**
 * One notebook location for one scenario run: a fresh SQLite file, or a
 * fresh prefix of the RGW bucket. `flags` are the CLI/server flags that
 * point slivingdoc at it; `open()` gives an in-process store on it.
 */
export interface Location {
  kind: "sqlite" | "s3";
  label: string;
  flags: string[];
  env: Record<string, string>;
  storeId: string;
  open(): ObjectStore;
  /** Remove everything stored (the RGW is in RAM; keep it small). */
  dispose(): Promise<void>;
}

let locationCounter = 0;
const runId = Math.random().toString(16).slice(2, 8);

export function sqliteLocation(dir: string): Location {
  const file = join(dir, `store-${++locationCounter}.db`);
  return {
    kind: "sqlite",
    label: "sqlite",
    flags: ["--store", `sqlite:${file}`],
    env: {},
    storeId: `sqlite:${file}`,
    open: () => openSqliteStore(file, SYSTEM_CLOCK),
    dispose: async () => {
      for (const suffix of ["", "-wal", "-shm"]) rmSync(file + suffix, { force: true });
    },
  };
}

export function s3Location(s3: S3Env, name: string): Location {
  const prefix = `bench-${runId}/${name}-${++locationCounter}`;
  const open = () =>
    createS3Store({ bucket: s3.bucket, prefix, region: s3.region, endpoint: s3.endpoint, forcePathStyle: s3.forcePathStyle, clock: SYSTEM_CLOCK });
  return {
    kind: "s3",
    label: "s3 (Ceph RGW)",
    flags: ["--store", `s3://${s3.bucket}/${prefix}`, "--endpoint", s3.endpoint, ...(s3.forcePathStyle ? ["--force-path-style"] : [])],
    env: s3.childEnv,
    storeId: `s3://${s3.bucket}/${prefix}/@${s3.endpoint}`,
    open,
    dispose: async () => {
      const store = open();
      try {
        const keys = (await store.list("")).map((o) => o.key);
        for (let i = 0; i < keys.length; i += 16) await Promise.all(keys.slice(i, i + 16).map((k) => store.delete(k)));
      } finally {
        await store.close();
      }
    },
  };
}

/** The bench process's process memory, shared by its in-process calls as a server's would be. */
const benchMemory = new ProcessMemory(SYSTEM_RANDOM);

/** Engine dependencies for in-process work (seeding, writers) on a location. */
export function engineDepsFor(store: ObjectStore, loc: Location, privateRoot: string, overrides: Partial<EngineDeps> = {}): EngineDeps {
  mkdirSync(privateRoot, { recursive: true });
  return {
    ...SYSTEM_CLOCK,
    ...SYSTEM_RANDOM,
    store,
    storeId: loc.storeId,
    privateRoot,
    self: { pid: process.pid, isAlive: isProcessAlive },
    memory: benchMemory,
    commitRetries: 10,
    ...overrides,
  };
}

/** Publish `files` as one commit through the engine (pull, write, commit). */
export async function seedNotebook(deps: EngineDeps, dir: string, files: Map<string, string>, message = "seed"): Promise<number> {
  await pull(deps, { path: dir });
  writeTree(dir, files);
  const out = await commit(deps, { path: dir, message });
  return out.generation;
}

// ----------------------------------------------------------------- floor --

/** A pack-sized body of incompressible bytes, unique per call (create-only must create). */
export function randomBody(bytes: number): Uint8Array {
  const body = new Uint8Array(bytes);
  for (let i = 0; i < bytes; i += 65536) crypto.getRandomValues(body.subarray(i, Math.min(bytes, i + 65536)));
  return body;
}

/**
 * The floor of a commit: read `current`, write one pack create-only, one
 * conditional write of `current` — the three requests no commit can avoid —
 * issued with the same store code (so the same SDK and client settings)
 * against the same server, on a key of its own. Returns milliseconds.
 */
export async function commitFloor(store: ObjectStore, packBytes: number, key = "floor/current"): Promise<number> {
  const body = randomBody(packBytes);
  const sha = createHash("sha256").update(body).digest("hex");
  const manifest = new TextEncoder().encode(JSON.stringify({ floor: sha, at: Date.now() }));
  const t0 = performance.now();
  const cur = await store.get(key);
  const put = await store.putIfAbsent(`floor/${packKey(sha)}`, body);
  if (!put.ok) throw new Error("floor: pack key existed");
  const cas = cur === null ? await store.putIfAbsent(key, manifest) : await store.putIfMatch(key, manifest, cur.etag);
  const ms = performance.now() - t0;
  if (!cas.ok) throw new Error("floor: conditional write lost (nobody else writes this key)");
  return ms;
}

/** The floor of a pull: read `current` and one pack of the given key. */
export async function pullFloor(store: ObjectStore, packKeyName: string): Promise<number> {
  const t0 = performance.now();
  const cur = await store.get(MANIFEST_KEY);
  const pack = await store.get(packKeyName);
  const ms = performance.now() - t0;
  if (cur === null || pack === null) throw new Error("pull floor: missing object");
  return ms;
}

/**
 * The single-key conditional-write rate: one writer chaining compare-and-swap
 * writes on one key, each with the ETag the previous one returned — the most
 * publications per second `current` can take. Writes per second.
 */
export async function casRate(store: ObjectStore, writes: number, key = "floor/cas-rate"): Promise<number> {
  const body = (i: number) => new TextEncoder().encode(JSON.stringify({ i, pad: "x".repeat(400) }));
  let etag: string;
  const first = await store.get(key);
  if (first === null) {
    const r = await store.putIfAbsent(key, body(-1));
    if (!r.ok) throw new Error("cas rate: create lost");
    etag = r.etag;
  } else etag = first.etag;
  const t0 = performance.now();
  for (let i = 0; i < writes; i++) {
    const r = await store.putIfMatch(key, body(i), etag);
    if (!r.ok) throw new Error("cas rate: a conditional write lost with a single writer");
    etag = r.etag;
  }
  return (writes * 1000) / (performance.now() - t0);
}

/**
 * The protocol's own limit: one writer looping `GET current` + conditional
 * `PUT` of it, the fastest any coordinator-free protocol can publish one
 * change after another (commits per second).
 */
export async function readCasRate(store: ObjectStore, writes: number, key = "floor/read-cas-rate"): Promise<number> {
  const body = (i: number) => new TextEncoder().encode(JSON.stringify({ i, pad: "x".repeat(400) }));
  if ((await store.get(key)) === null && !(await store.putIfAbsent(key, body(-1))).ok) throw new Error("read-cas rate: create lost");
  const t0 = performance.now();
  for (let i = 0; i < writes; i++) {
    const read = await store.get(key);
    if (read === null || !(await store.putIfMatch(key, body(i), read.etag)).ok) throw new Error("read-cas rate: a write lost with a single writer");
  }
  return (writes * 1000) / (performance.now() - t0);
}

// ----------------------------------------------------------------- C git --

export function gitEnv(home: string): Record<string, string> {
  mkdirSync(home, { recursive: true });
  return {
    ...isolatedGitEnv(home),
    GIT_AUTHOR_NAME: "bench",
    GIT_AUTHOR_EMAIL: "bench@localhost",
    GIT_COMMITTER_NAME: "bench",
    GIT_COMMITTER_EMAIL: "bench@localhost",
  };
}

export function git(env: Record<string, string>, cwd: string, ...args: string[]): string {
  const r = spawnSync("git", args, { cwd, env, encoding: "utf8", maxBuffer: 256 * 1024 * 1024 });
  if (r.status !== 0) throw new Error(`git ${args.join(" ")} failed: ${r.stderr}`);
  return r.stdout;
}

/** Time one child process from spawn to exit (ms); it must succeed. */
export async function timeProcess(cmd: string, args: string[], opts: { cwd?: string; env?: Record<string, string> } = {}): Promise<number> {
  return new Promise((resolve, reject) => {
    const t0 = performance.now();
    const child = spawn(cmd, args, { cwd: opts.cwd, env: opts.env, stdio: ["ignore", "ignore", "pipe"] });
    let err = "";
    child.stderr.on("data", (c: Buffer) => (err += c.toString()));
    child.on("error", reject);
    child.on("exit", (code) => {
      const ms = performance.now() - t0;
      if (code === 0) resolve(ms);
      else reject(new Error(`${cmd} ${args.join(" ")} exited ${code}: ${err.slice(0, 2000)}`));
    });
  });
}

/**
 * C git's reference for a no-change pull, flags pinned: plain status, no
 * untracked cache, no fsmonitor (a user's config must not speed it up).
 */
export const GIT_STATUS_ARGS = ["-c", "core.untrackedCache=false", "-c", "core.fsmonitor=false", "status", "--porcelain"];

/** A checkout driven by whole CLI processes of `binary`, with its own private state and HOME. */
export interface CliCheckout {
  binary: string;
  dir: string;
  env: Record<string, string>;
  /** The store flags and the private root, after the command's own arguments. */
  flags: string[];
}

export function cliCheckout(binary: string, loc: Location, root: string, name: string): CliCheckout {
  const home = join(root, `${name}-home`);
  mkdirSync(home, { recursive: true });
  return {
    binary,
    dir: join(root, name),
    env: { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: home, TMPDIR: tmpdir(), ...loc.env },
    flags: [...loc.flags, "--private-root", join(root, `${name}-private`)],
  };
}

/** One whole CLI process on the checkout (`pull`, `commit -m …`), timed from spawn to exit. */
export function timeCli(c: CliCheckout, command: string, ...args: string[]): Promise<number> {
  return timeProcess(c.binary, [command, c.dir, ...args, ...c.flags], { env: c.env });
}

/** The runtime's own start: `--version` of the same binary, in the same environment. */
export function timeVersion(c: CliCheckout): Promise<number> {
  return timeProcess(c.binary, ["--version"], { env: c.env });
}

/**
 * A whole process's time split in two (ms): the runtime's start, and the
 * rest, the command's own work. A CLI process logs no stage records, so
 * this is its stage profile in the report.
 */
export function processProfile(wholeMs: number, versionMs: number): Record<string, number> {
  const round = (ms: number) => Math.round(ms * 10) / 10;
  return { "runtime start (--version)": round(versionMs), "own work": round(wholeMs - versionMs) };
}

/**
 * Timed steps taken in turn, round after round, after one uncounted run of
 * each (warm caches): a shared machine's noise falls on every step alike.
 * Each step gets its round number; returns each step's samples.
 */
export async function alternate(rounds: number, steps: Array<(round: number) => Promise<number>>): Promise<number[][]> {
  for (const step of steps) await step(-1);
  const out = steps.map(() => [] as number[]);
  for (let i = 0; i < rounds; i++) {
    for (let s = 0; s < steps.length; s++) out[s]!.push(await steps[s]!(i));
  }
  return out;
}

/**
 * A C git world for one tree: a bare repository (the "remote", reached over
 * file:// so git runs its real transport) and a working clone with the tree
 * committed and pushed.
 */
export function gitWorld(dir: string, files: Map<string, string>): { env: Record<string, string>; bare: string; work: string; url: string } {
  const env = gitEnv(join(dir, "home"));
  const bare = join(dir, "remote.git");
  const work = join(dir, "work");
  git(env, dir, "init", "-q", "--bare", "-b", "main", bare);
  git(env, dir, "init", "-q", "-b", "main", work);
  writeTree(work, files);
  git(env, work, "add", "-A");
  git(env, work, "commit", "-q", "-m", "seed");
  const url = `file://${bare}`;
  git(env, work, "push", "-q", url, "main");
  git(env, work, "remote", "add", "origin", url);
  git(env, work, "fetch", "-q", "origin");
  git(env, work, "branch", "-q", "-u", "origin/main");
  return { env, bare, work, url };
}

// ------------------------------------------------------------ MCP server --

/** One completion record of the server log: the call's stage timings. */
export interface Completion {
  tool: string;
  outcome: string;
  durationMs: number;
  stages: Record<string, number>;
}

export interface Server {
  client: Client;
  pid: number;
  completions: Completion[];
  call(tool: "notes_pull" | "notes_commit", args: Record<string, unknown>): Promise<Record<string, unknown>>;
  /** The same, but an error result is returned instead of thrown. */
  tryCall(tool: "notes_pull" | "notes_commit", args: Record<string, unknown>): Promise<CallOutcome>;
  /** VmHWM of the server process in MB (its peak resident set so far). */
  peakMb(): number;
  close(): Promise<void>;
}

/** Start `dist/slivingdoc serve` with the SDK's Client over stdio, as a host does. */
/** What one tool call or CLI process answered: whether it was OK, and its structured result; a CLI process's CPU time (ms, the OS's accounting). */
export type CallOutcome = { ok: boolean; data: Record<string, unknown>; cpuMs?: number };

/** N `serve` processes on `loc`, server i with workspace `w<i>` and private root `p<i>` under `root`, one HOME. */
export function startServers(loc: Location, root: string, n: number): Promise<Server[]> {
  return Promise.all(
    Array.from({ length: n }, (_, i) => startServer(loc, { privateRoot: join(root, `p${i}`), workspace: join(root, `w${i}`), home: join(root, "home") })),
  );
}

/**
 * `slivingdoc ARGS --json w<i>` as a whole process, checkout i's private root
 * `p<i>` under `root`, as agents with a shell run it; a process that prints no
 * JSON result is an error naming the start of its stderr.
 */
export function cliRunner(loc: Location, root: string): (i: number, ...args: string[]) => Promise<CallOutcome> {
  const env: Record<string, string> = { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: join(root, "home"), ...loc.env };
  return async (i, ...args) => {
    const p = Bun.spawn([BINARY, ...args, ...loc.flags, "--private-root", join(root, `p${i}`), "--json", join(root, `w${i}`)], {
      env,
      stdout: "pipe",
      stderr: "pipe",
    });
    const [out, err, code] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited]);
    const cpuMs = Number(p.resourceUsage()?.cpuTime.total ?? 0n) / 1000;
    try {
      return { ok: code === 0, data: JSON.parse(out) as Record<string, unknown>, cpuMs };
    } catch {
      throw new Error(`slivingdoc ${args[0]} exited ${code} without a JSON result: ${err.slice(0, 2000)}`);
    }
  };
}

/** `slivingdoc init` on the store, as an operator begins a team's notebook; throws unless it exits 0. */
export async function cliInit(loc: Location, root: string): Promise<void> {
  const env: Record<string, string> = { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: join(root, "home"), ...loc.env };
  const p = Bun.spawn([BINARY, "init", ...loc.flags, "--private-root", join(root, "init-private")], { env, stdout: "pipe", stderr: "pipe" });
  const [err, code] = await Promise.all([new Response(p.stderr).text(), p.exited]);
  if (code !== 0) throw new Error(`slivingdoc init exited ${code}: ${err.slice(0, 2000)}`);
}

export async function startServer(loc: Location, opts: { privateRoot: string; workspace: string; home: string; extraArgs?: string[] }): Promise<Server> {
  mkdirSync(opts.home, { recursive: true });
  mkdirSync(opts.workspace, { recursive: true });
  const env: Record<string, string> = {
    PATH: process.env.PATH ?? "/usr/bin:/bin",
    HOME: opts.home,
    TMPDIR: tmpdir(),
    ...loc.env,
  };
  const transport = new StdioClientTransport({
    command: BINARY,
    args: ["serve", ...loc.flags, "--private-root", opts.privateRoot, "--workspace-root", opts.workspace, ...(opts.extraArgs ?? [])],
    env,
    stderr: "pipe",
  });
  const completions: Completion[] = [];
  let buffered = "";
  let stderrTail = "";
  transport.stderr?.on("data", (chunk: Buffer) => {
    const text = chunk.toString("utf8");
    stderrTail = (stderrTail + text).slice(-4000);
    buffered += text;
    let nl: number;
    while ((nl = buffered.indexOf("\n")) >= 0) {
      const line = buffered.slice(0, nl);
      buffered = buffered.slice(nl + 1);
      try {
        const rec = JSON.parse(line) as Record<string, unknown>;
        if (rec.msg === "tool call completed") {
          completions.push({
            tool: String(rec.tool),
            outcome: String(rec.outcome),
            durationMs: Number(rec.durationMs),
            stages: (rec.stages ?? {}) as Record<string, number>,
          });
        }
      } catch {
        /* not a JSON record: a start-up refusal, shown on failure below */
      }
    }
  });
  const client = new Client({ name: "slivingdoc-bench", version: "1.0.0" });
  try {
    await client.connect(transport);
  } catch (e) {
    throw new Error(`the server did not start: ${(e as Error).message}\n${stderrTail}`);
  }
  const pid = transport.pid!;
  const tryCall: Server["tryCall"] = async (tool, args) => {
    // Long cold pulls must not hit the SDK's default 60 s request timeout.
    const result = await client.callTool({ name: tool, arguments: args }, undefined, { timeout: 30 * 60_000 });
    return { ok: result.isError !== true, data: result.structuredContent as Record<string, unknown> };
  };
  return {
    client,
    pid,
    completions,
    tryCall,
    async call(tool, args) {
      const { ok, data } = await tryCall(tool, args);
      if (!ok) throw new Error(`${tool} failed: ${JSON.stringify(data)}\n${stderrTail}`);
      return data;
    },
    peakMb() {
      const status = readFileSync(`/proc/${pid}/status`, "utf8");
      const m = /^VmHWM:\s+(\d+) kB$/m.exec(status);
      if (!m) throw new Error("no VmHWM in /proc status");
      return Number(m[1]) / 1024;
    },
    close: () => client.close(),
  };
}

/** The median of each stage over some completion records (the profile of a scenario). */
export function stageMedians(records: Completion[]): Record<string, number> {
  const names = new Set(records.flatMap((r) => Object.keys(r.stages)));
  const out: Record<string, number> = {};
  for (const n of names) out[n] = Math.round(median(records.map((r) => r.stages[n] ?? 0)) * 10) / 10;
  return out;
}

// ------------------------------------------------------------------ CPU --

/** Clock ticks per second of /proc's CPU times (USER_HZ: 100 on every Linux this runs on). */
const TICKS_PER_S = Number(spawnSync("getconf", ["CLK_TCK"], { encoding: "utf8" }).stdout.trim()) || 100;

/** The CPU time a running process has used so far (ms, user + system, the OS's accounting); 0 once it is gone. */
export function processCpuMs(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    // The command name may hold spaces: the fields after it are counted from its closing parenthesis.
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / TICKS_PER_S;
  } catch {
    return 0;
  }
}

/**
 * The processes of the S3 server the bench talks to, when it runs on this
 * machine (Ceph: the gateway and the object store daemon), by command name;
 * none elsewhere. Their CPU is the store's share of a scenario's cost.
 */
export function storeServerPids(): number[] {
  const pids: number[] = [];
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (["radosgw", "ceph-osd"].includes(readFileSync(`/proc/${entry}/comm`, "utf8").trim())) pids.push(Number(entry));
    } catch {
      /* gone meanwhile */
    }
  }
  return pids;
}

export function removeDir(dir: string): void {
  rmSync(dir, { recursive: true, force: true });
}
