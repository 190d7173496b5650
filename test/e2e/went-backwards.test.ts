/**
 * A store that goes backwards, through the built binary as a user and a
 * host run it, on the embedded store and on S3 (Ceph RGW under `npm test`):
 * the store deleted, truncated or put back from an older copy; the S3
 * prefix emptied or an older `current` put back; a wrong --store. Every
 * command that would act on it — pull, commit, status, `serve`'s first
 * call, gc — answers STORAGE_INTEGRITY · HISTORY_INVALID (exit 6) and
 * leaves every visible file byte for byte as it was; `attach` then keeps
 * every file, and the next commit publishes it for a fresh checkout to pull.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { copyFileSync, mkdtempSync, rmSync, truncateSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { MANIFEST_KEY } from "../../src/engine/publish/manifest.ts";
import type { ObjectStore } from "../../src/store/object-store.ts";
import { openSqliteStore } from "../../src/store/sqlite.ts";
import { filesOf, write } from "../support/fixture.ts";
import { runAs, userEnv } from "../support/binary-env.ts";
import { call, connect } from "../support/mcp.ts";
import { emptyStore, testBucket, testEndpoint, testS3Store } from "../support/s3-test-store.ts";
import { SYSTEM_CLOCK } from "../../src/surfaces/system-clock.ts";

const root = mkdtempSync(join(tmpdir(), "slivingdoc-e2e-backwards-"));
const counts = { swapped: 0, refused: 0 };
const cleanups: Array<() => Promise<void>> = [];
afterAll(async () => {
  for (const c of cleanups) await c();
  rmSync(root, { recursive: true, force: true });
  console.log(`went-backwards (binary): ${counts.swapped} stores swapped, rewound or emptied under a checkout; ${counts.refused} refusals, every visible file byte for byte as it was`);
});


/** One store location as the binary is pointed at it, and the test's own handle on what it holds. */
interface Where {
  env: Record<string, string>;
  /** The store object the test reads and rewinds it through (the binary is not running meanwhile). */
  store(): ObjectStore;
  /** Delete the embedded store's file; on S3, empty the prefix. */
  wipe(): Promise<void>;
  /**
   * What it holds now, to put back later over what it will hold then: the
   * store file; on S3, each object as a backup would restore it (`current`
   * replaced, the packs there since left there).
   */
  keep(): Promise<() => Promise<void>>;
  /**
   * `current` alone, to put back later over the `current` it will hold then,
   * every other object left as it is: an older `current` restored by hand
   * (on the embedded store, its row).
   */
  keepCurrent(): Promise<() => Promise<void>>;
}

/** Put back `current` as `where.store()` holds it now, later, leaving every pack where it is. */
async function keepCurrentOf(where: Pick<Where, "store">): Promise<() => Promise<void>> {
  const body = (await where.store().get(MANIFEST_KEY))!.body;
  return async () => {
    await where.store().delete(MANIFEST_KEY);
    expect((await where.store().putIfAbsent(MANIFEST_KEY, body)).ok).toBe(true);
    counts.swapped++;
  };
}


function embedded(name: string): Where & { file: string } {
  const env = userEnv(root, name);
  const file = join(env.XDG_DATA_HOME!, "slivingdoc", "store.db");
  let open: ObjectStore | null = null;
  return {
    env,
    file,
    store: () => (open ??= openSqliteStore(file, SYSTEM_CLOCK)),
    async wipe() {
      await open?.close();
      open = null;
      // The binary's processes have ended: the store's write-ahead log is checkpointed into the file.
      for (const f of [file, `${file}-wal`, `${file}-shm`]) rmSync(f, { force: true });
      counts.swapped++;
    },
    async keep() {
      await open?.close();
      open = null;
      const copy = `${file}.copy`;
      copyFileSync(file, copy);
      return async () => {
        await open?.close();
        open = null;
        copyFileSync(copy, file);
        counts.swapped++;
      };
    },
    keepCurrent() {
      return keepCurrentOf(this);
    },
  };
}

