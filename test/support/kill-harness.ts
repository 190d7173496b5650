/**
 * Real processes of the built binary, SIGKILLed at a chosen instant: the
 * shared harness of the crash-point fuzzer (test/e2e/crash-fuzz.test.ts) and
 * the model-based test (test/e2e/model.test.ts).
 *
 * - `runCli` spawns `dist/slivingdoc ARGS`, optionally SIGKILLs it `killAfterMs`
 *   after the spawn, and always kills it once `timeoutMs` has passed (a call
 *   that waits that long is stuck, e.g. on a lock a dead process left).
 * - `startServe` runs `serve` through the raw MCP client (raw-mcp.ts) and
 *   times one tool call from the request to its answer, so a kill can land
 *   inside the call.
 * - `readTree` / `freshPull` read a checkout, or the store through a fresh
 *   pull into a new directory with a new private root.
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { BINARY, requireBinary } from "./mcp.ts";
import { spawnServe } from "./raw-mcp.ts";
import { removePrefixes } from "./s3-test-store.ts";

export type Tree = Map<string, string>;

export interface RunResult {
  /** Exit code, or null when killed. */
  code: number | null;
  /** Whether our SIGKILL ended it (false: it exited on its own before the kill). */
  killed: boolean;
  /** Whether it outlived `timeoutMs` and was killed for that. */
  timedOut: boolean;
  /** From the spawn to the exit, in milliseconds. */
  ms: number;
  stdout: string;
  stderr: string;
}

export interface RunOptions {
  killAfterMs?: number;
  /** Default 8 s: far above any call here (tens of ms, a second on a busy machine), far below the 30 s lock wait. */
  timeoutMs?: number;
}

export async function runCli(args: string[], env: Record<string, string>, options: RunOptions = {}): Promise<RunResult> {
  requireBinary();
  const started = performance.now();
  const p = Bun.spawn([BINARY, ...args], { env, stdin: "ignore", stdout: "pipe", stderr: "pipe" });
  let killed = false;
  let timedOut = false;
  const killer =
    options.killAfterMs !== undefined
      ? setTimeout(() => {
          if (p.exitCode === null && p.signalCode === null) {
            killed = true;
            p.kill("SIGKILL");
          }
        }, options.killAfterMs)
      : null;
  const guard = setTimeout(() => {
    timedOut = true;
    p.kill("SIGKILL");
  }, options.timeoutMs ?? 8_000);
  const [stdout, stderr] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text()]);
  await p.exited;
  const ms = performance.now() - started;
  if (killer) clearTimeout(killer);
  clearTimeout(guard);
  // Killed means killed by us while it ran: a process that already exited 0 was not.
  const wasKilled = killed && p.signalCode === "SIGKILL";
  return { code: p.signalCode ? null : p.exitCode, killed: wasKilled, timedOut, ms, stdout, stderr };
}

/** The structured answer of a `--json` call, or null. */
export function jsonOf(r: { stdout: string }): Record<string, unknown> | null {
  try {
    return JSON.parse(r.stdout) as Record<string, unknown>;
  } catch {
    return null;
  }
}

/** A wedged checkout: the call waited on a lock (or anything) until the guard, or answered LOCAL_STATE. */
export function waitedOnDeadProcess(r: RunResult): string | null {
  if (r.timedOut) return `the call was still running after ${Math.round(r.ms)} ms`;
  const j = jsonOf(r);
  if (j?.reason === "LOCAL_STATE" || /LOCAL_STATE/.test(r.stderr)) return `answered LOCAL_STATE after ${Math.round(r.ms)} ms: ${String(j?.message ?? r.stderr.trim())}`;
  return null;
}

/** Every regular file under `dir`, by relative path (partial files included: none may be left in sight). */
export function readTree(dir: string): Tree {
  const tree: Tree = new Map();
  const walk = (rel: string) => {
    let names: string[];
    try {
      names = readdirSync(join(dir, rel));
    } catch {
      return;
    }
    for (const name of names) {
      const path = rel === "" ? name : `${rel}/${name}`;
      const st = statSync(join(dir, path));
      if (st.isDirectory()) walk(path);
      else tree.set(path, readFileSync(join(dir, path), "utf8"));
    }
  };
  walk("");
  return tree;
}

