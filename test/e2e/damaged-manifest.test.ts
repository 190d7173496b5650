/**
 * A damaged `current` — empty, truncated JSON, or not JSON at all — through
 * the built binary, on the embedded store and on S3 (Ceph RGW under `npm
 * test`). Every command, `attach` included, refuses it with
 * STORAGE_INTEGRITY · MANIFEST_INVALID (exit 6) and changes nothing; `attach
 * --replace-damaged-manifest` moves it aside as `current.damaged-<time>`
 * and takes the store as emptied: every checkout's files come back as local
 * edits (the others through an attach of their own), and commits publish
 * them under a new notebook id. A manifest of a newer format is no damage:
 * refused, never moved aside.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DAMAGED_PREFIX } from "../../src/engine/publish/damaged-manifest.ts";
import { MANIFEST_KEY } from "../../src/engine/publish/manifest.ts";
import type { ObjectStore } from "../../src/store/object-store.ts";
import { openSqliteStore } from "../../src/store/sqlite.ts";
import { filesOf, readCurrent, write } from "../support/fixture.ts";
import { runAs, userEnv } from "../support/binary-env.ts";
import { emptyStore, testBucket, testS3Store } from "../support/s3-test-store.ts";
import { SYSTEM_CLOCK } from "../../src/surfaces/system-clock.ts";

const root = mkdtempSync(join(tmpdir(), "slivingdoc-e2e-damaged-"));
const cleanups: Array<() => Promise<void>> = [];
afterAll(async () => {
  for (const c of cleanups) await c();
  rmSync(root, { recursive: true, force: true });
});

/** One store location as the binary is pointed at it, and the test's own handle on it (the binary is not running meanwhile). */
interface Where {
  env: Record<string, string>;
  store: ObjectStore;
}


function embedded(name: string): Where {
  const env = userEnv(root, name);
  const store = openSqliteStore(join(env.XDG_DATA_HOME!, "slivingdoc", "store.db"), SYSTEM_CLOCK);
  cleanups.push(() => store.close());
  return { env, store };
}

function s3(name: string): Where {
  const prefix = `slivingdoc-test/e2e-damaged-${crypto.randomUUID().slice(0, 8)}-${name}`;
  const store = testS3Store(prefix);
  cleanups.push(async () => {
    await emptyStore(store);
    await store.close();
  });
  return { env: { ...userEnv(root, name), SLIVINGDOC_STORE: `s3://${testBucket}/${prefix}` }, store };
}


async function ok(env: Record<string, string>, ...args: string[]) {
  const r = await runAs(env, ...args);
  if (r.code !== 0) console.error(`exit ${r.code}\n${r.stdout}\n${r.stderr}`);
  expect(r.code).toBe(0);
  return r;
}

/** `current` as stored, byte for byte (null: absent). */
async function currentBytes(store: ObjectStore): Promise<Uint8Array | null> {
  return (await store.get(MANIFEST_KEY))?.body ?? null;
}

/** Replace `current` with `body`, as a broken tool or a hand would. */
async function damage(store: ObjectStore, body: Uint8Array): Promise<void> {
  const { etag } = (await store.get(MANIFEST_KEY))!;
  expect((await store.putIfMatch(MANIFEST_KEY, body, etag)).ok).toBe(true);
}

/** The one line a command line answers a store of format 5 with. */
const NEWER_LINE =
  "slivingdoc: INCOMPATIBLE_STORE: a newer version of slivingdoc wrote this store (store format 5; this version reads formats 1 to 4). The store is not damaged: upgrade slivingdoc to use it";

/** The command answers exit 6, STORAGE_INTEGRITY · MANIFEST_INVALID · OPERATOR (with `words`), and neither `dir` nor `current` changed. */
async function refused(where: Where, dir: string, args: string[], ...words: string[]) {
  const before = { files: filesOf(dir), current: await currentBytes(where.store) };
  const human = await runAs(where.env, ...args);
  expect(human.code).toBe(6);
  expect(human.stderr).toContain("error: STORAGE_INTEGRITY · MANIFEST_INVALID\n");
  for (const w of words) expect(human.stderr).toContain(w);
  const json = await runAs(where.env, ...args, "--json");
  expect(json.code).toBe(6);
  expect(JSON.parse(json.stdout)).toMatchObject({ code: "STORAGE_INTEGRITY", reason: "MANIFEST_INVALID", action: "OPERATOR", retryable: false });
  expect({ files: filesOf(dir), current: await currentBytes(where.store) }).toEqual(before);
  expect(await where.store.list(DAMAGED_PREFIX)).toEqual([]);
}

/** Two checkouts of one notebook at generation 1 (plan.md), each with an unpublished file of its own; the notebook's id. */
async function twoCheckouts(where: Where, name: string): Promise<{ a: string; b: string; notebook: string }> {
  const a = join(root, `${name}-a`);
  const b = join(root, `${name}-b`);
  await ok(where.env, "pull", a);
  write(a, "plan.md", "# plan\n");
  await ok(where.env, "commit", "-m", "plan", a);
  await ok(where.env, "pull", b);
  write(a, "a.md", "from a\n");
  write(b, "b.md", "from b\n");
  return { a, b, notebook: (await readCurrent(where.store)).manifest.notebook! };
}

const DAMAGES: Array<[string, (valid: Uint8Array) => Uint8Array]> = [
  ["empty", () => new Uint8Array(0)],
  ["truncated JSON", (valid) => valid.slice(0, valid.length >> 1)],
  ["not JSON", () => new TextEncoder().encode("\u0000garbage\u00ff")],
];

