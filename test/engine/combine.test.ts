/**
 * Combining (docs/storage-protocol.md, "Combining"): a commit that lost a
 * race offers what it prepared as a proposal, and the next writer to
 * publish publishes it too, moved onto the state before its own commit.
 * These tests drive the races by hand on a store without turns (as S3
 * is): a commit loses because another publishes inside its window, and a
 * third publishes while the loser waits.
 */
import { afterEach, expect, test } from "bun:test";
import { spawnSync } from "node:child_process";
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { proposalKey, PROPOSALS_PREFIX } from "../../src/engine/publish/combine.ts";
import { commitEnded } from "../../src/engine/publish/contention.ts";
import { commit } from "../../src/engine/commit.ts";
import type { EngineDeps } from "../../src/engine/engine.ts";
import { ProcessMemory } from "../../src/engine/process-memory.ts";
import { pull } from "../../src/engine/pull.ts";
import { openHistory } from "../../src/engine/history/read.ts";
import { settlePublication } from "../../src/engine/publish/publication.ts";
import type { ObjectStore } from "../../src/store/object-store.ts";
import { boundedStore } from "../../src/store/deadline.ts";
import { faultyStore } from "../support/faulty-store.ts";
import { makeWorld, read, readCurrent, refusal, type World, write } from "../support/fixture.ts";
import { waitFor } from "../support/wait.ts";
import { SYSTEM_CLOCK, SYSTEM_RANDOM } from "../../src/surfaces/engine-deps.ts";

let world: World;
afterEach(async () => {
  await world?.close();
});

/** The world's store without its writer queue: writers race, as on S3. */
function racing(w: World): ObjectStore {
  const { queue: _queue, ...store } = w.store;
  return store as ObjectStore;
}

/**
 * Deps of a process of its own (own memory: no shared guess), racing, with
 * hooks. These tests reach an offer through a meeting of two driven by hand,
 * which a commit otherwise answers by building on the winner at once
 * (`meetAtOnce`, the last test): a crowd offers the same way.
 */
function processDeps(w: World, overrides: Partial<EngineDeps> = {}): EngineDeps {
  return w.deps({ store: racing(w), memory: new ProcessMemory(SYSTEM_RANDOM), random: () => 0.5, meetAtOnce: false, ...overrides });
}

/** Three checkouts pulled at generation 1 (one file each written by a first commit). */
async function threeWriters() {
  world = makeWorld();
  const [a, b, c] = ["a", "b", "c"].map((n) => world.checkout(n)) as [string, string, string];
  const first = world.checkout("first");
  await pull(processDeps(world), { path: first });
  write(first, "shared.md", "one\ntwo\nthree\n");
  await commit(processDeps(world), { path: first, message: "first" });
  for (const d of [a, b, c]) await pull(processDeps(world), { path: d });
  return { a, b, c };
}

/** Each writer adds a file of its own, `<name>.md` holding "from <name>". */
function editEach(dirs: Record<string, string>): void {
  for (const [name, dir] of Object.entries(dirs)) write(dir, `${name}.md`, `from ${name}\n`);
}

/** An onStage hook that runs `fn` once, at the first publish stage: inside the commit's window. */
function atFirstPublish(fn: () => Promise<unknown>): (stage: string) => Promise<void> {
  let done = false;
  return async (stage) => {
    if (stage === "publish" && !done) {
      done = true;
      await fn();
    }
  };
}

/** A loses to B, offers its commit and dies waiting to be carried: its proposal stays posted. */
async function loseThenDie(a: string, b: string): Promise<void> {
  const died = await loseThen(a, b, async () => {
    throw new Error("killed");
  }).catch((e) => e);
  expect(String(died)).toContain("killed");
}

/**
 * A commits; B publishes inside A's window, so A loses and offers its
 * publication; while A waits, `whileWaiting` runs. Resolves to A's outcome.
 */
async function loseThen(a: string, b: string, whileWaiting: () => Promise<void>, overrides: Partial<EngineDeps> = {}) {
  let waited = false;
  return commit(
    processDeps(world, {
      onStage: atFirstPublish(() => commit(processDeps(world), { path: b, message: "b" })),
      sleep: async () => {
        if (!waited) {
          waited = true;
          await whileWaiting();
        }
      },
      ...overrides,
    }),
    { path: a, message: "a" },
  );
}

