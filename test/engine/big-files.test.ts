/**
 * The most a notebook file may hold (checkout/scan.ts, MAX_FILE_BYTES):
 * a file of one's own over it is refused by name from its size, before it
 * is read; one the store holds (another version, with a higher limit,
 * published it) is refused by name before anything is read or written, and
 * nothing is lost. Through the engine; the binary's own refusal of a real
 * 128 MiB file is in test/e2e/edges.test.ts.
 */
import { afterEach, expect, test } from "bun:test";
import { existsSync, mkdirSync, truncateSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { commit } from "../../src/engine/commit.ts";
import { pull } from "../../src/engine/pull.ts";
import { makeWorld, read, refusal, seedNotebook, snapshotStore, type World, write } from "../support/fixture.ts";

let world: World;
afterEach(async () => {
  await world?.close();
});

/** The documented limit (docs/cli.md, "Limits"). */
const MAX_FILE_BYTES = 128 * 1024 * 1024;

const tokens = (e: { code: string; reason: string; action: string }) => [e.code, e.reason, e.action];

test("a file over the limit is refused by name from its size before it is read, on commit and on pull; at the limit it is taken", async () => {
  world = makeWorld();
  const dir = world.checkout("a");
  await seedNotebook(world.deps(), dir, { "note.md": "note\n" });
  // Sparse: the size says what it holds without writing 128 MiB. Were it
  // read, its NUL bytes would be refused as not text, with other words.
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, "huge.md"), "");
  truncateSync(join(dir, "huge.md"), MAX_FILE_BYTES + 1);
  const before = await snapshotStore(world.store);
  for (const call of [() => commit(world.deps(), { path: dir, message: "huge" }), () => pull(world.deps(), { path: dir })]) {
    const e = await refusal(call);
    expect(tokens(e)).toEqual(["INVALID_REQUEST", "INVALID_CONTENT", "EDIT_FILES"]);
    expect(e.files.map((f) => [f.path, f.reason])).toEqual([["huge.md", "INVALID_CONTENT"]]);
    expect(e.message).toBe("These files are over 128 MiB, the most a notebook file may hold: huge.md. Split them into smaller files, or delete them, then call again.");
  }
  expect(await snapshotStore(world.store)).toBe(before);

  // The boundary, at a lower limit: a file of exactly the limit is published, one byte more is not.
  write(dir, "huge.md", "x".repeat(999) + "\n");
  await commit(world.deps({ maxFileBytes: 1000 }), { path: dir, message: "at the limit" });
  write(dir, "huge.md", "x".repeat(1000) + "\n");
  const over = await refusal(() => commit(world.deps({ maxFileBytes: 1000 }), { path: dir, message: "over" }));
  expect(over.files.map((f) => f.path)).toEqual(["huge.md"]);
  expect(over.message).toContain("over 1000 bytes, the most a notebook file may hold: huge.md.");
});

test("a file the store holds over this version's limit: pull and commit refuse it by name, and nothing here changes", async () => {
  world = makeWorld();
  const writer = world.checkout("writer");
  const reader = world.checkout("reader");
  await seedNotebook(world.deps(), writer, { "note.md": "one\ntwo\n" });
  const small = world.deps({ maxFileBytes: 1000 });
  await pull(small, { path: reader });
  // Another version, which takes bigger files, publishes one, and a change to note.md.
  write(writer, "big.md", "y".repeat(4000) + "\n");
  write(writer, "note.md", "one\ntwo\nthree\n");
  await commit(world.deps(), { path: writer, message: "big" });
  // Meanwhile the reader edits note.md.
  write(reader, "note.md", "ONE\ntwo\n");
  const before = await snapshotStore(world.store);

  const pulled = await refusal(() => pull(small, { path: reader }));
  expect(tokens(pulled)).toEqual(["INVALID_REQUEST", "INVALID_CONTENT", "EDIT_FILES"]);
  expect(pulled.files.map((f) => [f.path, f.reason])).toEqual([["big.md", "INVALID_CONTENT"]]);
  expect(pulled.message).toBe(
    "The notebook holds files this checkout cannot take. These files are over 1000 bytes, the most a notebook file may hold: big.md. Split them into smaller files, or delete them, then call again. Nothing here was changed.",
  );
  const committed = await refusal(() => commit(small, { path: reader, message: "mine" }));
  expect(committed.files.map((f) => f.path)).toEqual(["big.md"]);
  // Nothing lost, nothing written: the edit stands, the big file never came, the store is as it was.
  expect(read(reader, "note.md")).toBe("ONE\ntwo\n");
  expect(existsSync(join(reader, "big.md"))).toBe(false);
  expect(await snapshotStore(world.store)).toBe(before);

  // Once the file is split (by the version that can), the reader takes everything, its edit merged.
  write(writer, "big.md", "y\n");
  await commit(world.deps(), { path: writer, message: "split" });
  await pull(small, { path: reader });
  expect(read(reader, "note.md")).toBe("ONE\ntwo\nthree\n");
  expect(read(reader, "big.md")).toBe("y\n");
});
