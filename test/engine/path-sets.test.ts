/**
 * Enforcement of the path sets on the real embedded store: protected edits
 * are refused and reset while free edits stay, markers win over the path
 * check, and protected paths never conflict on pull or commit.
 */
import { afterEach, expect, test } from "bun:test";
import { rmSync } from "node:fs";
import { join } from "node:path";
import { commit } from "../../src/engine/commit.ts";
import { pull } from "../../src/engine/pull.ts";
import { makeWorld, read, refusal, seedNotebook, snapshotStore, type World, write } from "../support/fixture.ts";

let world: World;
afterEach(async () => {
  await world?.close();
});

const readOnlyDocs = { readOnly: ["docs", "faq.md"], writable: [] };

async function seeded(): Promise<{ admin: string; agent: string }> {
  world = makeWorld();
  const admin = world.checkout("admin");
  const agent = world.checkout("agent");
  await seedNotebook(world.deps(), admin, { "docs/guide.md": "guide\nline 2\nline 3\n", "faq.md": "faq\n", "notes.md": "notes\n" });
  await pull(world.deps({ pathSets: readOnlyDocs }), { path: agent });
  return { admin, agent };
}

test("a commit touching protected and free files: free edits kept, protected reset, remote unchanged; then it lands", async () => {
  const { agent } = await seeded();
  const deps = world.deps({ pathSets: readOnlyDocs });
  write(agent, "docs/guide.md", "defaced\n");
  write(agent, "docs/new.md", "sneaked in\n");
  rmSync(join(agent, "faq.md"));
  write(agent, "notes.md", "notes, edited\n");
  write(agent, "mine.md", "new and free\n");
  const before = await snapshotStore(world.store);
  const e = await refusal(() => commit(deps, { path: agent, message: "mixed" }));
  expect([e.code, e.reason, e.action, e.retryable]).toEqual(["INVALID_REQUEST", "READ_ONLY_PATH", "EDIT_FILES", false]);
  expect(e.files).toEqual(["docs/guide.md", "docs/new.md", "faq.md"].map((path) => ({ path, reason: "READ_ONLY", ranges: [] })));
  expect(e.message).toContain("read-only: docs, faq.md");
  expect(await snapshotStore(world.store)).toBe(before);
  // Protected files are back to their accepted content; a protected new file is gone.
  expect(read(agent, "docs/guide.md")).toBe("guide\nline 2\nline 3\n");
  expect(read(agent, "faq.md")).toBe("faq\n");
  expect(read(agent, "docs/new.md")).toBeNull();
  // The caller's other edits stay as they were.
  expect(read(agent, "notes.md")).toBe("notes, edited\n");
  expect(read(agent, "mine.md")).toBe("new and free\n");
  // With the protected edits gone, the same commit lands.
  const ok = await commit(deps, { path: agent, message: "mixed" });
  expect(ok.files).toEqual([
    { path: "mine.md", insertions: 1, deletions: 0 },
    { path: "notes.md", insertions: 1, deletions: 1 },
  ]);
});

test("a writable set protects everything outside it", async () => {
  const { agent } = await seeded();
  const deps = world.deps({ pathSets: { readOnly: [], writable: ["agents/alice"] } });
  write(agent, "agents/alice/log.md", "mine\n");
  write(agent, "agents/bob/log.md", "not mine\n");
  write(agent, "notes.md", "changed\n");
  const e = await refusal(() => commit(deps, { path: agent, message: "w" }));
  expect(e.files.map((f) => f.path)).toEqual(["agents/bob/log.md", "notes.md"]);
  expect(read(agent, "agents/alice/log.md")).toBe("mine\n");
  expect((await commit(deps, { path: agent, message: "w" })).files).toEqual([{ path: "agents/alice/log.md", insertions: 1, deletions: 0 }]);
});

test("a marker block written by hand under a protected path is UNRESOLVED_MARKERS, before the path check", async () => {
  const { agent } = await seeded();
  write(agent, "docs/guide.md", "guide\n<<<<<<< mine\na\n=======\nb\n>>>>>>> theirs\n");
  const e = await refusal(() => commit(world.deps({ pathSets: readOnlyDocs }), { path: agent, message: "markers" }));
  expect([e.code, e.reason]).toEqual(["CONTENT_CONFLICT", "UNRESOLVED_MARKERS"]);
  expect(e.files).toEqual([{ path: "docs/guide.md", reason: "UNRESOLVED_MARKERS", ranges: [{ start: 2, end: 6 }] }]);
  // The path check did not run: the file was not reset.
  expect(read(agent, "docs/guide.md")).toContain("<<<<<<< mine");
});

test("a concurrent remote change to a protected path never conflicts in the protected checkout", async () => {
  const { admin, agent } = await seeded();
  const deps = world.deps({ pathSets: readOnlyDocs });
  // The agent edits a protected file anyway (it will lose it), and a free one.
  write(agent, "docs/guide.md", "agent's guide\nline 2\nline 3\n");
  write(agent, "notes.md", "agent notes\n");
  // Meanwhile the admin changes the same protected lines and adds a directory where the agent made a file.
  write(admin, "docs/guide.md", "admin's guide\nline 2\nline 3\n");
  write(admin, "faq.md", "faq v2\n");
  await commit(world.deps(), { path: admin, message: "admin" });
  const pulled = await pull(deps, { path: agent });
  expect(pulled.generation).toBe(2);
  expect(read(agent, "docs/guide.md")).toBe("admin's guide\nline 2\nline 3\n");
  expect(read(agent, "faq.md")).toBe("faq v2\n");
  expect(read(agent, "notes.md")).toBe("agent notes\n");
  // And on commit: the admin changes a protected file again; the agent's commit merges without conflict.
  write(admin, "docs/guide.md", "admin's guide, v3\nline 2\nline 3\n");
  await commit(world.deps(), { path: admin, message: "admin again" });
  const committed = await commit(deps, { path: agent, message: "notes" });
  expect(committed.generation).toBe(4);
  expect(read(agent, "docs/guide.md")).toBe("admin's guide, v3\nline 2\nline 3\n");
});