test("a commit that lost a race is published by the next writer, before that writer's own commit", async () => {
  const { a, b, c } = await threeWriters();
  editEach({ a, b, c });
  let cOut: Awaited<ReturnType<typeof commit>> | null = null;
  const aOut = await loseThen(a, b, async () => {
    expect((await racing(world).list(PROPOSALS_PREFIX)).length).toBe(1);
    cOut = await commit(processDeps(world), { path: c, message: "c" });
  });
  // B was generation 2; C published A's commit as 3, then its own as 4.
  expect(aOut.generation).toBe(3);
  expect(aOut.files).toEqual([{ path: "a.md", insertions: 1, deletions: 0 }]);
  expect(cOut!.generation).toBe(4);
  expect(cOut!.files).toEqual([{ path: "c.md", insertions: 1, deletions: 0 }]);
  const { manifest } = await readCurrent(world.store);
  // Format 4: every manifest this version writes carries the notebook id, combined list or not.
  expect(manifest.format).toBe(4);
  expect(manifest.combined?.map((x) => x.generation)).toEqual([3]);
  // A's commit kept its message and author, and its parent is B's.
  const history = await openHistory(processDeps(world));
  expect(history.publications.map((h) => [h.generation, h.message])).toEqual([
    [4, "c"],
    [3, "a"],
    [2, "b"],
    [1, "first"],
  ]);
  // The proposal is gone; every file is in a fresh pull; A and C carry on.
  expect(await racing(world).list(PROPOSALS_PREFIX)).toEqual([]);
  const fresh = world.checkout("fresh");
  await pull(processDeps(world), { path: fresh });
  for (const [f, text] of [["a.md", "from a\n"], ["b.md", "from b\n"], ["c.md", "from c\n"]]) expect(read(fresh, f!)).toBe(text!);
  expect(read(a, "a.md")).toBe("from a\n");
  expect((await pull(processDeps(world), { path: a })).generation).toBe(4);
  for (const f of ["b.md", "c.md"]) expect(read(a, f)).toBe(read(fresh, f));
  write(a, "a.md", "from a, again\n");
  expect((await commit(processDeps(world), { path: a, message: "a again" })).generation).toBe(5);
});

test("a writer that builds on what it remembers (no read) learns who waits, and its next commit carries them", async () => {
  const { a, b, c } = await threeWriters();
  write(a, "a.md", "from a\n");
  write(b, "b.md", "from b\n");
  // C's process saw no race: its commit builds on the state its pull left,
  // without reading `current` (the guess), and lists the proposals meanwhile
  // without waiting for the listing; its next commit reads, and carries A.
  const cMemory = new ProcessMemory(SYSTEM_RANDOM);
  const cOps: string[] = [];
  const cOut: number[] = [];
  const aOut = await loseThen(a, b, async () => {
    await pull(processDeps(world, { memory: cMemory }), { path: c });
    write(c, "c.md", "from c\n");
    const store = racing(world);
    const watched: ObjectStore = { ...store, get: (key) => (cOps.push(`get ${key}`), store.get(key)) };
    cOut.push((await commit(processDeps(world, { memory: cMemory, store: watched }), { path: c, message: "c" })).generation);
    expect(cOps.filter((op) => op === "get current")).toEqual([]);
    // The listing of that commit, answered in the background.
    await waitFor(() => cMemory.contention.get(world.deps().storeId)?.othersWaiting !== undefined, "the listing of C's commit to be answered");
    write(c, "c.md", "from c, again\n");
    cOut.push((await commit(processDeps(world, { memory: cMemory, store: watched }), { path: c, message: "c again" })).generation);
    expect(cOps.filter((op) => op === "get current").length).toBeGreaterThan(0);
  });
  // C published alone (3), then A's commit (4) and its own (5).
  expect(cOut).toEqual([3, 5]);
  expect(aOut.generation).toBe(4);
  const fresh = world.checkout("fresh");
  await pull(processDeps(world), { path: fresh });
  for (const [f, text] of [["a.md", "from a\n"], ["b.md", "from b\n"], ["c.md", "from c, again\n"]]) expect(read(fresh, f!)).toBe(text!);
});

