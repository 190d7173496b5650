/**
 * A second writer in the checkout's directory — an editor, a script logging
 * into a file, another agent — writes to a file while a pull or a commit is
 * rewriting it. Whatever it wrote before the file is replaced is merged like
 * any other local edit (or left for the next call), never overwritten
 * (visible-writes.ts). Each test writes at one named stage of the call (the
 * crash tests' hooks), or between the check of a file and its replacement.
 */
import { afterEach, describe, expect, test } from "bun:test";
import { appendFileSync, closeSync, openSync, readdirSync, rmSync, writeFileSync, writeSync } from "node:fs";
import { join } from "node:path";
import type { DomainError } from "../../src/contract/errors.ts";
import { commit } from "../../src/engine/commit.ts";
import type { EngineDeps } from "../../src/engine/engine.ts";
import { pull } from "../../src/engine/pull.ts";
import { makeWorld, read, seedNotebook, type World, write } from "../support/fixture.ts";

let world: World;
afterEach(async () => {
  await world?.close();
});

const SEED = Array.from({ length: 20 }, (_, i) => `line ${i + 1}\n`).join("");

/** a and b share a notebook; b changed the first line of shared.md since a pulled, and a has an unpublished edit of its own. */
async function twoWriters(): Promise<{ a: string; b: string }> {
  world = makeWorld();
  const a = world.checkout("a");
  const b = world.checkout("b");
  await seedNotebook(world.deps(), a, { "shared.md": SEED, "old.md": "to be removed by b\n" });
  await pull(world.deps(), { path: b });
  write(b, "shared.md", SEED.replace("line 1\n", "line 1 by b\n"));
  rmSync(join(b, "old.md"));
  await commit(world.deps(), { path: b, message: "b" });
  write(a, "mine.md", "a's own edit\n");
  return { a, b };
}

type Hooks = Pick<EngineDeps, "onStage" | "afterWrite" | "onReplace">;

/** The stages a call goes through, in order: the names its onStage hook is called with, and the file writes. */
async function stagesOf(op: "pull" | "commit"): Promise<string[]> {
  const { a } = await twoWriters();
  const seen: string[] = [];
  let writes = 0;
  const hooks: Hooks = {
    onStage: (stage) => void seen.push(stage),
    afterWrite: () => void seen.push(`write:${++writes}`),
    onReplace: (path, moment) => void seen.push(`${moment}:${path}`),
  };
  if (op === "pull") await pull(world.deps(hooks), { path: a });
  else await commit(world.deps(hooks), { path: a, message: "a" });
  await world.close();
  return [...new Set(seen)];
}

/** Hooks that append one line to `file` in `dir` at the first moment named `at`. */
function appendAt(dir: string, file: string, at: string, line: string): Hooks {
  let done = false;
  let writes = 0;
  const maybe = (moment: string) => {
    if (done || moment !== at) return;
    done = true;
    appendFileSync(join(dir, file), line);
  };
  return {
    onStage: (stage) => maybe(stage),
    afterWrite: () => maybe(`write:${++writes}`),
    onReplace: (path, moment) => maybe(`${moment}:${path}`),
  };
}

/**
 * Hooks that open `file` in `dir` for appending at the first moment named
 * `openAt`, as `echo line >> FILE` does, and write one line through that
 * descriptor at the first moment named each of `writeAt` — after the file
 * was replaced, for most: into the old file, which no longer has a name.
 * `close` closes it (after the call: a writer may keep it open past it).
 */
function appendThroughOld(dir: string, file: string, openAt: string, writeAt: string[]): { hooks: Hooks; lines: string[]; close: () => void } {
  let fd: number | null = null;
  const lines: string[] = [];
  const seen = new Set<string>();
  let writes = 0;
  const at = (moment: string) => {
    if (seen.has(moment)) return;
    seen.add(moment);
    if (moment === openAt) fd = openSync(join(dir, file), "a");
    if (fd === null || !writeAt.includes(moment)) return;
    const line = `opened at ${openAt}, written at ${moment}\n`;
    writeSync(fd, line);
    lines.push(line);
  };
  const hooks: Hooks = {
    onStage: (stage) => at(stage),
    afterWrite: () => at(`write:${++writes}`),
    onReplace: (path, moment) => at(`${moment}:${path}`),
  };
  return { hooks, lines, close: () => fd !== null && closeSync(fd) };
}

