/**
 * An earlier export is updated only when that moves its `main` forward:
 * when `main` is a retained publication, or the parent of the oldest one
 * (the history then joins what the export holds). One whose `main` is older
 * than that shares no commit with the retained history, so updating it
 * would leave its own commits unreachable: it is refused, untouched.
 */
import { afterEach, expect, test } from "bun:test";
import { cpSync, mkdtempSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { commit } from "../../src/engine/commit.ts";
import type { EngineDeps } from "../../src/engine/engine.ts";
import { exportHistory, ExportRefused } from "../../src/engine/history/export.ts";
import { closeHistory, type History, openHistory } from "../../src/engine/history/read.ts";
import { pull } from "../../src/engine/pull.ts";
import { git } from "../support/cgit.ts";
import { makeWorld, type World, write } from "../support/fixture.ts";

let world: World;
afterEach(async () => {
  await world?.close();
});

async function withHistory<T>(privateRoot: string, fn: (history: History) => Promise<T>): Promise<T> {
  const history = await openHistory(world.deps({ privateRoot }));
  try {
    return await fn(history);
  } finally {
    closeHistory(history);
  }
}

/** The files of a directory with their bytes: equal before and after means nothing was written. */
function contents(dir: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const name of readdirSync(dir, { recursive: true, encoding: "utf8" }).sort()) {
    try {
      out[name] = readFileSync(join(dir, name)).toString("base64");
    } catch {
      out[name] = "(directory)";
    }
  }
  return out;
}

test("past compaction, an export whose main is the oldest retained publication's parent joins; an older one is refused", async () => {
  world = makeWorld();
  // Compaction keeps 3 commits and no history packs: the retained history moves on quickly.
  const deps = (more: Partial<EngineDeps> = {}) => world.deps({ compaction: { maxPacks: 4, keepRecent: 1, history: 3, periodMs: 0 }, ...more });
  const a = world.checkout("a");
  await pull(deps(), { path: a });
  // An export after every commit, kept as it was: exports[g] has main at generation g.
  const exports: string[] = [];
  const head = 12;
  for (let g = 1; g <= head; g++) {
    write(a, "n.md", `${g}\n`);
    await commit(deps(), { path: a, message: `c${g}` });
    exports[g] = join(world.root, `export-${g}`);
    await exportHistory(deps(), { named: exports[g]!, dir: exports[g]! });
  }
  // A history cache keeps the packs it once read: a fresh one holds only what the store retains.
  const fresh = mkdtempSync(join(world.root, "fresh-"));
  const boundary = await withHistory(fresh, async (history) => {
    expect(history.boundary).not.toBeNull();
    return history.publications.at(-1)!.generation - 1;
  });
  expect(boundary).toBeGreaterThan(1);
  for (let g = 1; g < head; g++) {
    const dir = join(world.root, `again-${g}`);
    cpSync(exports[g]!, dir, { recursive: true });
    if (g < boundary) {
      const before = contents(dir);
      const refused = await exportHistory(deps({ privateRoot: fresh }), { named: dir, dir }).catch((e: unknown) => e);
      expect(refused).toBeInstanceOf(ExportRefused);
      expect((refused as ExportRefused).why).toBe("is an export of another notebook, or of this one from before the history the store keeps");
      expect(contents(dir)).toEqual(before);
      continue;
    }
    const result = await exportHistory(deps({ privateRoot: fresh }), { named: dir, dir });
    expect(result).toMatchObject({ generation: head, added: head - g, shallow: false });
    expect(git(dir, "fsck", "--strict", "--no-dangling")).toMatchObject({ code: 0, err: "" });
    // Joined: the whole line from generation 1, no shallow boundary.
    expect(git(dir, "rev-list", "--count", "main").out).toBe(`${head}\n`);
  }
});