const WHERE: Array<[string, (name: string) => Where]> = [["the embedded store", embedded]];
if (testBucket) WHERE.push(["S3", s3]);
else {
  test("a damaged manifest, on S3: the S3 test server is configured", () => {
    throw new Error("SLIVINGDOC_TEST_S3_BUCKET is not set: run `npm test` (it starts Ceph RGW) or see docs/s3.md");
  });
}

for (const [storeName, make] of WHERE) {
  const kind = storeName === "S3" ? "s3" : "sqlite";
  describe(`the binary on a damaged manifest (${storeName})`, () => {
    for (const [damageName, damaged] of DAMAGES) {
      test(`${damageName} current: refused by every command without the flag; attach --replace-damaged-manifest moves it aside, and every checkout's files come back as local edits a commit publishes`, async () => {
        const name = `${kind}-${damageName.replace(/ /g, "-")}`;
        const where = make(name);
        const { a, b, notebook } = await twoCheckouts(where, name);
        const bad = damaged((await currentBytes(where.store))!);
        await damage(where.store, bad);
        const filesA = filesOf(a);

        await refused(where, a, ["pull", a], "an operator must inspect");
        await refused(where, a, ["commit", "-m", "over it", a]);
        await refused(where, a, ["attach", a]);

        // Moved aside whole, under its own name, as the answer says (in words, or in --json); the store holds no notebook.
        let movedAside: string;
        if (damageName === "empty") {
          const human = await ok(where.env, "attach", "--replace-damaged-manifest", a);
          expect(human.stderr).toContain(`moved the store's damaged manifest aside as ${DAMAGED_PREFIX}`);
          expect(human.stderr).toContain(": the store is taken as emptied, and the next commit starts the notebook again under a new notebook id\n");
          expect(human.stderr).toContain(`attached ${a} to the store as it is, at generation 0`);
          movedAside = (await where.store.list(DAMAGED_PREFIX))[0]!.key;
          expect(human.stderr).toContain(movedAside);
        } else {
          const attached = JSON.parse((await ok(where.env, "attach", "--replace-damaged-manifest", "--json", a)).stdout);
          expect(attached).toMatchObject({ code: "OK", attached: true, generation: 0 });
          movedAside = attached.movedAside;
        }
        expect(movedAside).toMatch(/^current\.damaged-\d{8}T\d{6}\.\d{3}Z$/);
        expect(await currentBytes(where.store)).toBeNull();
        expect((await where.store.get(movedAside))!.body).toEqual(bad);
        expect(filesOf(a)).toEqual(filesA);
        const status = JSON.parse((await ok(where.env, "status", "--json", a)).stdout);
        expect(status.files.map((f: { path: string; change: string }) => [f.path, f.change])).toEqual([
          ["a.md", "added"],
          ["plan.md", "added"],
        ]);
        expect(JSON.parse((await ok(where.env, "commit", "--json", "-m", "again", a)).stdout).generation).toBe(1);
        // The notebook started again, under a new id.
        const { manifest } = await readCurrent(where.store);
        expect(manifest.notebook).not.toBe(notebook);

        // B: the store went backwards for it; its attach keeps its files, and its commit publishes them.
        const before = await runAs(where.env, "pull", b);
        expect(before.code).toBe(6);
        expect(before.stderr).toContain("The store went backwards");
        const human = await ok(where.env, "attach", b);
        expect(human.stderr).toContain(`attached ${b} to the store as it is, at generation 1`);
        expect(JSON.parse((await ok(where.env, "commit", "--json", "-m", "b again", b)).stdout).generation).toBe(2);
        const fresh = join(root, `${name}-fresh`);
        await ok(where.env, "pull", fresh);
        expect(filesOf(fresh)).toEqual(filesOf(b));
        expect(Object.keys(filesOf(fresh)).sort()).toEqual(["a.md", "b.md", "plan.md"]);
        // The flag on a valid manifest moves nothing: a plain attach.
        const again = JSON.parse((await ok(where.env, "attach", "--replace-damaged-manifest", "--json", a)).stdout);
        expect(again).toMatchObject({ code: "OK", attached: false, movedAside: null, generation: 2 });
        expect((await where.store.list(DAMAGED_PREFIX)).length).toBe(1);
      }, 240_000);
    }

    test("a manifest of a newer format, whole or truncated, is no damage: attach --replace-damaged-manifest refuses it and moves nothing", async () => {
      const where = make(`${kind}-newer`);
      const { a } = await twoCheckouts(where, `${kind}-newer`);
      const valid = JSON.parse(new TextDecoder().decode((await currentBytes(where.store))!));
      const newer = new TextEncoder().encode(`${JSON.stringify({ ...valid, format: 5, somethingNew: [] }, null, 2)}\n`);
      for (const body of [newer, newer.slice(0, newer.length >> 1)]) {
        await damage(where.store, body);
        // A newer binary's store: the command line's start-up refusal (docs/cli.md, "Versions that meet"), nothing moved.
        const before = { files: filesOf(a), current: await currentBytes(where.store) };
        const r = await runAs(where.env, "attach", "--replace-damaged-manifest", a);
        expect({ code: r.code, stderr: r.stderr }).toEqual({ code: 2, stderr: `${NEWER_LINE}\n` });
        expect({ files: filesOf(a), current: await currentBytes(where.store) }).toEqual(before);
        expect(await where.store.list(DAMAGED_PREFIX)).toEqual([]);
      }
    }, 240_000);
  });
}
