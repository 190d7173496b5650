/**
 * Files no agent means to share (docs/decisions/0018-files-no-agent-means-to-share.md):
 * editor and OS files and what the notebook's .gitignore files name are
 * never published, never touched by a pull and never a content error;
 * a file the notebook holds is never hidden.
 */
import { afterEach, expect, test } from "bun:test";
import { lstatSync, readFileSync, readlinkSync, symlinkSync } from "node:fs";
import { join } from "node:path";
import { commit } from "../../src/engine/commit.ts";
import { readLocalChanges } from "../../src/engine/local-changes.ts";
import { pull } from "../../src/engine/pull.ts";
import { filesOf, makeWorld, read, refusal, seedNotebook, type World, write } from "../support/fixture.ts";

let world: World;
afterEach(async () => {
  await world?.close();
});

/** Bytes no text file holds: a NUL, and invalid UTF-8. */
const BINARY = new Uint8Array([0x00, 0x05, 0x16, 0x07, 0xff, 0xfe, 0x42, 0x75, 0x64, 0x31]);

/** What another checkout sees once it pulls: the published files. */
async function published(name: string): Promise<Record<string, string>> {
  const dir = world.checkout(name);
  await pull(world.deps(), { path: dir });
  return Object.fromEntries(Object.keys(filesOf(dir)).map((p) => [p, read(dir, p)!]));
}

test("a pull into a checkout holding editor and OS files, then a commit: both OK, those files untouched and never published", async () => {
  world = makeWorld();
  const a = world.checkout("a");
  await seedNotebook(world.deps(), a, { "notes.md": "one\n", "d/plan.md": "plan\n" });
  const b = world.checkout("b");
  write(b, ".notes.md.swp", BINARY);
  write(b, ".notes.md.swo", BINARY);
  write(b, ".DS_Store", BINARY);
  write(b, "d/.DS_Store", BINARY);
  write(b, "d/Thumbs.db", BINARY);
  symlinkSync("agent@host.1234:1700000000", join(b, ".#notes.md")); // Emacs's lock link, dangling
  const ignored = [".notes.md.swp", ".notes.md.swo", ".DS_Store", "d/.DS_Store", "d/Thumbs.db"];
  const bytesOf = () => ignored.map((p) => readFileSync(join(b, p)).toString("base64"));
  const before = bytesOf();

  const pulled = await pull(world.deps(), { path: b });
  expect(pulled.generation).toBe(1);
  expect(read(b, "notes.md")).toBe("one\n");
  write(b, "notes.md", "one\ntwo\n");
  const committed = await commit(world.deps(), { path: b, message: "two" });
  expect(committed.generation).toBe(2);
  expect(committed.files.map((f) => f.path)).toEqual(["notes.md"]);

  expect(bytesOf()).toEqual(before);
  expect(readlinkSync(join(b, ".#notes.md"))).toBe("agent@host.1234:1700000000");
  expect(await published("c")).toEqual({ "d/plan.md": "plan\n", "notes.md": "one\ntwo\n" });
  const status = await readLocalChanges(world.deps(), { path: b });
  expect(status.ignored).toEqual([".#notes.md", ".DS_Store", ".notes.md.swo", ".notes.md.swp", "d/.DS_Store", "d/Thumbs.db"]);
  expect(status.changes).toEqual([]);
});

test("a pull that removes a directory's last notebook file leaves the ignored file in it", async () => {
  world = makeWorld();
  const a = world.checkout("a");
  await seedNotebook(world.deps(), a, { "d/a.md": "a\n", "b.md": "b\n" });
  const b = world.checkout("b");
  await pull(world.deps(), { path: b });
  write(b, "d/.DS_Store", BINARY);
  write(a, "d/a.md", "");
  const { rmSync } = await import("node:fs");
  rmSync(join(a, "d/a.md"));
  await commit(world.deps(), { path: a, message: "remove d/a.md" });
  await pull(world.deps(), { path: b });
  expect(read(b, "d/a.md")).toBeNull();
  expect(new Uint8Array(readFileSync(join(b, "d/.DS_Store")))).toEqual(BINARY);
});

test(".gitignore rules are honoured, in every directory, and a rule never hides a file the notebook holds", async () => {
  world = makeWorld();
  const a = world.checkout("a");
  await seedNotebook(world.deps(), a, { "keep.log": "kept\n", "notes.md": "n\n" });
  write(a, ".gitignore", "*.log\nbuild/\n");
  write(a, "d/.gitignore", "!*.log\n");
  write(a, "new.log", "never\n");
  write(a, "build/out.md", "never\n");
  write(a, "d/wanted.log", "wanted\n");
  write(a, "keep.log", "kept\nedited\n");
  const committed = await commit(world.deps(), { path: a, message: "rules" });
  expect(committed.files.map((f) => f.path)).toEqual([".gitignore", "d/.gitignore", "d/wanted.log", "keep.log"]);
  expect(await published("c")).toEqual({
    ".gitignore": "*.log\nbuild/\n",
    "d/.gitignore": "!*.log\n",
    "d/wanted.log": "wanted\n",
    "keep.log": "kept\nedited\n",
    "notes.md": "n\n",
  });
  expect((await readLocalChanges(world.deps(), { path: a })).ignored).toEqual(["build/", "new.log"]);
});

