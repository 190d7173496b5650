/**
 * Every refusal of the core asserts its exact tokens and that nothing
 * remote changed.
 */
import { afterEach, describe, expect, test } from "bun:test";
import { mkdirSync, readdirSync, readFileSync, utimesSync, writeFileSync } from "node:fs";
import { hostname } from "node:os";
import { dirname } from "node:path";
import { DomainError } from "../../src/contract/errors.ts";
import { commit } from "../../src/engine/commit.ts";
import { scanNotebook } from "../../src/engine/checkout/scan.ts";
import type { EngineDeps } from "../../src/engine/engine.ts";
import { readLocalChanges } from "../../src/engine/local-changes.ts";
import { pull } from "../../src/engine/pull.ts";
import { deadlineIn } from "../../src/store/deadline.ts";
import { openSqliteStore } from "../../src/store/sqlite.ts";
import { isProcessAlive, processStartTime } from "../../src/surfaces/process-identity.ts";
import { faultyStore } from "../support/faulty-store.ts";
import { makeWorld, read, refusal, seedNotebook, snapshotStore, type World, write } from "../support/fixture.ts";
import { waitFor } from "../support/wait.ts";
import { SYSTEM_CLOCK } from "../../src/surfaces/system-clock.ts";

let world: World;
afterEach(async () => {
  await world?.close();
});

const tokens = (e: { code: string; reason: string; action: string; retryable: boolean }) => [e.code, e.reason, e.action, e.retryable];

test("a notebook path that is not a directory is INVALID_CONTENT, not a path outside the root", () => {
  world = makeWorld();
  const file = world.checkout("a-file");
  mkdirSync(dirname(file), { recursive: true });
  writeFileSync(file, "not a directory\n");
  let e: unknown;
  try {
    scanNotebook(file);
  } catch (thrown) {
    e = thrown;
  }
  expect(e).toBeInstanceOf(DomainError);
  expect(tokens(e as DomainError)).toEqual(["INVALID_REQUEST", "INVALID_CONTENT", "EDIT_FILES", false]);
  // The same words as a first call refused before anything is created (test/e2e/edges.test.ts).
  expect((e as DomainError).message).toStartWith("The notebook path is a regular file, not a directory;");
});

describe("commit refusals before any store access", () => {
  test("a directory never pulled is PULL_REQUIRED, and the store is not even read", async () => {
    let touched = 0;
    world = makeWorld();
    const counting = faultyStore(world.store, () => {
      touched++;
      return null;
    });
    const dir = world.checkout("never");
    write(dir, "x.md", "x\n");
    const e = await refusal(() => commit(world.deps({ store: counting }), { path: dir, message: "m" }));
    expect(tokens(e)).toEqual(["INVALID_REQUEST", "PULL_REQUIRED", "PULL", false]);
    expect(touched).toBe(0);
    const missing = await refusal(() => commit(world.deps(), { path: world.checkout("does-not-exist"), message: "m" }));
    expect(tokens(missing)).toEqual(["INVALID_REQUEST", "PULL_REQUIRED", "PULL", false]);
  });

  test("message rules: blank, too long in bytes, NUL, lone surrogate; kept byte for byte otherwise", async () => {
    world = makeWorld();
    const dir = world.checkout("a");
    await pull(world.deps(), { path: dir });
    write(dir, "x.md", "x\n");
    const before = await snapshotStore(world.store);
    const cases: Array<[string, string]> = [
      ["", "MESSAGE_BLANK"],
      [" \t\n\u00a0\u2003\u3000", "MESSAGE_BLANK"],
      ["é".repeat(8193), "MESSAGE_TOO_LONG"], // 16,386 bytes, 8,193 code points
      ["nul\u0000inside", "MESSAGE_INVALID"],
      ["lone \ud800 surrogate", "MESSAGE_INVALID"],
    ];
    for (const [message, reason] of cases) {
      const e = await refusal(() => commit(world.deps(), { path: dir, message }));
      expect(tokens(e)).toEqual(["INVALID_REQUEST", reason, "FIX_INPUT", false]);
    }
    expect(await snapshotStore(world.store)).toBe(before);
    // 16,384 bytes exactly is accepted, and the message is stored as given.
    const exact = `${"é".repeat(8191)}\r\n`;
    expect(Buffer.byteLength(exact)).toBe(16_384);
    const ok = await commit(world.deps(), { path: dir, message: exact });
    expect(ok.generation).toBe(1);
  });
});