function s3(name: string): Where {
  const prefix = `slivingdoc-test/e2e-backwards-${crypto.randomUUID().slice(0, 8)}-${name}`;
  const store = testS3Store(prefix);
  const empty = () => emptyStore(store);
  cleanups.push(async () => {
    await empty();
    await store.close();
  });
  return {
    env: { ...userEnv(root, name), SLIVINGDOC_STORE: `s3://${testBucket}/${prefix}` },
    store: () => store,
    async wipe() {
      await empty();
      counts.swapped++;
    },
    async keep() {
      const kept = new Map<string, Uint8Array>();
      for (const o of await store.list("")) kept.set(o.key, (await store.get(o.key))!.body);
      return async () => {
        await store.delete(MANIFEST_KEY);
        for (const [key, body] of kept) await store.putIfAbsent(key, body);
        counts.swapped++;
      };
    },
    keepCurrent() {
      return keepCurrentOf(this);
    },
  };
}


async function ok(env: Record<string, string>, ...args: string[]) {
  const r = await runAs(env, ...args);
  if (r.code !== 0) console.error(`exit ${r.code}\n${r.stdout}\n${r.stderr}`);
  expect(r.code).toBe(0);
  return r;
}

/** The command answers exit 6, STORAGE_INTEGRITY · HISTORY_INVALID · OPERATOR with `words`, and `dir` is byte for byte as it was. */
async function refused(dir: string, env: Record<string, string>, args: string[], ...words: string[]) {
  const before = filesOf(dir);
  const human = await runAs(env, ...args);
  expect(human.code).toBe(6);
  expect(human.stderr).toContain("error: STORAGE_INTEGRITY · HISTORY_INVALID\n");
  expect(human.stderr).toContain("next: operator attention needed (OPERATOR)\n");
  for (const w of words) expect(human.stderr).toContain(w);
  const json = await runAs(env, ...args, "--json");
  expect(json.code).toBe(6);
  expect(JSON.parse(json.stdout)).toMatchObject({ code: "STORAGE_INTEGRITY", reason: "HISTORY_INVALID", action: "OPERATOR", retryable: false });
  expect(filesOf(dir)).toEqual(before);
  counts.refused += 2;
}

/** A checkout at generation 3; returns a way to put the store back to generation 1. */
async function atGenerationThree(where: Where, a: string): Promise<() => Promise<void>> {
  await ok(where.env, "pull", a);
  write(a, "plan.md", "# plan\n");
  await ok(where.env, "commit", "-m", "plan", a);
  const putBack = await where.keep();
  write(a, "notes/one.md", "one\n");
  await ok(where.env, "commit", "-m", "one", a);
  write(a, "plan.md", "# plan\r\nship friday");
  await ok(where.env, "commit", "-m", "friday", a);
  write(a, "draft.md", "unpublished\n");
  return putBack;
}

/**
 * Checkout `a` brought to generation 2 + `lost`, the store's `current` put
 * back to generation 2 (the packs of the generations after it left in the
 * store), and `onTop` commits made on it from checkout `b` under the same
 * private root. Returns the packs of the lost generations.
 */
async function lostUnderCheckout(where: Where, tag: string, lost: number, onTop: number): Promise<{ a: string; lostPacks: string[] }> {
  const a = join(root, `${tag}-a`);
  const b = join(root, `${tag}-b`);
  const packs = async () => (await where.store().list("packs/")).map((o) => o.key);
  await ok(where.env, "pull", a);
  write(a, "plan.md", "# plan\n");
  await ok(where.env, "commit", "-m", "plan", a);
  write(a, "notes/one.md", "one\n");
  await ok(where.env, "commit", "-m", "one", a);
  const putBack = await where.keepCurrent();
  const before = new Set(await packs());
  for (let i = 0; i < lost; i++) {
    write(a, `lost/${i}.md`, `lost ${i}\n`);
    await ok(where.env, "commit", "-m", `lost ${i}`, a);
  }
  const lostPacks = (await packs()).filter((key) => !before.has(key)).sort();
  expect(lostPacks.length).toBe(lost);
  await putBack();
  await ok(where.env, "pull", b);
  for (let i = 0; i < onTop; i++) {
    write(b, "plan.md", `# plan\nstep ${i}\n`);
    await ok(where.env, "commit", "-m", `step ${i}`, b);
  }
  return { a, lostPacks };
}

