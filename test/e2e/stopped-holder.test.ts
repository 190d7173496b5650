/**
 * A call on a checkout that is stopped (SIGSTOP: a debugger, Ctrl-Z, a
 * frozen container) while it holds the checkout's lock. Once it has been
 * silent for the lock's 30 s, another call takes the checkout over; when the
 * stopped one is continued, it must change nothing more — no state file, no
 * visible file, and not its successor's lock (checkout/lock.ts). A holder
 * that runs, however long it takes, keeps its lock.
 *
 * The 30 s of silence are not waited for: the test sets the lock's time
 * back, which is all a stopped holder's silence does to it.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, utimesSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { DomainError } from "../../src/contract/errors.ts";
import { commit } from "../../src/engine/commit.ts";
import type { EngineDeps } from "../../src/engine/engine.ts";
import { pull } from "../../src/engine/pull.ts";
import { ProcessMemory } from "../../src/engine/process-memory.ts";
import { openSqliteStore } from "../../src/store/sqlite.ts";
import { isProcessAlive, isProcessStopped, processStartTime } from "../../src/surfaces/process-identity.ts";
import { read, seedNotebook, write } from "../support/fixture.ts";
import { waitFor } from "../support/wait.ts";
import { SYSTEM_CLOCK, SYSTEM_RANDOM } from "../../src/surfaces/engine-deps.ts";

const root = mkdtempSync(join(tmpdir(), "slivingdoc-stopped-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));
const worker = join(import.meta.dir, "crash-worker.ts");

function world(name: string) {
  const dir = join(root, name);
  const storeFile = join(dir, "store.db");
  const privateRoot = join(dir, "private");
  /** An engine call as another process on this host makes it: this process's identity, judged as the CLI judges one. */
  const run = async <T>(fn: (d: EngineDeps) => Promise<T>, extra: Partial<EngineDeps> = {}): Promise<T> => {
    const d: EngineDeps = {
      ...SYSTEM_CLOCK,
      ...SYSTEM_RANDOM,
      store: openSqliteStore(storeFile, SYSTEM_CLOCK),
      storeId: `sqlite:${storeFile}`,
      privateRoot,
      self: { pid: process.pid, isAlive: isProcessAlive, startTime: processStartTime, isStopped: isProcessStopped },
      memory: new ProcessMemory(SYSTEM_RANDOM),
      commitRetries: 10,
      ...extra,
    };
    try {
      return await fn(d);
    } finally {
      await d.store.close();
    }
  };
  const spawn = (op: "pull" | "commit", checkout: string, point: string) =>
    Bun.spawn([process.execPath, worker, op, checkout, point], {
      env: { ...(process.env as Record<string, string>), SLIVINGDOC_STORE: `sqlite:${storeFile}`, SLIVINGDOC_PRIVATE_ROOT: privateRoot },
      stdout: "pipe",
      stderr: "pipe",
    });
  /** The lock files under the private root (one checkout's at most, in these tests). */
  const locks = () => {
    const base = join(privateRoot, "checkouts");
    return existsSync(base)
      ? readdirSync(base)
          .map((id) => join(base, id, "lock"))
          .filter((f) => existsSync(f))
      : [];
  };
  const lockOf = () => {
    const held = locks();
    expect(held.length).toBe(1);
    return held[0]!;
  };
  /** Whether a call is writing visible files (its journal is there). */
  const journaled = () => {
    const base = join(privateRoot, "checkouts");
    return existsSync(base) && readdirSync(base).some((id) => existsSync(join(base, id, "journal.json")));
  };
  const stateOf = (checkout: string) => {
    const base = join(privateRoot, "checkouts");
    for (const id of readdirSync(base)) {
      const file = join(base, id, "state.json");
      if (!existsSync(file)) continue;
      const state = JSON.parse(readFileSync(file, "utf8")) as { checkout: string; baseline: { generation: number } };
      if (state.checkout === checkout) return state;
    }
    throw new Error(`no state for ${checkout}`);
  };
  return { dir: (n: string) => join(dir, n), run, spawn, lockOf, stateOf, journaled };
}

/** Wait until process `pid` is in one of `states` (/proc/PID/stat). */
async function until(pid: number, states: string[]): Promise<void> {
  const state = () => {
    const stat = readFileSync(`/proc/${pid}/stat`, "latin1");
    return stat.slice(stat.lastIndexOf(")") + 2, stat.lastIndexOf(")") + 3);
  };
  await waitFor(() => states.includes(state()), `process ${pid} to reach ${states.join("/")}`);
}

/** The lock's time set back past the 30 s a silent holder is given. */
function silence(lock: string): void {
  const then = Date.now() / 1000 - 40;
  utimesSync(lock, then, then);
}

