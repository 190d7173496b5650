/**
 * The embedded store's writer queue (src/store/sqlite-queue.ts), with real
 * processes on one SQLite file: turns never overlap, come in the order the
 * writers arrived, and a writer killed in its turn holds no one up.
 */
import { afterAll, expect, test } from "bun:test";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { openSqliteStore } from "../../src/store/sqlite.ts";
import { queueIdentity } from "../../src/surfaces/process-identity.ts";
import { SYSTEM_CLOCK } from "../../src/surfaces/system-clock.ts";

const root = mkdtempSync(join(tmpdir(), "slivingdoc-queue-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));
const worker = join(import.meta.dir, "sqlite-queue-worker.ts");

function spawnWorker(file: string, log: string, id: string, turns: number, mode: "normal" | "die-in-turn" = "normal") {
  return Bun.spawn([process.execPath, worker, file, log, id, String(turns), mode], { stdout: "pipe", stderr: "inherit" });
}

test("six processes taking 5 turns each: no two turns overlap", async () => {
  const file = join(root, "overlap.db");
  const log = join(root, "overlap.log");
  openSqliteStore(file, SYSTEM_CLOCK).close();
  const workers = Array.from({ length: 6 }, (_, i) => spawnWorker(file, log, `w${i}`, 5));
  expect(await Promise.all(workers.map((w) => w.exited))).toEqual(Array(6).fill(0));
  const lines = readFileSync(log, "utf8").trim().split("\n");
  expect(lines).toHaveLength(60);
  // Every "in" is followed by the same writer's "out": turns are whole.
  for (let i = 0; i < lines.length; i += 2) {
    const [what, who] = lines[i]!.split(" ");
    expect([what, lines[i + 1]]).toEqual(["in", `out ${who}`]);
  }
});

test("turns come in the order writers lined up", async () => {
  const file = join(root, "order.db");
  const log = join(root, "order.log");
  const store = openSqliteStore(file, SYSTEM_CLOCK, { writer: queueIdentity() });
  const first = await store.queue!.enter();
  // Line up one at a time: each worker says it holds a ticket before the next starts.
  const workers = [];
  for (let i = 0; i < 4; i++) {
    const w = spawnWorker(file, log, `w${i}`, 1);
    const reader = w.stdout.getReader();
    const { value } = await reader.read();
    expect(new TextDecoder().decode(value)).toContain("queued");
    reader.releaseLock();
    workers.push(w);
  }
  first.end();
  expect(await Promise.all(workers.map((w) => w.exited))).toEqual([0, 0, 0, 0]);
  const ins = readFileSync(log, "utf8").trim().split("\n").filter((l) => l.startsWith("in"));
  expect(ins).toEqual(["in w0", "in w1", "in w2", "in w3"]);
  await store.close();
});

test("a writer killed in its turn holds no one up", async () => {
  const file = join(root, "killed.db");
  const log = join(root, "killed.log");
  openSqliteStore(file, SYSTEM_CLOCK).close();
  const dying = spawnWorker(file, log, "dying", 1, "die-in-turn");
  await dying.exited;
  expect(dying.signalCode).toBe("SIGKILL");
  expect(readFileSync(log, "utf8")).toBe("in dying\n");
  // Its ticket is still first in line; the next writer sees its process gone.
  const next = spawnWorker(file, log, "next", 1);
  expect(await next.exited).toBe(0);
  expect(readFileSync(log, "utf8")).toBe("in dying\nin next\nout next\n");
});