const WHERE: Array<[string, (name: string) => Where]> = [["the embedded store", embedded]];
if (testBucket) WHERE.push(["S3", s3]);
else {
  test("a store that went backwards, on S3: the S3 test server is configured", () => {
    throw new Error("SLIVINGDOC_TEST_S3_BUCKET is not set: run `npm test` (it starts Ceph RGW) or see docs/s3.md");
  });
}

for (const [name, make] of WHERE) {
  describe(`the binary on a store that went backwards (${name})`, () => {
    test("an older copy put back, then the store deleted (the prefix emptied), then the copy again: pull, commit, status, gc and serve's first call refuse; attach, commit, and a fresh checkout has every file", async () => {
      const where = make(`${name === "S3" ? "s3" : "sqlite"}-rewound`);
      const a = join(root, `${name}-a`);
      const putBack = await atGenerationThree(where, a);
      const files = filesOf(a);

      await putBack();
      await refused(a, where.env, ["pull", a], "The store went backwards: this checkout was brought to generation 3 of notebook", "but the store shows generation 1.", "slivingdoc attach");
      await refused(a, where.env, ["commit", "-m", "over generation 1", a], "shows generation 1.");
      await refused(a, where.env, ["status", a], "shows generation 1.");
      // gc: on S3 the later generations' packs are still there, and none is deleted.
      const packs = (await where.store().list("packs/")).map((o) => o.key).sort();
      await refused(a, where.env, ["gc", "--grace", "0s"], "The store went backwards", "gc deleted nothing");
      expect((await where.store().list("packs/")).map((o) => o.key).sort()).toEqual(packs);
      // serve's first call, on a checkout that saw generation 3.
      const session = await connect(where.env, ["--workspace-root", a]);
      try {
        for (const [tool, args] of [["notes_pull", {}], ["notes_commit", { message: "from an agent" }]] as const) {
          const out = await call(session, tool, args);
          expect(out.isError).toBe(true);
          expect(out.data).toMatchObject({ code: "STORAGE_INTEGRITY", reason: "HISTORY_INVALID", action: "OPERATOR" });
          expect(String(out.data.message)).toContain("this checkout was brought to generation 3");
          expect(filesOf(a)).toEqual(files);
          counts.refused++;
        }
      } finally {
        await session.close();
      }

      await where.wipe();
      await refused(a, where.env, ["pull", a], "this checkout was brought to generation 3", "but the store holds no notebook");
      await refused(a, where.env, ["commit", "-m", "over nothing", a], "holds no notebook");
      await refused(a, where.env, ["status", a], "holds no notebook");
      expect(JSON.parse((await ok(where.env, "generation", "--json")).stdout).generation).toBe(0);

      // The operator's way on: attach to the copy, then commit. Nothing is lost.
      await putBack();
      const attached = await ok(where.env, "attach", a);
      expect(attached.stderr).toContain(`attached ${a} to the store as it is, at generation 1`);
      expect(filesOf(a)).toEqual(files);
      const status = JSON.parse((await ok(where.env, "status", "--json", a)).stdout);
      expect(status.files.map((f: { path: string; change: string }) => [f.path, f.change])).toEqual([
        ["draft.md", "added"],
        ["notes/one.md", "added"],
        ["plan.md", "modified"],
      ]);
      expect(JSON.parse((await ok(where.env, "commit", "--json", "-m", "the lost generations, again", a)).stdout).generation).toBe(2);
      const fresh = join(root, `${name}-fresh`);
      await ok({ ...where.env, XDG_STATE_HOME: join(root, `${name}-fresh-state`) }, "pull", fresh);
      expect(filesOf(fresh)).toEqual(files);
    }, 240_000);

    // One generation lost, or three; then as many commits on the older `current` as fit below, at or past the lost ones.
    for (const [lost, onTop] of [[1, 1], [1, 2], [1, 5], [1, 40], [3, 5]] as const) {
      test(`${lost} generation(s) lost under a checkout, ${onTop} commit(s) on the older current: gc keeps the lost packs (listed as kept for the checkout, or refused), status refuses as pull does`, async () => {
        const tag = `${name === "S3" ? "s3" : "sqlite"}-lost-${lost}-${onTop}`;
        const where = make(tag);
        const { a, lostPacks } = await lostUnderCheckout(where, tag, lost, onTop);
        const brought = `this checkout was brought to generation ${2 + lost} of notebook`;

        const stillThere = async () => expect((await where.store().list("packs/")).map((o) => o.key).filter((key) => lostPacks.includes(key)).sort()).toEqual(lostPacks);
        if (onTop <= lost || lost > 1) {
          // The store shows the checkout's generation or an older one; or lost generations built one on another.
          await refused(a, where.env, ["gc", "--grace", "0s"], "The store went backwards", "gc deleted nothing");
          await stillThere();
        } else {
          const report = JSON.parse((await ok(where.env, "gc", "--grace", "0s", "--json")).stdout);
          expect(report).toMatchObject({ generation: 2 + onTop, onHead: 0, checkoutBaselines: 1 });
          await stillThere();
          const human = await ok(where.env, "gc", "--grace", "0s");
          expect(human.stdout).toContain("removed 0 unreferenced packs");
          expect(human.stdout).toContain(" and 1 holding what a checkout under this private root was brought to, which the store's history no longer holds (a generation it lost)");
          await stillThere();
        }

        // status answers what pull answers: the same tokens and words.
        const pull = await runAs(where.env, "pull", "--json", a);
        const status = await runAs(where.env, "status", "--json", a);
        expect([pull.code, status.code]).toEqual([6, 6]);
        const refusal = (out: string) => {
          const { code, reason, action, retryable, message } = JSON.parse(out);
          return { code, reason, action, retryable, message };
        };
        expect(refusal(status.stdout)).toEqual(refusal(pull.stdout));
        await refused(a, where.env, ["status", a], brought);
      }, 600_000);
    }

    test("a wrong --store naming another notebook: refused, the directory untouched", async () => {
      const where = make(`${name === "S3" ? "s3" : "sqlite"}-right`);
      const wrong = make(`${name === "S3" ? "s3" : "sqlite"}-wrong`);
      const a = join(root, `${name}-right-a`);
      await atGenerationThree(where, a);
      const elsewhere = join(root, `${name}-elsewhere`);
      await ok(wrong.env, "pull", elsewhere);
      write(elsewhere, "plan.md", "another notebook's plan\n");
      await ok(wrong.env, "commit", "-m", "theirs", elsewhere);
      counts.swapped++;
      const url = wrong.env.SLIVINGDOC_STORE || `sqlite:${join(wrong.env.XDG_DATA_HOME!, "slivingdoc", "store.db")}`;
      await refused(a, where.env, ["pull", "--store", url, a], "The store holds another notebook: this directory is a checkout of generation 3 of notebook");
    }, 240_000);
  });
}

test("the embedded store truncated to zero bytes: pull refuses, the directory untouched", async () => {
  const where = embedded("sqlite-truncated");
  const a = join(root, "truncated-a");
  await atGenerationThree(where, a);
  truncateSync(where.file, 0);
  counts.swapped++;
  await refused(a, where.env, ["pull", a], "this checkout was brought to generation 3", "holds no notebook");
}, 120_000);