test("with nobody else publishing, the loser publishes its own proposal", async () => {
  const { a, b } = await threeWriters();
  write(a, "a.md", "from a\n");
  write(b, "b.md", "from b\n");
  const out = await loseThen(a, b, async () => {});
  expect(out.generation).toBe(3);
  const { manifest } = await readCurrent(world.store);
  expect(manifest.combined?.map((x) => x.generation)).toEqual([3]);
  expect(await racing(world).list(PROPOSALS_PREFIX)).toEqual([]);
  const fresh = world.checkout("fresh");
  await pull(processDeps(world), { path: fresh });
  expect(read(fresh, "a.md")).toBe("from a\n");
  expect(read(fresh, "b.md")).toBe("from b\n");
});

test("a proposal that conflicts with what landed meanwhile is withdrawn, and the loser gets the conflict", async () => {
  const { a, b, c } = await threeWriters();
  write(a, "shared.md", "one\nTWO by a\nthree\n");
  write(b, "b.md", "from b\n");
  write(c, "shared.md", "one\nTWO by c\nthree\n");
  const e = await refusal(() => loseThen(a, b, async () => void (await commit(processDeps(world), { path: c, message: "c" }))));
  expect(e.reason).toBe("MERGE_CONFLICT");
  expect(read(a, "shared.md")).toContain("<<<<<<<");
  expect(await racing(world).list(PROPOSALS_PREFIX)).toEqual([]);
  // C's line stands; A's proposal never landed, and cannot any more.
  const { manifest } = await readCurrent(world.store);
  expect(manifest.combined).toBeUndefined();
  const fresh = world.checkout("fresh");
  await pull(processDeps(world), { path: fresh });
  expect(read(fresh, "shared.md")).toBe("one\nTWO by c\nthree\n");
});

test("a waiting proposer whose proposal no longer merges with what landed answers the conflict at its next look, not after more publications", async () => {
  const { a, b, c } = await threeWriters();
  write(a, "shared.md", "one\nTWO by a\nthree\n");
  write(b, "b.md", "from b\n");
  write(c, "shared.md", "one\nTWO by c\nthree\n");
  // Each look at `current` while A waits to be carried follows one sleep;
  // C's conflicting publication lands during the first.
  let looks = 0;
  const e = await refusal(() =>
    loseThen(a, b, async () => {}, {
      sleep: async () => {
        if (looks++ === 0) await commit(processDeps(world), { path: c, message: "c" });
      },
    }),
  );
  expect(e.reason).toBe("MERGE_CONFLICT");
  expect(looks).toBe(1);
  expect(read(a, "shared.md")).toContain("<<<<<<<");
  expect(await racing(world).list(PROPOSALS_PREFIX)).toEqual([]);
});

test("with nobody publishing, a waiting proposer leaves a look to each older proposal's proposer before publishing itself", async () => {
  const { a, b, c } = await threeWriters();
  const d = world.checkout("d");
  await pull(processDeps(world), { path: d });
  for (const [dir, name] of [[a, "a"], [b, "b"], [c, "c"], [d, "d"]] as const) write(dir, `${name}.md`, `from ${name}\n`);
  // A loses to B and dies: its proposal waits, the oldest.
  await loseThenDie(a, b);
  // C loses to D, which lists no proposals (so carries none): C's proposal waits behind A's.
  const unlisted: ObjectStore = { ...racing(world), list: async () => [] };
  let looks = 0;
  const out = await commit(
    processDeps(world, {
      onStage: atFirstPublish(() => commit(processDeps(world, { store: unlisted }), { path: d, message: "d" })),
      sleep: async () => void looks++,
    }),
    { path: c, message: "c" },
  );
  // One still look, and one more for A's proposal; then C publishes its own, and A's with it.
  expect(looks).toBe(2);
  expect(out.generation).toBe(4);
  expect((await readCurrent(world.store)).manifest.combined?.map((x) => x.generation)).toEqual([4, 5]);
  const fresh = world.checkout("fresh");
  await pull(processDeps(world), { path: fresh });
  for (const name of ["a", "b", "c", "d"]) expect(read(fresh, `${name}.md`)).toBe(`from ${name}\n`);
});