function count(text: string | null, line: string): number {
  return (text ?? "").split("\n").filter((l) => `${l}\n` === line).length;
}

/** The accepted state, as a fresh checkout pulls it. */
async function accepted(name: string, path: string): Promise<string | null> {
  const fresh = world.checkout(name);
  await pull(world.deps(), { path: fresh });
  return read(fresh, path);
}

for (const op of ["pull", "commit"] as const) {
  describe(`a line appended to a file while a ${op} rewrites it`, async () => {
    const stages = await stagesOf(op);
    test("the call goes through the stages it is tested at", () => {
      expect(stages).toContain("merge");
      expect(stages).toContain("materialize");
      for (const moment of ["checked", "gated", "renamed"]) expect(stages).toContain(`${moment}:shared.md`);
      expect(stages).toContain("write:1");
    });
    for (const at of stages) {
      test(`at ${at}: kept on disk, then published once, with the other writer's change`, async () => {
        const { a } = await twoWriters();
        const line = `appended at ${at}\n`;
        const hooks = appendAt(a, "shared.md", at, line);
        if (op === "pull") await pull(world.deps(hooks), { path: a });
        else await commit(world.deps(hooks), { path: a, message: "a" });
        // On disk at once, with b's change merged in beside it.
        expect(count(read(a, "shared.md"), line)).toBe(1);
        expect(count(read(a, "shared.md"), "line 1 by b\n")).toBe(1);
        // A local edit like any other: the next commit publishes it, once.
        await commit(world.deps(), { path: a, message: "after" });
        const shared = await accepted("c", "shared.md");
        expect(count(shared, line)).toBe(1);
        expect(count(shared, "line 1 by b\n")).toBe(1);
        expect(await accepted("d", "mine.md")).toBe("a's own edit\n");
        expect(readdirSync(a).filter((n) => n.startsWith(".slivingdoc-partial-"))).toEqual([]);
      });
    }
  });
}

/** A call on a's checkout, with `hooks`. */
async function call(op: "pull" | "commit", a: string, hooks: Hooks): Promise<void> {
  if (op === "pull") await pull(world.deps(hooks), { path: a });
  else await commit(world.deps(hooks), { path: a, message: "a" });
}

for (const op of ["pull", "commit"] as const) {
  describe(`a line written through a descriptor of the file opened before a ${op} replaces it`, async () => {
    const stages = await stagesOf(op);
    const opens = ["materialize", "checked:shared.md", "gated:shared.md"];
    test("the call goes through the moments it is tested at", () => {
      for (const moment of [...opens, "renamed:shared.md", "diffstat"]) expect(stages).toContain(moment);
      expect(stages.indexOf("diffstat")).toBe(stages.length - 1);
    });
    for (const openAt of opens) {
      for (const writeAt of stages.slice(stages.indexOf(openAt) + 1)) {
        test(`opened at ${openAt}, written at ${writeAt}: in the new file, then published once`, async () => {
          const { a } = await twoWriters();
          const writer = appendThroughOld(a, "shared.md", openAt, [writeAt]);
          try {
            await call(op, a, writer.hooks);
          } finally {
            writer.close();
          }
          expect(writer.lines.length).toBe(1);
          const [line] = writer.lines as [string];
          expect([count(read(a, "shared.md"), line), count(read(a, "shared.md"), "line 1 by b\n")]).toEqual([1, 1]);
          await commit(world.deps(), { path: a, message: "after" });
          const shared = await accepted("c", "shared.md");
          expect([count(shared, line), count(shared, "line 1 by b\n")]).toEqual([1, 1]);
          expect(readdirSync(a).filter((n) => n.startsWith(".slivingdoc-partial-"))).toEqual([]);
        });
      }
    }
    test("opened in the instant before the rename, a line written at every moment after it: each kept once", async () => {
      const { a } = await twoWriters();
      const writer = appendThroughOld(a, "shared.md", "gated:shared.md", stages.slice(stages.indexOf("gated:shared.md") + 1));
      try {
        await call(op, a, writer.hooks);
      } finally {
        writer.close();
      }
      expect(writer.lines.length).toBe(stages.length - 1 - stages.indexOf("gated:shared.md"));
      await commit(world.deps(), { path: a, message: "after" });
      const shared = await accepted("c", "shared.md");
      expect(writer.lines.map((line) => count(shared, line))).toEqual(writer.lines.map(() => 1));
    });
  });
}

