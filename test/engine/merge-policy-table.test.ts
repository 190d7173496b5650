/**
 * Every merge policy is one entry of merge/policy.ts's table, and the merge
 * asks the entry, never a policy's name: a policy that only this test
 * defines, registered in the table and chosen by `.gitattributes`, is merged
 * by its own line merge and keeps the other side beside the file as its
 * entry says — in the three-tree merge, and in the engine's remerge of a
 * visible file that changed while a pull wrote it, where nothing can be
 * written beside it.
 */
import { afterAll, afterEach, beforeAll, describe, expect, test } from "bun:test";
import { appendFileSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { commit } from "../../src/engine/commit.ts";
import { ObjectCache } from "../../src/engine/git/object-cache.ts";
import { type FileMerge, mergePolicyOf, policyEntry, registerMergePolicy } from "../../src/engine/merge/policy.ts";
import { decodeText, encodeText } from "../../src/engine/merge/text.ts";
import { mergeTrees } from "../../src/engine/merge/tree-merge.ts";
import { ProcessMemory } from "../../src/engine/process-memory.ts";
import { pull } from "../../src/engine/pull.ts";
import { SYSTEM_RANDOM } from "../../src/surfaces/engine-deps.ts";
import { makeWorld, read, seedNotebook, type World, write } from "../support/fixture.ts";
import { flatTrees } from "../support/flat-trees.ts";

/** The test policies' line merge: a mark, then local's lines, then accepted's, never a conflict. */
function stitch(_baseline: Uint8Array, local: Uint8Array, accepted: Uint8Array): FileMerge {
  return { bytes: encodeText(`stitched\n${decodeText(local)}${decodeText(accepted)}`), conflicts: [] };
}

const ATTRIBUTES = "*.in merge=test-in-file\n*.by merge=test-beside\n";

const root = mkdtempSync(join(tmpdir(), "slivingdoc-policy-table-"));
let git: ObjectCache;
const unregister: Array<() => void> = [];
beforeAll(async () => {
  unregister.push(registerMergePolicy({ name: "test-in-file", mergeText: stitch, onConflict: "in-file" }));
  unregister.push(registerMergePolicy({ name: "test-beside", mergeText: stitch, onConflict: "beside" }));
  git = await ObjectCache.open(join(root, "git"), new ProcessMemory(SYSTEM_RANDOM).objects, SYSTEM_RANDOM.randomId);
});
afterAll(() => {
  for (const off of unregister) off();
  git.close();
  rmSync(root, { recursive: true, force: true });
});

const { tree, contents } = flatTrees(() => git);

describe("a policy registered in the table", () => {
  test("is chosen by its name in the merge attribute, and a built-in name cannot be replaced", () => {
    expect(mergePolicyOf({ state: "value", value: "test-beside" })).toBe("test-beside");
    expect(policyEntry("test-in-file").mergeText).toBe(stitch);
    expect(() => registerMergePolicy({ name: "binary", mergeText: stitch, onConflict: "in-file" })).toThrow();
  });

  test("the three-tree merge uses its line merge, or keeps accepted's file beside local's, as its entry says", async () => {
    const baseline = await tree({ ".gitattributes": ATTRIBUTES, "a.in": "0\n", "b.by": "0\n" });
    const local = await tree({ ".gitattributes": ATTRIBUTES, "a.in": "L\n", "b.by": "L\n" });
    const accepted = await tree({ ".gitattributes": ATTRIBUTES, "a.in": "A\n", "b.by": "A\n" });
    const out = await mergeTrees(git, baseline, local, accepted);
    expect(out.conflicts).toEqual([{ path: "b.by", reason: "PATH_CONFLICT", ranges: [] }]);
    expect(await contents(out.result)).toEqual({ ".gitattributes": ATTRIBUTES, "a.in": "stitched\nL\nA\n", "b.by": "L\n", "b.by~accepted": "A\n" });
  });

  test("where nothing can be written beside the file, the beside policy's own line merge merges it", async () => {
    const baseline = await tree({ ".gitattributes": ATTRIBUTES, "b.by": "0\n" });
    const out = await mergeTrees(git, baseline, await tree({ ".gitattributes": ATTRIBUTES, "b.by": "L\n" }), await tree({ ".gitattributes": ATTRIBUTES, "b.by": "A\n" }), new Map(), undefined, { beside: false });
    expect(out.conflicts).toEqual([]);
    expect(await contents(out.result)).toEqual({ ".gitattributes": ATTRIBUTES, "b.by": "stitched\nL\nA\n" });
  });
});

describe("the engine's remerge of a file written to during a pull", () => {
  let world: World;
  afterEach(async () => {
    await world?.close();
  });

  test("asks the entry: the beside policy's line merge, as no second file can be written there", async () => {
    world = makeWorld();
    const a = world.checkout("a");
    const b = world.checkout("b");
    await seedNotebook(world.deps(), a, { ".gitattributes": ATTRIBUTES, "f.by": "0\n" });
    await pull(world.deps(), { path: b });
    write(b, "f.by", "from b\n");
    await commit(world.deps(), { path: b, message: "b" });
    // a's copy is unchanged when the pull scans it, and written to right before the pull replaces it.
    let appended = false;
    const onReplace = (path: string, moment: string) => {
      if (path !== "f.by" || moment !== "checked" || appended) return;
      appended = true;
      appendFileSync(join(a, "f.by"), "meanwhile\n");
    };
    const r = await pull(world.deps({ onReplace }), { path: a });
    expect(appended).toBe(true);
    expect(r.generation).toBe(2);
    expect(read(a, "f.by")).toBe("stitched\n0\nmeanwhile\nfrom b\n");
    expect(read(a, "f.by~accepted")).toBeNull();
  });
});