test("a `*` rule stops new files only: files the notebook holds and the rule files keep publishing", async () => {
  world = makeWorld();
  const a = world.checkout("a");
  await seedNotebook(world.deps(), a, { "notes.md": "n\n", "d/plan.md": "p\n" });
  write(a, ".gitignore", "*\n");
  write(a, "notes.md", "n\nmore\n");
  write(a, "d/plan.md", "p\nmore\n");
  write(a, "d/new.md", "new\n");
  write(a, "fresh.md", "fresh\n");
  const committed = await commit(world.deps(), { path: a, message: "star" });
  expect(committed.files.map((f) => f.path)).toEqual([".gitignore", "d/plan.md", "notes.md"]);
  expect(await published("c")).toEqual({ ".gitignore": "*\n", "d/plan.md": "p\nmore\n", "notes.md": "n\nmore\n" });
  expect((await readLocalChanges(world.deps(), { path: a })).ignored).toEqual(["d/new.md", "fresh.md"]);
});

test("a pull that brings a path a local ignored file is at keeps both sides: the local file is local content then", async () => {
  world = makeWorld();
  const a = world.checkout("a");
  await seedNotebook(world.deps(), a, { "notes.md": "n\n" });
  const b = world.checkout("b");
  await pull(world.deps(), { path: b });
  write(b, ".gitignore", "*.log\n");
  write(b, "run.log", "b's own log\n");
  write(a, "run.log", "a's published log\n");
  await commit(world.deps(), { path: a, message: "a log" });
  const e = await refusal(() => pull(world.deps(), { path: b }));
  expect([e.code, e.reason]).toEqual(["CONTENT_CONFLICT", "MERGE_CONFLICT"]);
  expect(e.files.map((f) => f.path)).toEqual(["run.log"]);
  const text = read(b, "run.log")!;
  expect(text).toContain("b's own log\n");
  expect(text).toContain("a's published log\n");
});

test("an ignored binary file is no content error, but one the notebook holds still is", async () => {
  world = makeWorld();
  const a = world.checkout("a");
  await seedNotebook(world.deps(), a, { "notes.md": "n\n" });
  write(a, "Thumbs.db", BINARY);
  write(a, "notes.md", "n\nm\n");
  await commit(world.deps(), { path: a, message: "ok" });
  // A .gitignore that publishes Thumbs.db again makes it content: binary, refused by name.
  write(a, ".gitignore", "!Thumbs.db\n");
  const e = await refusal(() => commit(world.deps(), { path: a, message: "refused" }));
  expect([e.reason, e.files.map((f) => f.path)]).toEqual(["INVALID_CONTENT", ["Thumbs.db"]]);
  expect(lstatSync(join(a, "Thumbs.db")).size).toBe(BINARY.length);
});

test("a pull that brings a path a local ignored binary file is at refuses it by name before writing anything", async () => {
  world = makeWorld();
  const a = world.checkout("a");
  await seedNotebook(world.deps(), a, { "notes.md": "n\n" });
  const b = world.checkout("b");
  await pull(world.deps(), { path: b });
  write(b, "x.swp", BINARY);
  // Another agent publishes a file at that path (its .gitignore lets it).
  write(a, ".gitignore", "!x.swp\n");
  write(a, "x.swp", "text from a\n");
  write(a, "notes.md", "n\nm\n");
  await commit(world.deps(), { path: a, message: "a" });
  const e = await refusal(() => pull(world.deps(), { path: b }));
  expect([e.reason, e.files.map((f) => f.path)]).toEqual(["INVALID_CONTENT", ["x.swp"]]);
  expect(new Uint8Array(readFileSync(join(b, "x.swp")))).toEqual(BINARY);
  expect(read(b, "notes.md")).toBe("n\n");
});

test("a commit that takes in another's file at a path a local ignored file is at leaves that file, and the next pull keeps both sides", async () => {
  world = makeWorld();
  const a = world.checkout("a");
  await seedNotebook(world.deps(), a, { "notes.md": "n\n" });
  const b = world.checkout("b");
  await pull(world.deps(), { path: b });
  write(b, ".gitignore", "*.log\n");
  write(b, "run.log", "b's own log\n");
  write(a, "run.log", "a's published log\n");
  await commit(world.deps(), { path: a, message: "a log" });
  write(b, "notes.md", "n\nfrom b\n");
  const committed = await commit(world.deps(), { path: b, message: "b" });
  expect(committed.generation).toBe(3);
  expect(read(b, "run.log")).toBe("b's own log\n");
  expect((await published("c"))["run.log"]).toBe("a's published log\n");
  const e = await refusal(() => pull(world.deps(), { path: b }));
  expect([e.reason, e.files.map((f) => f.path)]).toEqual(["MERGE_CONFLICT", ["run.log"]]);
  expect(read(b, "run.log")).toContain("b's own log\n");
  expect(read(b, "run.log")).toContain("a's published log\n");
});