test("a line written through a descriptor opened before the pull removes the file, after the removal: the file comes back holding it", async () => {
  const { a } = await twoWriters();
  const writer = appendThroughOld(a, "old.md", "gated:old.md", ["write:1"]);
  try {
    await pull(world.deps(writer.hooks), { path: a });
  } finally {
    writer.close();
  }
  // The removal stands in the accepted state; the file is back here, as a local file, with what it held and the line.
  expect(read(a, "old.md")).toBe(`to be removed by b\n${writer.lines[0]}`);
  await commit(world.deps(), { path: a, message: "after" });
  expect(await accepted("c", "old.md")).toBe(`to be removed by b\n${writer.lines[0]}`);
});

test("a pull that replaces more files than it holds open: the old ones are read before they are let go, and few stay open", async () => {
  world = makeWorld();
  const a = world.checkout("a");
  const b = world.checkout("b");
  const names = Array.from({ length: 100 }, (_, i) => `f${String(i).padStart(3, "0")}.md`);
  await seedNotebook(world.deps(), a, Object.fromEntries(names.map((n) => [n, SEED])));
  await pull(world.deps(), { path: b });
  for (const n of names) write(b, n, SEED.replace("line 1\n", "line 1 by b\n"));
  await commit(world.deps(), { path: b, message: "b" });
  const descriptors = () => readdirSync("/proc/self/fd").length;
  const before = descriptors();
  let most = 0;
  // Written long after its replacement, before the call answers: the first file is let go (and read) once 64 more are held.
  const writer = appendThroughOld(a, "f000.md", "gated:f000.md", ["write:40"]);
  const hooks: Hooks = {
    ...writer.hooks,
    afterWrite: () => {
      most = Math.max(most, descriptors());
      return writer.hooks.afterWrite?.();
    },
  };
  try {
    await pull(world.deps(hooks), { path: a });
  } finally {
    writer.close();
  }
  expect(writer.lines.length).toBe(1);
  expect(count(read(a, "f000.md"), writer.lines[0]!)).toBe(1);
  expect(count(read(a, "f000.md"), "line 1 by b\n")).toBe(1);
  expect(most - before).toBeLessThan(80);
  expect(most - before).toBeGreaterThan(60);
});

test("a line appended to a file the pull removes, in the instant before the removal: the file comes back, and conflicts", async () => {
  const { a } = await twoWriters();
  const line = "appended to the file b removed\n";
  const e = await pull(world.deps(appendAt(a, "old.md", "gated:old.md", line)), { path: a }).then(
    () => null,
    (err: DomainError) => err,
  );
  // Modified here, deleted there: git's modify/delete, shown as a conflict block that keeps the lines.
  expect(e?.reason).toBe("MERGE_CONFLICT");
  expect(e?.files.map((f) => f.path)).toEqual(["old.md"]);
  expect(read(a, "old.md")).toContain(line);
});

test("a file created at a path the pull adds, after the scan: kept, and merged as an add on both sides", async () => {
  world = makeWorld();
  const a = world.checkout("a");
  const b = world.checkout("b");
  await pull(world.deps(), { path: a });
  await pull(world.deps(), { path: b });
  write(b, "notes/new.md", "from b\n");
  write(b, "notes/other.md", "also from b\n");
  await commit(world.deps(), { path: b, message: "b" });
  const onStage = (stage: string) => {
    if (stage === "materialize") write(a, "notes/new.md", "appeared meanwhile\n");
  };
  const e = await pull(world.deps({ onStage }), { path: a }).then(
    () => null,
    (err: DomainError) => err,
  );
  expect(e?.reason).toBe("MERGE_CONFLICT");
  expect(read(a, "notes/new.md")).toContain("appeared meanwhile\n");
  expect(read(a, "notes/new.md")).toContain("from b\n");
  expect(read(a, "notes/other.md")).toBe("also from b\n");
  expect(readdirSync(join(a, "notes")).sort()).toEqual(["new.md", "other.md"]);
});