export function showTree(t: Tree | undefined): string {
  if (!t) return "(none)";
  return `{${[...t.entries()]
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([k, v]) => `${k}: ${JSON.stringify(v)}`)
    .join(", ")}}`;
}

export function sameTree(a: Tree, b: Tree): boolean {
  if (a.size !== b.size) return false;
  for (const [k, v] of a) if (b.get(k) !== v) return false;
  return true;
}

/**
 * The accepted state as a new agent sees it: a pull into a new directory
 * with a new private root (nothing cached), removed afterwards.
 */
export async function freshPull(env: Record<string, string>, scratch: string): Promise<{ tree: Tree; generation: number }> {
  const dir = mkdtempSync(join(scratch, "fresh-"));
  const priv = mkdtempSync(join(scratch, "fresh-private-"));
  try {
    const r = await runCli(["pull", "--json", join(dir, "n")], { ...env, SLIVINGDOC_PRIVATE_ROOT: priv });
    const j = jsonOf(r);
    if (r.code !== 0 || j === null) throw new Error(`a fresh pull failed (exit ${r.code}): ${r.stdout}${r.stderr}`);
    return { tree: readTree(join(dir, "n")), generation: j.generation as number };
  } finally {
    rmSync(dir, { recursive: true, force: true });
    rmSync(priv, { recursive: true, force: true });
  }
}

export function scratchDir(name: string): string {
  return mkdtempSync(join(tmpdir(), `slivingdoc-${name}-`));
}

/** A running `serve`, driven over raw JSON-RPC so a tool call can be timed to the millisecond. */
export interface Serve {
  /** Send one tools/call; resolves with the answer and its round trip, or null if the process died first. */
  call(tool: string, args: Record<string, unknown>, killAfterMs?: number): Promise<{ answer: Record<string, unknown> | null; ms: number; killed: boolean }>;
  /** Close stdin and wait for the exit (or kill it). */
  stop(): Promise<void>;
}

export async function startServe(args: string[], env: Record<string, string>): Promise<Serve> {
  const s = spawnServe(env, args);
  await s.initialize().catch((e) => {
    throw s.ended ? new Error("serve ended before answering initialize") : e;
  });
  let nextId = 1;
  return {
    async call(tool, callArgs, killAfterMs) {
      const started = performance.now();
      let killed = false;
      const killer =
        killAfterMs !== undefined
          ? setTimeout(() => {
              if (s.child.exitCode === null) {
                killed = true;
                s.kill("SIGKILL");
              }
            }, killAfterMs)
          : null;
      const id = nextId++;
      s.callTool(id, tool, callArgs);
      // None when the process died first.
      const answer = await s.answer(id).catch((e) => {
        if (s.ended) return null;
        throw e;
      });
      const ms = performance.now() - started;
      if (killer) clearTimeout(killer);
      if (killed) await s.exited;
      // An answer that arrived before the kill was acknowledged: the kill came after the call.
      return { answer, ms, killed: killed && answer === null };
    },
    async stop() {
      try {
        s.endInput();
      } catch {
        /* already gone */
      }
      const t = setTimeout(() => s.kill("SIGKILL"), 10_000);
      await s.exited;
      clearTimeout(t);
    },
  };
}

/**
 * What a test made and must remove when it ends: scratch directories, and
 * key prefixes in the S3 test bucket (without their trailing "/").
 */
export function leftovers(): { scratches: string[]; prefixes: string[]; remove(): Promise<void> } {
  const scratches: string[] = [];
  const prefixes: string[] = [];
  return {
    scratches,
    prefixes,
    async remove() {
      for (const s of scratches) rmSync(s, { recursive: true, force: true });
      await removePrefixes(prefixes.map((p) => `${p}/`));
    },
  };
}
