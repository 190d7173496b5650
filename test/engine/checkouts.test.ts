/**
 * Several checkouts of one notebook on the real embedded store: merges,
 * conflicts with their marker ranges, and unpublished edits that survive.
 */
import { afterEach, describe, expect, test } from "bun:test";
import { commit } from "../../src/engine/commit.ts";
import { pull } from "../../src/engine/pull.ts";
import { makeWorld, read, refusal, seedNotebook, snapshotStore, type World, write } from "../support/fixture.ts";

let world: World;
afterEach(async () => {
  await world?.close();
});

async function seeded(files: Record<string, string>): Promise<{ a: string; b: string }> {
  world = makeWorld();
  const a = world.checkout("a");
  const b = world.checkout("b");
  await seedNotebook(world.deps(), a, files);
  await pull(world.deps(), { path: b });
  return { a, b };
}

const lines = (n: number, tag = "line") => Array.from({ length: n }, (_, i) => `${tag} ${i + 1}\n`).join("");

describe("two checkouts", () => {
  test("concurrent edits to different files both land, and each side gets the other's", async () => {
    const { a, b } = await seeded({ "a.md": "alpha\n", "b.md": "beta\n" });
    write(a, "a.md", "alpha changed\n");
    write(b, "b.md", "beta changed\n");
    const ra = await commit(world.deps(), { path: a, message: "a edits a.md" });
    const rb = await commit(world.deps(), { path: b, message: "b edits b.md" });
    expect(ra.generation).toBe(2);
    expect(rb.generation).toBe(3);
    // The commit's diffstat is its increment over the remote parent: only b.md.
    expect(rb.files).toEqual([{ path: "b.md", insertions: 1, deletions: 1 }]);
    // b's commit incorporated a's change into b's visible files.
    expect(read(b, "a.md")).toBe("alpha changed\n");
    const pulled = await pull(world.deps(), { path: a });
    expect(pulled.files).toEqual([{ path: "b.md", insertions: 1, deletions: 1 }]);
    expect(read(a, "b.md")).toBe("beta changed\n");
  });

  test("concurrent edits to different parts of one file merge", async () => {
    const base = lines(20);
    const { a, b } = await seeded({ "notes.md": base });
    write(a, "notes.md", base.replace("line 2\n", "line 2 by a\n"));
    write(b, "notes.md", base.replace("line 18\n", "line 18 by b\n"));
    await commit(world.deps(), { path: a, message: "a" });
    await commit(world.deps(), { path: b, message: "b" });
    const expected = base.replace("line 2\n", "line 2 by a\n").replace("line 18\n", "line 18 by b\n");
    expect(read(b, "notes.md")).toBe(expected);
    await pull(world.deps(), { path: a });
    expect(read(a, "notes.md")).toBe(expected);
  });

  test("edits to the same lines conflict: markers, exact ranges, and the accepted state unchanged", async () => {
    const base = lines(10);
    const { a, b } = await seeded({ "notes.md": base });
    write(a, "notes.md", base.replace("line 5\n", "line 5 by a\n"));
    write(b, "notes.md", base.replace("line 5\n", "line 5 by b\n"));
    await commit(world.deps(), { path: a, message: "a" });
    const before = await snapshotStore(world.store);
    const e = await refusal(() => commit(world.deps(), { path: b, message: "b" }));
    expect([e.code, e.reason, e.action, e.retryable]).toEqual(["CONTENT_CONFLICT", "MERGE_CONFLICT", "EDIT_FILES", false]);
    expect(e.files).toEqual([{ path: "notes.md", reason: "TEXT_CONFLICT", ranges: [{ start: 5, end: 9 }] }]);
    expect(await snapshotStore(world.store)).toBe(before);
    const text = read(b, "notes.md")!;
    expect(text.split("\n").slice(4, 9)).toEqual(["<<<<<<< local", "line 5 by b", "=======", "line 5 by a", ">>>>>>> accepted"]);

    // Markers block the commit before any store access.
    const blocked = await refusal(() => commit(world.deps(), { path: b, message: "still conflicted" }));
    expect([blocked.code, blocked.reason, blocked.action]).toEqual(["CONTENT_CONFLICT", "UNRESOLVED_MARKERS", "EDIT_FILES"]);
    expect(blocked.files).toEqual([{ path: "notes.md", reason: "UNRESOLVED_MARKERS", ranges: [{ start: 5, end: 9 }] }]);
    expect(await snapshotStore(world.store)).toBe(before);

    // Resolve by hand, commit, and both sides agree.
    write(b, "notes.md", base.replace("line 5\n", "line 5 by a and b\n"));
    const resolved = await commit(world.deps(), { path: b, message: "resolved" });
    expect(resolved.files).toEqual([{ path: "notes.md", insertions: 1, deletions: 1 }]);
    await pull(world.deps(), { path: a });
    expect(read(a, "notes.md")).toBe(base.replace("line 5\n", "line 5 by a and b\n"));
  });

  test("a pull that conflicts writes markers and reports MERGE_CONFLICT with ranges", async () => {
    const { a, b } = await seeded({ "x.md": "one\ntwo\nthree\n" });
    write(a, "x.md", "one\nTWO (a)\nthree\n");
    await commit(world.deps(), { path: a, message: "a" });
    write(b, "x.md", "one\nTWO (b)\nthree\n");
    const e = await refusal(() => pull(world.deps(), { path: b }));
    expect([e.code, e.reason]).toEqual(["CONTENT_CONFLICT", "MERGE_CONFLICT"]);
    expect(e.files).toEqual([{ path: "x.md", reason: "TEXT_CONFLICT", ranges: [{ start: 2, end: 6 }] }]);
    expect(read(b, "x.md")).toBe("one\n<<<<<<< local\nTWO (b)\n=======\nTWO (a)\n>>>>>>> accepted\nthree\n");
  });

  test("unpublished edits survive a pull that brings remote changes", async () => {
    const { a, b } = await seeded({ "shared.md": lines(10), "mine.md": "mine\n" });
    write(b, "mine.md", "mine, edited and not yet published\n");
    write(b, "new.md", "a new file of b\n");
    write(b, "shared.md", lines(10).replace("line 9\n", "line 9 by b\n"));
    write(a, "shared.md", lines(10).replace("line 1\n", "line 1 by a\n"));
    write(a, "other.md", "from a\n");
    await commit(world.deps(), { path: a, message: "a" });
    const result = await pull(world.deps(), { path: b });
    expect(result.generation).toBe(2);
    expect(read(b, "mine.md")).toBe("mine, edited and not yet published\n");
    expect(read(b, "new.md")).toBe("a new file of b\n");
    expect(read(b, "shared.md")).toBe(lines(10).replace("line 1\n", "line 1 by a\n").replace("line 9\n", "line 9 by b\n"));
    expect(read(b, "other.md")).toBe("from a\n");
    // The pull diffstat is the on-disk delta: a's two changes, not b's own edits.
    expect(result.files).toEqual([
      { path: "other.md", insertions: 1, deletions: 0 },
      { path: "shared.md", insertions: 1, deletions: 1 },
    ]);
    // And a later commit publishes exactly b's edits.
    const published = await commit(world.deps(), { path: b, message: "b" });
    expect(published.files).toEqual([
      { path: "mine.md", insertions: 1, deletions: 1 },
      { path: "new.md", insertions: 1, deletions: 0 },
      { path: "shared.md", insertions: 1, deletions: 1 },
    ]);
  });

  test("deletions propagate, and a delete against a remote edit conflicts instead of dropping the edit", async () => {
    const { a, b } = await seeded({ "gone.md": "bye\n", "kept.md": "keep\nme\n" });
    // a deletes gone.md; b pulls and loses it from disk.
    const { rmSync } = await import("node:fs");
    rmSync(`${a}/gone.md`);
    await commit(world.deps(), { path: a, message: "delete" });
    await pull(world.deps(), { path: b });
    expect(read(b, "gone.md")).toBeNull();
    // b edits kept.md while a deletes it.
    write(b, "kept.md", "keep\nme\nplease\n");
    rmSync(`${a}/kept.md`);
    await commit(world.deps(), { path: a, message: "delete kept" });
    const e = await refusal(() => commit(world.deps(), { path: b, message: "edit kept" }));
    expect(e.reason).toBe("MERGE_CONFLICT");
    expect(e.files.map((f) => [f.path, f.reason])).toEqual([["kept.md", "TEXT_CONFLICT"]]);
    expect(read(b, "kept.md")).toContain("please");
  });

  test("a file against a directory of the same name is a PATH_CONFLICT that keeps both sides", async () => {
    const { a, b } = await seeded({ "start.md": "x\n" });
    write(a, "topic", "a file named topic\n");
    await commit(world.deps(), { path: a, message: "file" });
    write(b, "topic/inner.md", "a directory named topic\n");
    const e = await refusal(() => commit(world.deps(), { path: b, message: "dir" }));
    expect([e.code, e.reason]).toEqual(["CONTENT_CONFLICT", "MERGE_CONFLICT"]);
    expect(e.files).toEqual([{ path: "topic", reason: "PATH_CONFLICT", ranges: [] }]);
    expect(read(b, "topic/inner.md")).toBe("a directory named topic\n");
    expect(read(b, "topic~accepted")).toBe("a file named topic\n");
    // Nothing is blocked: committing the resolution publishes both.
    await commit(world.deps(), { path: b, message: "keep both" });
    await pull(world.deps(), { path: a });
    expect(read(a, "topic/inner.md")).toBe("a directory named topic\n");
    expect(read(a, "topic~accepted")).toBe("a file named topic\n");
  });

  test("a commit with nothing to publish is a no-op synchronisation", async () => {
    const { a, b } = await seeded({ "x.md": "x\n" });
    write(a, "x.md", "x2\n");
    await commit(world.deps(), { path: a, message: "a" });
    const before = await snapshotStore(world.store);
    const r = await commit(world.deps(), { path: b, message: "nothing" });
    expect(r).toEqual({ path: r.path, generation: 2, files: [] });
    expect(await snapshotStore(world.store)).toBe(before);
    expect(read(b, "x.md")).toBe("x2\n");
  });
});

