/**
 * Versions that meet (docs/cli.md, "Versions that meet"): today's binary on a
 * store whose manifest is one format newer than it reads, on the embedded
 * store and on S3. A newer format is never damage: every command refuses it
 * before anything changes, as a start-up refusal (INCOMPATIBLE_STORE, exit 2,
 * one line naming both formats and saying to upgrade), and so does `serve`
 * at its start; a `serve` already running answers its calls with the token
 * table's MANIFEST_INVALID, saying the same. `doctor` names the notebook's
 * format, id and generation, and calls such a store unusable.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { MANIFEST_KEY } from "../../src/contract/store-formats.ts";
import type { ObjectStore } from "../../src/store/object-store.ts";
import { openSqliteStore } from "../../src/store/sqlite.ts";
import { filesOf, write } from "../support/fixture.ts";
import { runAs, userEnv } from "../support/binary-env.ts";
import { call, connect } from "../support/mcp.ts";
import { emptyStore, s3ServerMissing, testBucket, testS3Store } from "../support/s3-test-store.ts";
import { SYSTEM_CLOCK } from "../../src/surfaces/system-clock.ts";

const root = mkdtempSync(join(tmpdir(), "slivingdoc-e2e-versions-"));
const cleanups: Array<() => Promise<void>> = [];
afterAll(async () => {
  for (const c of cleanups) await c();
  rmSync(root, { recursive: true, force: true });
});

const NEWER_LINE =
  "slivingdoc: INCOMPATIBLE_STORE: a newer version of slivingdoc wrote this store (store format 5; this version reads formats 1 to 4). The store is not damaged: upgrade slivingdoc to use it";

interface Where {
  env: Record<string, string>;
  store: ObjectStore;
}


const KINDS: Record<string, (name: string) => Where> = {
  "the embedded store": (name) => {
    const env = userEnv(root, name);
    const store = openSqliteStore(join(env.XDG_DATA_HOME!, "slivingdoc", "store.db"), SYSTEM_CLOCK);
    cleanups.push(() => store.close());
    return { env, store };
  },
  S3: (name) => {
    const prefix = `slivingdoc-test/e2e-versions-${crypto.randomUUID().slice(0, 8)}-${name}`;
    const store = testS3Store(prefix);
    cleanups.push(async () => {
      await emptyStore(store);
      await store.close();
    });
    return { env: { ...userEnv(root, name), SLIVINGDOC_STORE: `s3://${testBucket}/${prefix}` }, store };
  },
};


/** `current` rewritten as the next format would write it: format 5, and a field this version has never seen. */
async function upgrade(store: ObjectStore): Promise<Uint8Array> {
  const { body, etag } = (await store.get(MANIFEST_KEY))!;
  const manifest = JSON.parse(new TextDecoder().decode(body));
  const newer = new TextEncoder().encode(`${JSON.stringify({ ...manifest, format: 5, somethingNew: { shards: 4 } })}\n`);
  expect((await store.putIfMatch(MANIFEST_KEY, newer, etag)).ok).toBe(true);
  return newer;
}

for (const [kind, make] of Object.entries(KINDS)) {
  if (kind === "S3" && s3ServerMissing()) continue;
  describe(`today's binary on a store one format newer (${kind})`, () => {
    test("every command refuses it at start, one line, exit 2, and changes nothing; doctor names it", async () => {
      const where = make("cli");
      const a = join(root, `${kind}-a`);
      expect((await runAs(where.env, "pull", a)).code).toBe(0);
      write(a, "plan.md", "ship\n");
      expect((await runAs(where.env, "commit", "-m", "plan", a)).code).toBe(0);

      // Before: doctor reports the notebook it holds.
      const before = JSON.parse((await runAs(where.env, "doctor", "--samples", "2", "--json")).stdout);
      expect(before.notebook).toMatchObject({ state: "held", format: 4, generation: 1, packs: 1, historyPacks: 0 });
      expect(before.notebook.notebook).toMatch(/^[0-9a-f]{32}$/);

      const newer = await upgrade(where.store);
      write(a, "plan.md", "ship on Friday\n");
      const files = filesOf(a);
      const b = join(root, `${kind}-b`);
      for (const args of [["pull", a], ["commit", "-m", "more", a], ["status", a], ["diff", a], ["log"], ["show", "1"], ["gc", "--grace", "0s"], ["pull", b], ["web", "--port", "0"]]) {
        const r = await runAs(where.env, ...args);
        expect({ args, code: r.code, stdout: r.stdout, stderr: r.stderr }).toEqual({ args, code: 2, stdout: "", stderr: `${NEWER_LINE}\n` });
        // --json changes nothing about a start-up refusal: it comes before any result exists.
        expect((await runAs(where.env, ...args, "--json")).code).toBe(2);
      }
      expect(filesOf(a)).toEqual(files);
      expect(existsSync(join(b, "plan.md"))).toBe(false);
      expect((await where.store.get(MANIFEST_KEY))!.body).toEqual(newer);

      // On S3 the probe's record lets serve answer the handshake before the store opens: its log lines come first.
      const served = await runAs(where.env, "serve");
      expect({ code: served.code, last: served.stderr.trimEnd().split("\n").at(-1) }).toEqual({ code: 2, last: NEWER_LINE });
      if (kind !== "S3") expect(served.stderr).toBe(`${NEWER_LINE}\n`);

      const doctor = await runAs(where.env, "doctor", "--samples", "2", "--json");
      expect(doctor.code).toBe(2);
      const report = JSON.parse(doctor.stdout);
      expect(report.verdict).toBe("unusable");
      expect(report.notebook).toEqual({ state: "newer", format: 5 });
      expect(report.problems.map((p: { text: string }) => p.text)).toContainEqual(expect.stringContaining("It is not damaged: upgrade slivingdoc"));
      expect((await runAs(where.env, "doctor", "--samples", "2")).stdout).toContain("written by a newer slivingdoc (store format 5)");
    }, 240_000);

    test("a serve already running answers MANIFEST_INVALID saying a newer slivingdoc wrote the store, not that it is damaged", async () => {
      const where = make("serve");
      const session = await connect(where.env);
      try {
        expect((await call(session, "notes_pull", {})).isError).toBe(false);
        const pulled = await call(session, "notes_pull", {});
        write(pulled.data.path as string, "a.md", "one\n");
        expect((await call(session, "notes_commit", { message: "one" })).isError).toBe(false);
        await upgrade(where.store);
        for (const [tool, args] of [["notes_pull", {}], ["notes_commit", { message: "two" }]] as const) {
          const r = await call(session, tool, args);
          expect(r.isError).toBe(true);
          expect(r.data).toMatchObject({ code: "STORAGE_INTEGRITY", reason: "MANIFEST_INVALID", action: "OPERATOR", retryable: false });
          expect(r.data.message).toBe(
            "A newer version of slivingdoc wrote this store (store format 5; this version reads formats 1 to 4). The store is not damaged: upgrade slivingdoc to use it.",
          );
        }
      } finally {
        await session.close();
      }
    }, 240_000);
  });
}