test("a carried proposal is merged under the accepted state's .gitattributes: three appends to a union log all land", async () => {
  world = makeWorld();
  const [a, b, c] = ["a", "b", "c"].map((n) => world.checkout(n)) as [string, string, string];
  const first = world.checkout("first");
  await pull(processDeps(world), { path: first });
  write(first, ".gitattributes", "log.md merge=union\n");
  write(first, "log.md", "# log\n");
  await commit(processDeps(world), { path: first, message: "first" });
  for (const d of [a, b, c]) {
    await pull(processDeps(world), { path: d });
    write(d, "log.md", `# log\n${d === a ? "a" : d === b ? "b" : "c"} was here\n`);
  }
  // B lands inside A's window; C, publishing while A waits, carries A's
  // proposal onto B's state (a union of A's and B's appends), then its own.
  const aOut = await loseThen(a, b, async () => void (await commit(processDeps(world), { path: c, message: "c" })));
  expect(aOut.generation).toBe(3);
  const { manifest } = await readCurrent(world.store);
  expect(manifest.combined?.map((x) => x.generation)).toEqual([3]);
  const fresh = world.checkout("fresh");
  await pull(processDeps(world), { path: fresh });
  expect(read(fresh, "log.md")).toBe("# log\nc was here\na was here\nb was here\n");
});

test("a commit that died with its proposal posted: the next call withdraws it, or finds where it landed", async () => {
  for (const combinedFirst of [false, true]) {
    const { a, b, c } = await threeWriters();
    write(a, "a.md", "from a\n");
    write(b, "b.md", "from b\n");
    write(c, "c.md", "from c\n");
    // A dies while waiting to be combined (its first pause).
    const died = await refusal(() =>
      loseThen(a, b, async () => {
        throw new Error("killed");
      }),
    ).catch((e) => e);
    expect(String(died)).toContain("killed");
    expect((await racing(world).list(PROPOSALS_PREFIX)).length).toBe(1);
    if (combinedFirst) {
      expect((await commit(processDeps(world), { path: c, message: "c" })).generation).toBe(4);
    }
    // The next call on A settles: a pull.
    const out = await pull(processDeps(world), { path: a });
    expect(await racing(world).list(PROPOSALS_PREFIX)).toEqual([]);
    const fresh = world.checkout(`fresh-${combinedFirst}`);
    await pull(processDeps(world), { path: fresh });
    if (combinedFirst) {
      // Landed as generation 3: A's baseline moved there, so its edit is not local any more.
      expect(out.generation).toBe(4);
      expect(read(fresh, "a.md")).toBe("from a\n");
      write(a, "a.md", "from a, changed\n");
      expect((await commit(processDeps(world), { path: a, message: "a changed" })).files).toEqual([{ path: "a.md", insertions: 1, deletions: 1 }]);
    } else {
      // Withdrawn: never landed, and no writer can publish it now; A's edit is still local.
      expect(read(fresh, "a.md")).toBeNull();
      expect((await commit(processDeps(world), { path: c, message: "c" })).generation).toBe(3);
      expect((await readCurrent(world.store)).manifest.combined).toBeUndefined();
      expect((await commit(processDeps(world), { path: a, message: "a" })).generation).toBe(4);
      expect(read(a, "c.md")).toBe("from c\n");
    }
    await world.close();
  }
  world = makeWorld();
});

test("a combiner never publishes a withdrawn proposal, even one it read before the withdrawal", async () => {
  const { a, b, c } = await threeWriters();
  editEach({ a, b, c });
  await loseThenDie(a, b);
  const [offered] = await racing(world).list(PROPOSALS_PREFIX);
  const publication = offered!.key.slice(PROPOSALS_PREFIX.length);
  // C reads the proposal, then A's next call withdraws it before C writes.
  const cOut = await commit(
    processDeps(world, { onStage: atFirstPublish(() => pull(processDeps(world), { path: a })) }),
    { path: c, message: "c" },
  );
  // C lost the write it had built with A's proposal (then offered its own,
  // and published that): A's is in no manifest.
  expect(cOut.generation).toBe(3);
  expect((await readCurrent(world.store)).manifest.combined?.map((x) => x.publication)).not.toContain(publication);
  const fresh = world.checkout("fresh");
  await pull(processDeps(world), { path: fresh });
  expect(read(fresh, "a.md")).toBeNull();
  expect(read(fresh, "c.md")).toBe("from c\n");
});