describe("lost races", () => {
  test("losing every attempt is REMOTE_BUSY · RETRIES_EXHAUSTED with the visible files untouched", async () => {
    world = makeWorld();
    const dir = world.checkout("a");
    const other = world.checkout("b");
    await seedNotebook(world.deps(), dir, { "x.md": "x\n" });
    await pull(world.deps(), { path: other });
    write(other, "y.md", "from b\n");
    await commit(world.deps(), { path: other, message: "b" });
    write(dir, "x.md", "x edited\n");
    let attempts = 0;
    const losing = faultyStore(world.store, (op) => {
      if (op !== "putIfMatch") return null;
      attempts++;
      return "lose-race";
    });
    const before = await snapshotStore(world.store);
    const e = await refusal(() => commit(world.deps({ store: losing, commitRetries: 3, sleep: async () => {} }), { path: dir, message: "m" }));
    expect(tokens(e)).toEqual(["REMOTE_BUSY", "RETRIES_EXHAUSTED", "RETRY", true]);
    // Four publication attempts; the last three offered the lost one to other
    // writers (combining), so before answering the commit withdrew that offer,
    // whose fence writes of `current` lost too (three tries).
    expect(attempts).toBe(7);
    expect(await world.store.list("proposals/")).toEqual([]);
    // Only orphan packs may have been added; `current` is unchanged.
    const after = await snapshotStore(world.store);
    expect(after.split("\n").filter((l) => l.startsWith("current:"))).toEqual(before.split("\n").filter((l) => l.startsWith("current:")));
    expect(read(dir, "x.md")).toBe("x edited\n");
    expect(read(dir, "y.md")).toBeNull();
    // The same call succeeds once the race is not lost.
    const ok = await commit(world.deps(), { path: dir, message: "m" });
    expect(ok.generation).toBe(3);
    expect(read(dir, "y.md")).toBe("from b\n");
  });

  test("the call's deadline ends the retries as their bound does: REMOTE_BUSY · RETRIES_EXHAUSTED, the files untouched", async () => {
    world = makeWorld();
    const dir = world.checkout("a");
    await seedNotebook(world.deps(), dir, { "x.md": "x\n" });
    write(dir, "x.md", "x edited\n");
    const losing = faultyStore(world.store, (op, key) => (op === "putIfMatch" && key === "current" ? "lose-race" : null));
    // The deadline passes during the second retry: a clock the test moves.
    let left = 60_000;
    let retries = 0;
    const deadline = { ms: 60_000, remaining: () => left, signal: new AbortController().signal };
    const onStage = (stage: string) => {
      if (stage === "retry" && ++retries === 2) left = 0;
    };
    const e = await refusal(() => commit(world.deps({ store: losing, commitRetries: 100, sleep: async () => {}, deadline, onStage }), { path: dir, message: "m" }));
    expect(tokens(e)).toEqual(["REMOTE_BUSY", "RETRIES_EXHAUSTED", "RETRY", true]);
    expect(e.message).toBe("Other commits won the race 3 times in a row until the call deadline; your files are untouched. Call again.");
    expect(retries).toBe(2);
    expect(read(dir, "x.md")).toBe("x edited\n");
  });

  test("a manifest write whose response is lost after it landed is proved by reading back: OK, once", async () => {
    world = makeWorld();
    const dir = world.checkout("a");
    await seedNotebook(world.deps(), dir, { "x.md": "x\n" });
    write(dir, "x.md", "x2\n");
    let lost = 0;
    const lossy = faultyStore(world.store, (op) => (op === "putIfMatch" && lost++ === 0 ? "lose-response" : null));
    const r = await commit(world.deps({ store: lossy }), { path: dir, message: "m" });
    expect(r.generation).toBe(2);
    expect(r.files).toEqual([{ path: "x.md", insertions: 1, deletions: 1 }]);
    expect(lost).toBe(1);
  });

  test("a manifest write lost before it landed is proved absent by reading back, retried, and lands", async () => {
    world = makeWorld();
    const dir = world.checkout("a");
    await pull(world.deps(), { path: dir });
    write(dir, "x.md", "x\n");
    let calls = 0;
    const flaky = faultyStore(world.store, (op, key) => (op === "putIfAbsent" && key === "current" && calls++ === 0 ? "drop-request" : null));
    const r = await commit(world.deps({ store: flaky, sleep: async () => {} }), { path: dir, message: "m" });
    expect(r.generation).toBe(1);
    expect(calls).toBe(2);
  });

  test("a definite manifest write failure is STORAGE_FAILURE · MANIFEST_WRITE and the files stay", async () => {
    world = makeWorld();
    const dir = world.checkout("a");
    await pull(world.deps(), { path: dir });
    write(dir, "x.md", "x\n");
    const failing = faultyStore(world.store, (op, key) => (op === "putIfAbsent" && key === "current" ? "fail-before" : null));
    const e = await refusal(() => commit(world.deps({ store: failing }), { path: dir, message: "m" }));
    expect(tokens(e)).toEqual(["STORAGE_FAILURE", "MANIFEST_WRITE", "RETRY", true]);
    expect(await world.store.get("current")).toBeNull();
    expect(read(dir, "x.md")).toBe("x\n");
  });

  test("an unprovable publication is STORAGE_FAILURE · PUBLICATION_UNPROVEN with action PULL", async () => {
    world = makeWorld();
    const dir = world.checkout("a");
    await pull(world.deps(), { path: dir });
    write(dir, "x.md", "x\n");
    let wrote = false;
    const dark = faultyStore(world.store, (op, key) => {
      if (op === "putIfAbsent" && key === "current") {
        wrote = true;
        return "lose-response";
      }
      // After the lost response, the store cannot be reached to prove it.
      return wrote && op === "get" ? "fail-before" : null;
    });
    const e = await refusal(() => commit(world.deps({ store: dark }), { path: dir, message: "m" }));
    expect(tokens(e)).toEqual(["STORAGE_FAILURE", "PUBLICATION_UNPROVEN", "PULL", true]);
    expect(read(dir, "x.md")).toBe("x\n");
    // Pulling shows the truth: it landed, and the checkout converges.
    const pulled = await pull(world.deps(), { path: dir });
    expect(pulled.generation).toBe(1);
    expect(read(dir, "x.md")).toBe("x\n");
  });

  test("after an unprovable publication that landed, the next call knows it: a line deleted since stays deleted", async () => {
    world = makeWorld();
    const dir = world.checkout("a");
    await seedNotebook(world.deps(), dir, { "x.md": "1\n" });
    write(dir, "x.md", "1\nk\n");
    let wrote = false;
    const dark = faultyStore(world.store, (op, key) => {
      if (op === "putIfMatch" && key === "current") {
        wrote = true;
        return "lose-response";
      }
      return wrote && op === "get" ? "fail-before" : null;
    });
    const e = await refusal(() => commit(world.deps({ store: dark, guessCurrent: false }), { path: dir, message: "k" }));
    expect(tokens(e)).toEqual(["STORAGE_FAILURE", "PUBLICATION_UNPROVEN", "PULL", true]);
    // The user takes the line out again before anything else.
    write(dir, "x.md", "1\n");
    const committed = await commit(world.deps(), { path: dir, message: "no k after all" });
    expect([committed.generation, committed.files]).toEqual([3, [{ path: "x.md", insertions: 0, deletions: 1 }]]);
    expect(read(dir, "x.md")).toBe("1\n");
  });

  test("a failed manifest read is STORAGE_FAILURE · MANIFEST_READ, retryable, and nothing changes locally", async () => {
    world = makeWorld();
    const dir = world.checkout("a");
    await pull(world.deps(), { path: dir });
    write(dir, "x.md", "mine\n");
    const broken = faultyStore(world.store, (op, key) => (op === "get" && key === "current" ? "fail-before" : null));
    for (const op of [() => pull(world.deps({ store: broken }), { path: dir }), () => commit(world.deps({ store: broken }), { path: dir, message: "m" })]) {
      const e = await refusal(op);
      expect(tokens(e)).toEqual(["STORAGE_FAILURE", "MANIFEST_READ", "RETRY", true]);
    }
    expect(read(dir, "x.md")).toBe("mine\n");
  });

  test("an invalid manifest is STORAGE_INTEGRITY · MANIFEST_INVALID and nothing is materialised", async () => {
    world = makeWorld();
    const dir = world.checkout("a");
    await pull(world.deps(), { path: dir });
    const store = openSqliteStore(world.storeFile, SYSTEM_CLOCK);
    await store.putIfAbsent("current", new TextEncoder().encode('{"format":1,"generation":1,"extra":true}'));
    await store.close();
    write(dir, "x.md", "mine\n");
    const e = await refusal(() => pull(world.deps(), { path: dir }));
    expect(tokens(e)).toEqual(["STORAGE_INTEGRITY", "MANIFEST_INVALID", "OPERATOR", false]);
    expect(read(dir, "x.md")).toBe("mine\n");
  });

  test("a pack missing from the store, or contradicting its descriptor, is PACK_INVALID; a missing commit is HISTORY_INVALID", async () => {
    world = makeWorld();
    const a = world.checkout("a");
    await seedNotebook(world.deps(), a, { "x.md": "x\n" });
    const store = openSqliteStore(world.storeFile, SYSTEM_CLOCK);
    const current = (await store.get("current"))!;
    const manifest = JSON.parse(new TextDecoder().decode(current.body));
    const pack = manifest.packs[0];
    const packBytes = (await store.get(pack.key))!.body;

    const check = async (reason: string) => {
      const fresh = world.checkout(`fresh-${reason}-${Math.random()}`);
      write(fresh, "mine.md", "unpublished\n");
      const e = await refusal(() => pull(world.deps(), { path: fresh }));
      expect(tokens(e)).toEqual(["STORAGE_INTEGRITY", reason, "OPERATOR", false]);
      expect(read(fresh, "mine.md")).toBe("unpublished\n");
      expect(read(fresh, "x.md")).toBeNull();
    };

    // Contradicting: same key, other bytes.
    await store.delete(pack.key);
    const corrupt = new Uint8Array(packBytes);
    corrupt[corrupt.length - 30]! ^= 0xff;
    await store.putIfAbsent(pack.key, corrupt);
    await check("PACK_INVALID");
    // Missing.
    await store.delete(pack.key);
    await check("PACK_INVALID");
    // A manifest whose head is not in any pack: the history is missing an object.
    await store.putIfAbsent(pack.key, packBytes);
    const bogus = { ...manifest, head: "0".repeat(40), publication: "1".repeat(32) };
    const swapped = await store.putIfMatch("current", new TextEncoder().encode(JSON.stringify(bogus)), current.etag);
    expect(swapped.ok).toBe(true);
    await check("HISTORY_INVALID");
    await store.close();
  });

  test("a pack that cannot be downloaded is PACK_DOWNLOAD, one that cannot be uploaded PACK_UPLOAD; both retryable, nothing changes", async () => {
    world = makeWorld();
    const a = world.checkout("a");
    const b = world.checkout("b");
    await seedNotebook(world.deps(), a, { "x.md": "x\n" });
    const noPacks = faultyStore(world.store, (op, key) => (op === "get" && key.startsWith("packs/") ? "fail-before" : null));
    write(b, "mine.md", "mine\n");
    const down = await refusal(() => pull(world.deps({ store: noPacks }), { path: b }));
    expect(tokens(down)).toEqual(["STORAGE_FAILURE", "PACK_DOWNLOAD", "RETRY", true]);
    expect([read(b, "x.md"), read(b, "mine.md")]).toEqual([null, "mine\n"]);

    write(a, "x.md", "x2\n");
    const before = await snapshotStore(world.store);
    const noUpload = faultyStore(world.store, (op, key) => (op === "putIfAbsent" && key.startsWith("packs/") ? "fail-before" : null));
    const up = await refusal(() => commit(world.deps({ store: noUpload }), { path: a, message: "m" }));
    expect(tokens(up)).toEqual(["STORAGE_FAILURE", "PACK_UPLOAD", "RETRY", true]);
    expect(await snapshotStore(world.store)).toBe(before);
    expect(read(a, "x.md")).toBe("x2\n");
  });

  test("an operation waits for another on the same checkout, and gives up with LOCAL_STATE", async () => {
    world = makeWorld();
    const a = world.checkout("a");
    await pull(world.deps(), { path: a });
    const [id] = readdirSync(`${world.privateRoot}/checkouts`);
    // A live holder: this very process, as another operation would be.
    writeFileSync(`${world.privateRoot}/checkouts/${id}/lock`, `${process.pid} ${hostname()}`);
    const e = await refusal(() => pull(world.deps({ lockTimeoutMs: 200 }), { path: a }));
    expect(tokens(e)).toEqual(["STORAGE_FAILURE", "LOCAL_STATE", "RETRY", true]);
    // A lock left by a process that died is taken over.
    writeFileSync(`${world.privateRoot}/checkouts/${id}/lock`, `999999999 ${hostname()}`);
    expect((await pull(world.deps({ lockTimeoutMs: 200 }), { path: a })).generation).toBe(0);
  });

  test("the wait for the lock ends with the call's deadline: LOCAL_STATE for pull and status alike, long before the 30 s without one", async () => {
    world = makeWorld();
    const a = world.checkout("a");
    await pull(world.deps(), { path: a });
    const [id] = readdirSync(`${world.privateRoot}/checkouts`);
    writeFileSync(`${world.privateRoot}/checkouts/${id}/lock`, `${process.pid} ${hostname()}`);
    for (const call of [(deps: EngineDeps) => pull(deps, { path: a }), (deps: EngineDeps) => readLocalChanges(deps, { path: a })]) {
      const started = performance.now();
      const e = await refusal(() => call(world.deps({ deadline: deadlineIn(300) })));
      expect(tokens(e)).toEqual(["STORAGE_FAILURE", "LOCAL_STATE", "RETRY", true]);
      expect(performance.now() - started).toBeLessThan(5_000);
    }
  });

  /** A checkout pulled once, and the path of its lock file. */
  async function lockedCheckout() {
    world = makeWorld();
    const a = world.checkout("a");
    await pull(world.deps(), { path: a });
    const [id] = readdirSync(`${world.privateRoot}/checkouts`);
    return { a, lock: `${world.privateRoot}/checkouts/${id}/lock` };
  }
  const self = { pid: process.pid, isAlive: isProcessAlive, startTime: processStartTime };
  const age = (file: string, seconds: number) => utimesSync(file, Date.now() / 1000 - seconds, Date.now() / 1000 - seconds);

  test("an empty lock, left by a process killed between creating and writing it, is taken over once it is a moment old", async () => {
    const { a, lock } = await lockedCheckout();
    writeFileSync(lock, "");
    // Fresh: its writer may be about to fill it in.
    expect(tokens(await refusal(() => pull(world.deps({ lockTimeoutMs: 200, self }), { path: a })))).toEqual(["STORAGE_FAILURE", "LOCAL_STATE", "RETRY", true]);
    age(lock, 5);
    expect((await pull(world.deps({ lockTimeoutMs: 200, self }), { path: a })).generation).toBe(0);
  });

  test("a lock whose process id now belongs to another process (started at another time) is taken over", async () => {
    const { a, lock } = await lockedCheckout();
    writeFileSync(lock, `${process.pid} ${hostname()} ${processStartTime(process.pid)}`);
    expect(tokens(await refusal(() => pull(world.deps({ lockTimeoutMs: 200, self }), { path: a })))).toEqual(["STORAGE_FAILURE", "LOCAL_STATE", "RETRY", true]);
    writeFileSync(lock, `${process.pid} ${hostname()} 1`);
    expect((await pull(world.deps({ lockTimeoutMs: 200, self }), { path: a })).generation).toBe(0);
  });

  test("a lock whose holder is a zombie (dead, never reaped by its parent) is taken over", async () => {
    const { a, lock } = await lockedCheckout();
    // The child exits after its parent became `sleep 10`, which never reaps it. A child that
    // exited at once could be reaped by the shell before its exec (seen once in CI): no zombie.
    const parent = Bun.spawn(["sh", "-c", "sleep 0.5 & echo $!; exec sleep 10"], { stdout: "pipe" });
    try {
      // The first line is the child's pid; the pipe stays open while `sleep 10` runs.
      const { value } = await parent.stdout.getReader().read();
      const zombie = Number(new TextDecoder().decode(value).trim());
      expect(zombie).toBeGreaterThan(0);
      await waitFor(() => readFileSync(`/proc/${zombie}/stat`, "latin1").includes(") Z "), `process ${zombie} to be a zombie`);
      writeFileSync(lock, `${zombie} ${hostname()} ${processStartTime(zombie)}`);
      expect((await pull(world.deps({ lockTimeoutMs: 200, self }), { path: a })).generation).toBe(0);
    } finally {
      parent.kill();
    }
  });

  test("a lock from another host (or container) is held while its holder refreshes it, and taken over once it stops", async () => {
    const { a, lock } = await lockedCheckout();
    writeFileSync(lock, "1 another-host 12345");
    expect(tokens(await refusal(() => pull(world.deps({ lockTimeoutMs: 200, self }), { path: a })))).toEqual(["STORAGE_FAILURE", "LOCAL_STATE", "RETRY", true]);
    age(lock, 31);
    expect((await pull(world.deps({ lockTimeoutMs: 200, self }), { path: a })).generation).toBe(0);
  });
});