/** a and b share a notebook; b published twice since a pulled (generation 3 by the time a's successor call runs); a has an unpublished edit. */
async function twoWriters(name: string) {
  const w = world(name);
  const a = w.dir("a");
  const b = w.dir("b");
  await seedNotebook(w.run, a, { "shared.md": "one\ntwo\nthree\nfour\nfive\n" });
  await w.run((d) => pull(d, { path: b }));
  write(b, "shared.md", "one by b\ntwo\nthree\nfour\nfive\n");
  write(b, "old.md", "b's file\n");
  await w.run((d) => commit(d, { path: b, message: "b 1" }));
  write(a, "mine.md", "a's unpublished edit\n");
  return { ...w, a, b };
}

describe("a call stopped while it holds the checkout, taken over, then continued", () => {
  for (const [op, at] of [
    ["pull", "materialize"],
    ["pull", "write:1"],
    ["pull", "baseline"],
    ["commit", "publish"],
    ["commit", "write:1"],
  ] as const) {
    test(`${op} stopped at ${at}: the continued call changes nothing, and its successor's lock stays`, async () => {
      const { a, b, run, spawn, lockOf, stateOf, dir } = await twoWriters(`${op}-${at.replace(":", "-")}`);
      const stopped = spawn(op, a, `stop:${at}`);
      await until(stopped.pid, ["T", "t"]);
      silence(lockOf());
      write(b, "shared.md", "one by b\ntwo\nthree\nfour\nfive by b\n");
      await run((d) => commit(d, { path: b, message: "b 2" }));

      // The successor takes the checkout over, and holds it while the stopped call goes on.
      let successorLock = "";
      let answer = { code: -1 as number | null, stderr: "" };
      const onStage = async (stage: string) => {
        if (stage !== "diffstat") return;
        successorLock = readFileSync(lockOf(), "utf8");
        const before = statSync(lockOf()).ino;
        // Taken over only after 30 s of silence, a holder has not looked at its lock for at least that
        // long (it looks again after a second: checkout/lock.ts); the test set the time back instead.
        await Bun.sleep(1_100);
        process.kill(stopped.pid, "SIGCONT");
        answer = { code: await stopped.exited, stderr: await new Response(stopped.stderr).text() };
        // Its lock is where it was: the continued call did not remove it.
        expect(statSync(lockOf()).ino).toBe(before);
      };
      const pulled = await run((d) => pull(d, { path: a }), { onStage });
      expect(successorLock).not.toBe("");
      expect(pulled.generation).toBe(op === "commit" && at === "write:1" ? 4 : 3);

      // The continued call stopped with LOCAL_STATE, and moved nothing back.
      expect(answer.code).not.toBe(0);
      expect(answer.stderr).toContain("another call took the checkout over");
      expect(stateOf(a).baseline.generation).toBe(pulled.generation);
      expect(read(a, "shared.md")).toBe("one by b\ntwo\nthree\nfour\nfive by b\n");
      expect(read(a, "old.md")).toBe("b's file\n");
      expect(read(a, "mine.md")).toBe("a's unpublished edit\n");
      expect(readdirSync(a).filter((n) => n.startsWith(".slivingdoc-partial-"))).toEqual([]);
      // Nothing it had begun is waiting to be repaired, and the next commit has no conflict to answer.
      const committed = await run((d) => commit(d, { path: a, message: "a" }));
      expect(committed.files.map((f) => f.path)).toEqual(op === "commit" && at === "write:1" ? [] : ["mine.md"]);
      const fresh = dir("c");
      await run((d) => pull(d, { path: fresh }));
      expect(read(fresh, "mine.md")).toBe("a's unpublished edit\n");
      expect(read(fresh, "shared.md")).toBe("one by b\ntwo\nthree\nfour\nfive by b\n");
    });
  }
});

test("a holder that runs, however long, keeps its lock: the other call answers LOCAL_STATE and takes nothing over", async () => {
  const { a, run, spawn, lockOf, journaled } = await twoWriters("running");
  const running = spawn("pull", a, "sleep:materialize");
  try {
    await waitFor(journaled, "the running pull to write its journal");
    expect(journaled()).toBe(true);
    // Silent by its lock's time (a long merge holds the heartbeat back), but running.
    const lock = lockOf();
    const ino = statSync(lock).ino;
    silence(lock);
    const e = await run((d) => pull(d, { path: a }), { lockTimeoutMs: 1_500 }).then(
      () => null,
      (err: DomainError) => err,
    );
    expect(e?.reason).toBe("LOCAL_STATE");
    expect(statSync(lock).ino).toBe(ino);
  } finally {
    running.kill("SIGKILL");
    await running.exited;
  }
});