test("the combined packs pass C git's verify-pack", async () => {
  const { a, b, c } = await threeWriters();
  editEach({ a, b, c });
  await loseThen(a, b, async () => void (await commit(processDeps(world), { path: c, message: "c" })));
  const { manifest } = await readCurrent(world.store);
  const dir = mkdtempSync(join(tmpdir(), "slivingdoc-verify-"));
  const last = manifest.packs[manifest.packs.length - 1]!;
  const body = (await world.store.get(last.key))!.body;
  const file = join(dir, "p.pack");
  writeFileSync(file, body);
  expect(spawnSync("git", ["index-pack", file], { encoding: "utf8" }).status).toBe(0);
  const verify = spawnSync("git", ["verify-pack", "-v", join(dir, "p.idx")], { encoding: "utf8" });
  expect(verify.status).toBe(0);
  // The pack holds A's moved commit and C's own: two commits.
  expect(verify.stdout.split("\n").filter((l) => / commit /.test(l)).length).toBe(2);
  expect(await racing(world).get(proposalKey("0".repeat(32)))).toBeNull();
});

test("gc deletes proposals left behind once they are older than the grace period", async () => {
  world = makeWorld();
  const dir = world.checkout("a");
  await pull(processDeps(world), { path: dir });
  write(dir, "a.md", "a\n");
  await commit(processDeps(world), { path: dir, message: "a" });
  const key = proposalKey("1".repeat(32));
  expect((await world.store.putIfAbsent(key, new TextEncoder().encode("{}\n"))).ok).toBe(true);
  const { collectGarbage } = await import("../../src/engine/gc.ts");
  // Young: kept.
  expect((await collectGarbage({ ...SYSTEM_CLOCK, ...SYSTEM_RANDOM, store: world.store }, {})).proposals).toBeUndefined();
  expect(await world.store.get(key)).not.toBeNull();
  // Past the grace period: a dry run names it, a run deletes it.
  const later = () => new Date(Date.now() + 2 * 60 * 60 * 1000);
  expect((await collectGarbage({ ...SYSTEM_CLOCK, ...SYSTEM_RANDOM, store: world.store, now: later }, { dryRun: true })).proposals).toEqual([key]);
  expect(await world.store.get(key)).not.toBeNull();
  expect((await collectGarbage({ ...SYSTEM_CLOCK, ...SYSTEM_RANDOM, store: world.store, now: later }, {})).proposals).toEqual([key]);
  expect(await world.store.get(key)).toBeNull();
});

test("an offer whose attempt carried another proposal, later withdrawn: once it lands, the files hold none of that proposal", async () => {
  const { a, b, c } = await threeWriters();
  const x = world.checkout("x");
  await pull(processDeps(world), { path: x });
  write(x, "x.md", "from x\n");
  write(b, "b.md", "from b\n");
  // X loses to B and dies waiting: its proposal stays posted.
  await loseThenDie(x, b);
  expect((await racing(world).list(PROPOSALS_PREFIX)).length).toBe(1);
  // A carries X's proposal in its attempt; before A writes, X's next call
  // withdraws the offer and C publishes: A loses, and offers its own.
  write(a, "a.md", "from a\n");
  write(c, "c.md", "from c\n");
  const aOut = await commit(
    processDeps(world, {
      onStage: atFirstPublish(async () => {
        await pull(processDeps(world), { path: x });
        await commit(processDeps(world), { path: c, message: "c" });
      }),
    }),
    { path: a, message: "a" },
  );
  expect(aOut.files).toEqual([{ path: "a.md", insertions: 1, deletions: 0 }]);
  expect(read(a, "a.md")).toBe("from a\n");
  expect(read(a, "x.md")).toBeNull();
  const fresh = world.checkout("fresh");
  await pull(processDeps(world), { path: fresh });
  expect(read(fresh, "x.md")).toBeNull();
  expect(read(fresh, "a.md")).toBe("from a\n");
  // A's next pull brings what landed before its commit, and nothing of X.
  await pull(processDeps(world), { path: a });
  expect(read(a, "c.md")).toBe("from c\n");
  expect(read(a, "x.md")).toBeNull();
});

