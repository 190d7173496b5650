/**
 * start-up: start-up. From spawning `dist/slivingdoc serve` to its answer to MCP
 * `initialize` (a raw JSON-RPC line on stdin, the response line on stdout),
 * against spawning `bun -e 0` until it exits (bar ≤ 2×). Alternated, so
 * both see the same machine state.
 *
 * Why `bun -e 0` and not the literal `bun -e ''`: this Bun treats an empty
 * script as no script and prints its usage text without starting the
 * JavaScript runtime (about 3 ms here, against 8 ms for `-e 0`), which
 * would not measure a runtime start at all.
 */
import { spawn } from "node:child_process";
import { mkdirSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import * as L from "./lib.ts";
import type { Row } from "./report.ts";

const INITIALIZE = `${JSON.stringify({
  jsonrpc: "2.0",
  id: 1,
  method: "initialize",
  params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "bench", version: "1" } },
})}\n`;

/** Milliseconds from spawn to the initialize response; the server is then closed (not timed). */
function timeInitialize(args: string[], env: Record<string, string>): Promise<number> {
  return new Promise((resolve, reject) => {
    const t0 = performance.now();
    const child = spawn(L.BINARY, ["serve", ...args], { env, stdio: ["pipe", "pipe", "pipe"] });
    let out = "";
    let err = "";
    let done = false;
    child.stderr.on("data", (c: Buffer) => (err += c.toString()));
    child.stdout.on("data", (c: Buffer) => {
      out += c.toString();
      if (!done && out.includes("\n")) {
        done = true;
        const ms = performance.now() - t0;
        if (!out.includes('"id":1') || !out.includes('"result"')) reject(new Error(`unexpected answer: ${out}`));
        child.stdin.end();
        child.on("exit", () => resolve(ms));
      }
    });
    child.on("exit", (code) => {
      if (!done) reject(new Error(`serve exited ${code} before answering: ${err}`));
    });
    child.on("error", reject);
    child.stdin.write(INITIALIZE);
  });
}

export async function startupScenario(loc: L.Location, reps: number): Promise<Row[]> {
  const root = L.tempDir(`startup-${loc.kind}`);
  try {
    const home = join(root, "home");
    const ws = join(root, "ws");
    mkdirSync(home, { recursive: true });
    const env = { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: home, TMPDIR: tmpdir(), ...loc.env };
    const args = [...loc.flags, "--private-root", join(root, "private"), "--workspace-root", ws];
    // Once, not counted: S3's compatibility probe runs at the first start
    // and is then trusted for 24 hours (docs/s3.md); warm caches for both.
    await timeInitialize(args, env);
    await L.timeProcess(L.BUN, ["-e", "0"]);
    const serve: number[] = [];
    const bunE: number[] = [];
    for (let i = 0; i < reps; i++) {
      bunE.push(await L.timeProcess(L.BUN, ["-e", "0"], { env }));
      serve.push(await timeInitialize(args, env));
    }
    const m = L.median(serve);
    const b = L.median(bunE);
    return [
      {
        scenario: "start-up",
        store: loc.label,
        what: "spawn → MCP initialize answered",
        median: m,
        unit: "ms",
        comparison: "bun -e 0 (runtime start)",
        comparisonMedian: b,
        ratio: m / b,
        bar: "≤ 2×",
        met: m / b <= 2,
        samples: reps,
        values: serve,
        comparisonValues: bunE,
      },
    ];
  } finally {
    await loc.dispose();
    L.removeDir(root);
  }
}