describe("the notebook contract", () => {
  test("bytes round-trip exactly: CRLF, BOM, no final newline, empty files, Unicode names, deep paths", async () => {
    const files: Record<string, string> = {
      "crlf.md": "one\r\ntwo\r\n",
      "bom.md": "\uFEFFwith a BOM\n",
      "no-newline.md": "no final newline",
      "empty.md": "",
      "ünïcødé/名前.md": "日本語\n",
      "a/b/c/d/e/f/g/h/deep.md": "deep\n",
      "mixed.md": "a\r\nb\nc\r",
    };
    const { b } = await seeded(files);
    const { readFileSync } = await import("node:fs");
    for (const [path, content] of Object.entries(files)) {
      expect(Buffer.compare(readFileSync(`${b}/${path}`), Buffer.from(content))).toBe(0);
    }
  });

  test("invalid content is refused by name on commit and pull, before any store access", async () => {
    const { a } = await seeded({ "ok.md": "ok\n" });
    const { symlinkSync, mkdirSync } = await import("node:fs");
    write(a, "binary.bin", new Uint8Array([0x89, 0x50, 0x4e, 0x47, 0x00, 0x01]));
    write(a, "nul.md", "text\u0000more\n");
    write(a, "latin1.md", new Uint8Array([0x63, 0x61, 0x66, 0xe9, 0x0a]));
    symlinkSync("ok.md", `${a}/link.md`);
    mkdirSync(`${a}/sub/.git`, { recursive: true });
    write(a, "sub/.git/config", "x\n");
    const { writeFileSync } = await import("node:fs");
    writeFileSync(Buffer.concat([Buffer.from(`${a}/bad`), Buffer.from([0xff]), Buffer.from(".md")]), "name is not UTF-8\n");
    write(a, "\uFFFD real replacement character.md", "a valid name\n");
    write(a, "ok.md", "changed\n");
    const before = await snapshotStore(world.store);
    for (const op of [() => commit(world.deps(), { path: a, message: "bad" }), () => pull(world.deps(), { path: a })]) {
      const e = await refusal(op);
      expect([e.code, e.reason, e.action]).toEqual(["INVALID_REQUEST", "INVALID_CONTENT", "EDIT_FILES"]);
      expect(e.files).toEqual(
        ["bad?.md", "binary.bin", "latin1.md", "link.md", "nul.md", "sub/.git"].map((path) => ({ path, reason: "INVALID_CONTENT", ranges: [] })),
      );
    }
    expect(await snapshotStore(world.store)).toBe(before);
    expect(read(a, "ok.md")).toBe("changed\n");
  });
});