test("an offer whose attempt carried a proposal that never lands offers its own change alone: a union log gets none of that proposal's lines", async () => {
  world = makeWorld();
  const [a, b, c, x] = ["a", "b", "c", "x"].map((n) => world.checkout(n)) as [string, string, string, string];
  const first = world.checkout("first");
  await pull(processDeps(world), { path: first });
  write(first, ".gitattributes", "log.md merge=union\n");
  write(first, "log.md", "# log\n");
  await commit(processDeps(world), { path: first, message: "first" });
  for (const d of [a, b, c, x]) await pull(processDeps(world), { path: d });
  const append = (dir: string, line: string) => write(dir, "log.md", `${read(dir, "log.md")}${line}\n`);
  append(x, "x");
  append(b, "b");
  // X loses to B and dies waiting: its proposal stays posted.
  await loseThenDie(x, b);
  // A carries X's proposal in its attempt; before A writes, X's next call
  // withdraws the offer and C publishes: A loses, and offers its commit —
  // which must be A's append alone, not A's on top of X's.
  append(a, "a");
  append(c, "c");
  await commit(
    processDeps(world, {
      onStage: atFirstPublish(async () => {
        await pull(processDeps(world), { path: x });
        await commit(processDeps(world), { path: c, message: "c" });
      }),
    }),
    { path: a, message: "a" },
  );
  const fresh = world.checkout("fresh");
  await pull(processDeps(world), { path: fresh });
  expect(read(fresh, "log.md")!.split("\n").filter((l) => l !== "" && l !== "# log").sort()).toEqual(["a", "b", "c"]);
});

test("a proposal offered for longer than any writer offers is never combined", async () => {
  const { a, b, c } = await threeWriters();
  editEach({ a, b, c });
  await loseThenDie(a, b);
  const store = racing(world);
  const [offered] = await store.list(PROPOSALS_PREFIX);
  const proposal = JSON.parse(new TextDecoder().decode((await store.get(offered!.key))!.body));
  await store.delete(offered!.key);
  const stretched = { ...proposal, until: proposal.until + 1000 };
  expect((await store.putIfAbsent(offered!.key, new TextEncoder().encode(JSON.stringify(stretched)))).ok).toBe(true);
  expect((await commit(processDeps(world), { path: c, message: "c" })).generation).toBe(3);
  expect((await readCurrent(world.store)).manifest.combined).toBeUndefined();
  // A's next call withdraws it: never landed; A's edit is still local, and its commit publishes it.
  await pull(processDeps(world), { path: a });
  expect(read(a, "a.md")).toBe("from a\n");
  expect((await commit(processDeps(world), { path: a, message: "a" })).generation).toBe(4);
});

test("retries spent with an offer posted: withdrawn for good, REMOTE_BUSY · RETRIES_EXHAUSTED, files untouched, nothing left to settle", async () => {
  const { a } = await threeWriters();
  write(a, "a.md", "from a\n");
  const before = (await readCurrent(world.store)).manifest.generation;
  // Every publication loses (as if others always won), while a rewrite of
  // `current` at the same generation — the withdrawal's fence — goes through.
  const store = racing(world);
  const losing: ObjectStore = {
    ...store,
    putWith: undefined, // packs uploaded first, as on S3: every write of `current` is a putIfMatch
    putIfMatch: async (key, body, etag) => {
      const generation = JSON.parse(new TextDecoder().decode(body)).generation;
      return generation > before ? { ok: false as const } : store.putIfMatch(key, body, etag);
    },
  };
  const e = await refusal(() => commit(processDeps(world, { store: losing, commitRetries: 2, sleep: async () => {} }), { path: a, message: "a" }));
  expect([e.code, e.reason]).toEqual(["REMOTE_BUSY", "RETRIES_EXHAUSTED"]);
  expect(read(a, "a.md")).toBe("from a\n");
  expect(await store.list(PROPOSALS_PREFIX)).toEqual([]);
  // The fence moved `current` without publishing anything.
  expect((await readCurrent(world.store)).manifest.generation).toBe(before);
  // Nothing left to settle: the next call writes nothing to the store before its own commit.
  let writes = 0;
  const counting: ObjectStore = { ...store, putIfMatch: (k, b, t) => (writes++, store.putIfMatch(k, b, t)) };
  await pull(processDeps(world, { store: counting }), { path: a });
  expect(writes).toBe(0);
  expect((await commit(processDeps(world), { path: a, message: "a" })).generation).toBe(before + 1);
});