test("a file that keeps changing through every round is left for the next call, which merges it", async () => {
  const { a } = await twoWriters();
  let n = 0;
  // Every check finds it written to again: the pull gives up on it after its rounds.
  const onReplace = (path: string, moment: string) => {
    if (path === "shared.md" && moment === "checked") appendFileSync(join(a, "shared.md"), `busy ${++n}\n`);
  };
  const r = await pull(world.deps({ onReplace }), { path: a });
  expect(r.generation).toBe(2);
  expect(n).toBeGreaterThan(1);
  const text = read(a, "shared.md")!;
  for (let i = 1; i <= n; i++) expect(count(text, `busy ${i}\n`)).toBe(1);
  // Not brought up to date, and not reported as changed by the pull.
  expect(count(text, "line 1 by b\n")).toBe(0);
  expect(r.files.map((f) => f.path)).not.toContain("shared.md");
  // The next call merges it: b's change arrives, the lines stay local edits and publish once.
  await pull(world.deps(), { path: a });
  expect(count(read(a, "shared.md"), "line 1 by b\n")).toBe(1);
  await commit(world.deps(), { path: a, message: "after" });
  const shared = await accepted("c", "shared.md");
  for (let i = 1; i <= n; i++) expect(count(shared, `busy ${i}\n`)).toBe(1);
  expect(count(shared, "line 1 by b\n")).toBe(1);
});

test("a line appended just before the rename and another just after: both kept, nothing put back over the second", async () => {
  const { a } = await twoWriters();
  const before = "appended to the old file, in the instant before the rename\n";
  const after = "appended to the new file, in the instant after it\n";
  let appended = 0;
  const onReplace = (path: string, moment: string) => {
    if (path !== "shared.md" || appended === 2) return;
    if (moment === "gated") appendFileSync(join(a, "shared.md"), before), appended++;
    if (moment === "renamed") appendFileSync(join(a, "shared.md"), after), appended++;
  };
  await pull(world.deps({ onReplace }), { path: a });
  expect(appended).toBe(2);
  const text = read(a, "shared.md");
  expect([count(text, before), count(text, after), count(text, "line 1 by b\n")]).toEqual([1, 1, 1]);
  await commit(world.deps(), { path: a, message: "after" });
  const shared = await accepted("c", "shared.md");
  expect([count(shared, before), count(shared, after), count(shared, "line 1 by b\n")]).toEqual([1, 1, 1]);
});

test("a rewrite of the whole file in the instant before the rename (not an append): it is put back, and merged again", async () => {
  const { a } = await twoWriters();
  const rewritten = SEED.replace("line 20\n", "line 20, rewritten here\n");
  let done = false;
  const onReplace = (path: string, moment: string) => {
    if (path !== "shared.md" || moment !== "gated" || done) return;
    done = true;
    // Same length, so only the content tells: a rewrite in place, as `sed -i` without a rename or an editor writing through does.
    writeFileSync(join(a, "shared.md"), rewritten.replace("line 1\n", "LINE 1\n"));
  };
  const e = await pull(world.deps({ onReplace }), { path: a }).then(
    () => null,
    (err: DomainError) => err,
  );
  expect(done).toBe(true);
  // Line 1 changed here and there: a conflict, with both versions kept; line 20 is ours.
  expect(e?.reason).toBe("MERGE_CONFLICT");
  expect(read(a, "shared.md")).toContain("line 20, rewritten here\n");
  expect(read(a, "shared.md")).toContain("LINE 1\n");
  expect(read(a, "shared.md")).toContain("line 1 by b\n");
});

