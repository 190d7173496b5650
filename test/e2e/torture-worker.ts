/**
 * One worker of the torture run (test/e2e/torture.test.ts): the engine in
 * process on the store from the environment (resolveConfig/openStore, as the
 * CLI and race-worker.ts do), optionally behind the fault-injecting wrapper
 * with a seeded PRNG. It makes COMMITS commits; each appends a unique line
 * `wI cJ` to one shared file and to the worker's own file.
 *
 * On CONTENT_CONFLICT it resolves by keeping both sides' lines (drops the
 * marker lines, keeps every content line) and commits again; on a retryable
 * error it calls again, pulling first when the action says PULL. After
 * every failed call it checks that its unpublished line is still in the
 * visible files. At the end it leaves one unpublished line in two files,
 * pulls (under faults too), and checks they survived.
 *
 * stdout: one JSON line per acknowledged commit, then one summary line.
 * Usage: torture-worker.ts ID DIR COMMITS SEED FAULTY(0|1) SHARED_FILES
 */
import { appendFileSync, existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { DomainError } from "../../src/contract/errors.ts";
import { commit } from "../../src/engine/commit.ts";
import { pull } from "../../src/engine/pull.ts";
import type { StoreOperation } from "../../src/store/object-store.ts";
import { resolveConfig } from "../../src/surfaces/config.ts";
import { engineDeps, processMemory } from "../../src/surfaces/engine-deps.ts";
import { openStore } from "../../src/surfaces/stores.ts";
import { type Fault, faultyStore } from "../support/faulty-store.ts";
import { mulberry32 } from "../support/seeded.ts";

const [id, dir, commits, seed, faulty, sharedFiles] = [
  Number(process.argv[2]),
  process.argv[3]!,
  Number(process.argv[4]),
  Number(process.argv[5]),
  process.argv[6] === "1",
  Number(process.argv[7]),
];

/** The share of reads and conditional writes that meet a fault, in a faulty worker. */
const FAULT_RATE = 0.1;
/** One commit that needs more calls than this means something is stuck, not unlucky. */
const MAX_CALLS_PER_COMMIT = 200;

// Separate streams, so the faults drawn do not change which files are edited.
const editRnd = mulberry32(seed * 1009 + id);
const faultRnd = mulberry32(seed * 7919 + id * 31 + 1);
const faultKinds: Record<string, number> = {};

/**
 * The rarer faults of a conditional write of `current`, each met once for
 * sure by every faulty worker's first writes: drawn at random alone, a run
 * with few retries could meet none of one kind and prove nothing about it.
 */
const firstOnCurrent: Fault[] = ["lose-race", "lose-response", "drop-request"];

function pickFault(operation: StoreOperation, key: string): Fault | null {
  if (key === "current" && operation !== "get" && firstOnCurrent.length > 0) {
    const fault = firstOnCurrent.shift()!;
    faultKinds[fault] = (faultKinds[fault] ?? 0) + 1;
    return fault;
  }
  if (faultRnd() >= FAULT_RATE) return null;
  let kinds: Fault[];
  if (operation === "get") kinds = ["fail-before", "answer-500", "delay"];
  else if (key === "current") kinds = ["fail-before", "drop-request", "lose-response", "lose-race", "answer-500", "delay"];
  // A create-only pack write that "loses the race" would claim a pack exists
  // that does not: no real store can answer that for a content-addressed key
  // nobody else writes, so packs get every fault but that one.
  else kinds = ["fail-before", "drop-request", "lose-response", "answer-500", "delay"];
  const fault = kinds[Math.floor(faultRnd() * kinds.length)]!;
  faultKinds[fault] = (faultKinds[fault] ?? 0) + 1;
  return fault;
}

const config = resolveConfig({}, process.env, process.cwd());
const inner = await openStore(config.store);
const wrapped = faulty ? faultyStore(inner, pickFault, { delayMs: 150 }) : null;
const store = wrapped ?? inner;
const deps = engineDeps(config, store, processMemory().get());

const counts = { tried: 0, conflicted: 0, retried: 0, pulls: 0, lostLocal: 0 };
const lostLines: string[] = [];

const MARKER = /^(<{7}|={7}|>{7}|\|{7})( .*)?$/;

/** Keep both sides: drop the marker lines, keep every content line in order. */
function resolve(files: Array<{ path: string }>): void {
  for (const f of files) {
    const file = join(dir, f.path);
    const lines = readFileSync(file, "utf8").split("\n");
    writeFileSync(file, lines.filter((l) => !MARKER.test(l)).join("\n"));
  }
}

/** An unpublished line must still be visible after any failed call (markers around it are fine). */
function expectVisible(line: string, files: string[]): void {
  for (const f of files) {
    const file = join(dir, f);
    const text = existsSync(file) ? readFileSync(file, "utf8") : "";
    if (!text.split("\n").includes(line)) {
      counts.lostLocal++;
      lostLines.push(`${line} in ${f}`);
    }
  }
}

function asDomainError(e: unknown): DomainError {
  if (e instanceof DomainError) return e;
  throw e;
}

/** Pull until it answers OK or a conflict (resolved here); retryable errors are called again. */
async function pullUntilDone(pending: { line: string; files: string[] } | null): Promise<void> {
  for (let calls = 0; ; calls++) {
    if (calls > MAX_CALLS_PER_COMMIT) throw new Error(`w${id}: pull never succeeded`);
    counts.pulls++;
    try {
      await pull(deps, { path: dir });
      return;
    } catch (raw) {
      const e = asDomainError(raw);
      if (pending) expectVisible(pending.line, pending.files);
      if (e.code === "CONTENT_CONFLICT") {
        counts.conflicted++;
        resolve(e.files);
        return;
      }
      if (!e.retryable) throw e;
      counts.retried++;
    }
  }
}

await pullUntilDone(null);
const own = `own-w${id}.md`;
for (let j = 0; j < commits; j++) {
  const line = `w${id} c${j}`;
  const shared = `shared-${Math.floor(editRnd() * sharedFiles)}.md`;
  appendFileSync(join(dir, shared), `${line}\n`);
  appendFileSync(join(dir, own), `${line}\n`);
  const pending = { line, files: [shared, own] };
  for (let calls = 0; ; calls++) {
    if (calls > MAX_CALLS_PER_COMMIT) throw new Error(`w${id}: ${line} never landed`);
    counts.tried++;
    try {
      const r = await commit(deps, { path: dir, message: line });
      process.stdout.write(`${JSON.stringify({ ack: line, shared, generation: r.generation })}\n`);
      break;
    } catch (raw) {
      const e = asDomainError(raw);
      expectVisible(line, pending.files);
      if (e.code === "CONTENT_CONFLICT") {
        counts.conflicted++;
        resolve(e.files);
        continue;
      }
      if (!e.retryable) throw e;
      counts.retried++;
      if (e.action === "PULL") await pullUntilDone(pending);
    }
  }
}

// An edit left unpublished on purpose: a pull under faults must keep it.
const pendingLine = `w${id} pending`;
appendFileSync(join(dir, own), `${pendingLine}\n`);
appendFileSync(join(dir, "shared-0.md"), `${pendingLine}\n`);
await pullUntilDone({ line: pendingLine, files: [own, "shared-0.md"] });
expectVisible(pendingLine, [own, "shared-0.md"]);

const faults = wrapped?.injected ?? 0;
process.stdout.write(`${JSON.stringify({ summary: { id, faulty, ...counts, faults, faultKinds, lostLines } })}\n`);
await store.close();