test("a landed offer's baseline survives its pack being collected from the store and dropped from the cache", async () => {
  const { a, b, c } = await threeWriters();
  editEach({ a, b, c });
  await loseThen(a, b, async () => void (await commit(processDeps(world), { path: c, message: "c" })));
  // The only copy of A's own commit and tree was its proposal's pack: gc
  // takes it from the store, and a damaged cache loses it too.
  const { collectGarbage } = await import("../../src/engine/gc.ts");
  await collectGarbage({ ...SYSTEM_CLOCK, ...SYSTEM_RANDOM, store: world.store }, { graceMs: 0 });
  const checkouts = join(world.privateRoot, "checkouts");
  for (const id of readdirSync(checkouts)) rmSync(join(checkouts, id, "git", "objects", "pack"), { recursive: true, force: true });
  // A edits its own line again: no conflict, nothing lost.
  write(a, "a.md", "from a, again\n");
  const out = await commit(processDeps(world), { path: a, message: "a again" });
  expect(out.files).toEqual([{ path: "a.md", insertions: 1, deletions: 1 }]);
  const fresh = world.checkout("fresh");
  await pull(processDeps(world), { path: fresh });
  expect(read(fresh, "a.md")).toBe("from a, again\n");
  expect(read(a, "c.md")).toBe("from c\n");
});

/**
 * A's store, from `failing()` on, as `fault` says (faulty-store.ts), under a
 * call deadline that passes as soon as a request hangs: a store that stopped
 * answering, without waiting out a real deadline.
 */
function failingStore(fault: "hang" | "fail-before", failing: () => boolean) {
  const controller = new AbortController();
  let hung = false;
  const deadline = { ms: 60_000, remaining: () => (hung ? 0 : 60_000), signal: controller.signal };
  let failedOnce = false;
  const faulty = faultyStore(racing(world), (operation, key) => {
    if (!failing()) return null;
    if (fault === "hang") {
      if (!hung) queueMicrotask(() => ((hung = true), controller.abort()));
      return "hang";
    }
    // One failed read of `current`, the next request answered: a transient failure.
    if (failedOnce || operation !== "get" || key !== "current") return null;
    failedOnce = true;
    return "fail-before";
  });
  return { store: boundedStore(faulty, deadline), deadline };
}

test("an offered proposal whose store then stops answering: PUBLICATION_UNPROVEN, not MANIFEST_READ; the next call finds where it landed", async () => {
  for (const carried of [false, true]) {
    const { a, b, c } = await threeWriters();
    editEach({ a, b, c });
    let hung = false;
    const { store, deadline } = failingStore("hang", () => hung);
    const e = await refusal(() =>
      loseThen(
        a,
        b,
        async () => {
          // C publishes A's proposal along with its own, or nobody does; then the store hangs.
          if (carried) await commit(processDeps(world), { path: c, message: "c" });
          hung = true;
        },
        { store, deadline },
      ),
    );
    expect([e.code, e.reason, e.action]).toEqual(["STORAGE_FAILURE", "PUBLICATION_UNPROVEN", "PULL"]);
    expect(read(a, "a.md")).toBe("from a\n");
    // The store answers again: the next call on A proves the fate, and A's edit is neither lost nor published twice.
    await pull(processDeps(world), { path: a });
    expect(await racing(world).list(PROPOSALS_PREFIX)).toEqual([]);
    const { manifest } = await readCurrent(world.store);
    expect(manifest.combined?.length ?? 0).toBe(carried ? 1 : 0);
    write(a, "a.md", "from a, again\n");
    expect((await commit(processDeps(world), { path: a, message: "a again" })).files).toEqual([{ path: "a.md", insertions: 1, deletions: carried ? 1 : 0 }]);
    const fresh = world.checkout(`fresh-${carried}`);
    await pull(processDeps(world), { path: fresh });
    expect(read(fresh, "a.md")).toBe("from a, again\n");
    await world.close();
  }
  world = makeWorld();
});

test("an offered proposal whose store then fails once: the withdrawal proves its fate — carried: the commit lands; not: MANIFEST_READ with nothing left to settle", async () => {
  for (const carried of [false, true]) {
    const { a, b, c } = await threeWriters();
    editEach({ a, b, c });
    let failing = false;
    const { store, deadline } = failingStore("fail-before", () => failing);
    const outcome = await loseThen(
      a,
      b,
      async () => {
        if (carried) await commit(processDeps(world), { path: c, message: "c" });
        failing = true;
      },
      { store, deadline },
    ).catch((e) => e);
    const fresh = world.checkout(`fresh-${carried}`);
    await pull(processDeps(world), { path: fresh });
    if (carried) {
      // B was generation 2; C published A's commit as 3.
      expect(outcome.generation).toBe(3);
      expect(read(fresh, "a.md")).toBe("from a\n");
    } else {
      expect([outcome.code, outcome.reason]).toEqual(["STORAGE_FAILURE", "MANIFEST_READ"]);
      expect(read(fresh, "a.md")).toBeNull();
      // Withdrawn for good: no proposal left, and the next call writes nothing to the store before its own commit.
      expect(await racing(world).list(PROPOSALS_PREFIX)).toEqual([]);
      let writes = 0;
      const counting: ObjectStore = { ...racing(world), putIfMatch: (k, body, t) => (writes++, racing(world).putIfMatch(k, body, t)) };
      await pull(processDeps(world, { store: counting }), { path: a });
      expect(writes).toBe(0);
      expect((await commit(processDeps(world), { path: a, message: "a" })).generation).toBe(3);
    }
    await world.close();
  }
  world = makeWorld();
});

test("two commits meeting: the loser builds on the winner at once — one more write, no proposal, no wait", async () => {
  const { a, b } = await threeWriters();
  write(a, "a.md", "from a\n");
  write(b, "b.md", "from b\n");
  const store = racing(world);
  const writes: string[] = [];
  const watched: ObjectStore = {
    ...store,
    putIfAbsent: (key, body) => (writes.push(`create ${key.split("/")[0]}`), store.putIfAbsent(key, body)),
    putIfMatch: (key, body, etag) => (writes.push(`replace ${key}`), store.putIfMatch(key, body, etag)),
    // The embedded store writes a pack and `current` together.
    putWith: (creates, key, ...rest) => (writes.push(`replace ${key}`), store.putWith!(creates, key, ...rest)),
  };
  let slept = 0;
  const out = await commit(
    processDeps(world, {
      store: watched,
      meetAtOnce: true,
      onStage: atFirstPublish(() => commit(processDeps(world), { path: b, message: "b" })),
      sleep: async () => void slept++,
    }),
    { path: a, message: "a" },
  );
  expect(out.generation).toBe(3);
  expect(out.files).toEqual([{ path: "a.md", insertions: 1, deletions: 0 }]);
  // Its two conditional writes of `current`, the first lost; nothing offered, nothing waited.
  expect(writes.filter((w) => w === "replace current")).toEqual(["replace current", "replace current"]);
  expect(writes.filter((w) => w.startsWith("create proposals"))).toEqual([]);
  expect(slept).toBe(0);
  const { manifest } = await readCurrent(world.store);
  expect(manifest.combined ?? []).toEqual([]);
  const history = await openHistory(processDeps(world));
  expect(history.publications.map((h) => [h.generation, h.message])).toEqual([
    [3, "a"],
    [2, "b"],
    [1, "first"],
  ]);
  const fresh = world.checkout("fresh");
  await pull(processDeps(world), { path: fresh });
  for (const [f, text] of [["a.md", "from a\n"], ["b.md", "from b\n"]]) expect(read(fresh, f!)).toBe(text!);
});

test("a meeting of two in a process that lost races lately offers, as a crowd's loser does", async () => {
  const { a, b } = await threeWriters();
  write(a, "a.md", "from a\n");
  write(b, "b.md", "from b\n");
  const memory = new ProcessMemory(SYSTEM_RANDOM);
  // Its last commit lost a race.
  commitEnded(memory, world.deps().storeId, 1);
  let offered = 0;
  const out = await commit(
    processDeps(world, {
      memory,
      meetAtOnce: true,
      onStage: atFirstPublish(() => commit(processDeps(world), { path: b, message: "b" })),
      sleep: async () => void (offered = (await racing(world).list(PROPOSALS_PREFIX)).length),
    }),
    { path: a, message: "a" },
  );
  expect(offered).toBe(1);
  expect(out.generation).toBe(3);
  expect((await readCurrent(world.store)).manifest.combined?.map((x) => x.generation)).toEqual([3]);
});
