/**
 * Merge policies in the three-tree merge: each path's policy decides how a
 * file both sides changed is merged (docs/decisions/0019-merge-policies.md),
 * on a real object cache, and git's mapping from the merge attribute to the
 * policy.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type FlatTree, ObjectCache } from "../../src/engine/git/object-cache.ts";
import { type MergePolicy, mergePolicyOf } from "../../src/engine/merge/policy.ts";
import { decodeText } from "../../src/engine/merge/text.ts";
import { mergeTrees } from "../../src/engine/merge/tree-merge.ts";
import { policyOfTree } from "../../src/engine/merge/tree-policy.ts";
import { ProcessMemory } from "../../src/engine/process-memory.ts";
import { SYSTEM_RANDOM } from "../../src/surfaces/engine-deps.ts";
import { flatTrees } from "../support/flat-trees.ts";

const root = mkdtempSync(join(tmpdir(), "slivingdoc-policy-"));
let git: ObjectCache;
beforeAll(async () => {
  git = await ObjectCache.open(join(root, "git"), new ProcessMemory(SYSTEM_RANDOM).objects, SYSTEM_RANDOM.randomId);
});
afterAll(() => {
  git.close();
  rmSync(root, { recursive: true, force: true });
});

const { tree, contents } = flatTrees(() => git);

const byPath = (policies: Record<string, MergePolicy>) => (path: string): MergePolicy => policies[path] ?? "text";

const LOG = "# log\n- one\n";
const BOARD = "- [ ] a\n- [ ] b\n- [ ] c\n";

describe("mergeTrees with a merge policy", () => {
  test("union: both sides appending to a log merge with no conflict, local's line first", async () => {
    const baseline = await tree({ "log.md": LOG, "plan.md": "goal\n" });
    const local = await tree({ "log.md": LOG + "- two\n", "plan.md": "goal: L\n" });
    const accepted = await tree({ "log.md": LOG + "- three\n", "plan.md": "goal: A\n" });
    const out = await mergeTrees(git, baseline, local, accepted, new Map(), byPath({ "log.md": "union" }));
    // Only the path the policy names is a union; plan.md is still a text merge.
    expect(out.conflicts).toEqual([{ path: "plan.md", reason: "TEXT_CONFLICT", ranges: [{ start: 1, end: 5 }] }]);
    expect((await contents(out.result))["log.md"]).toBe(LOG + "- two\n- three\n");
  });

  test("without a policy every path is a text merge, as before", async () => {
    const baseline = await tree({ "log.md": LOG });
    const out = await mergeTrees(git, baseline, await tree({ "log.md": LOG + "- two\n" }), await tree({ "log.md": LOG + "- three\n" }));
    expect(out.conflicts).toEqual([{ path: "log.md", reason: "TEXT_CONFLICT", ranges: [{ start: 3, end: 7 }] }]);
  });

  test("union: a file both sides added is both files, local's first", async () => {
    const out = await mergeTrees(git, await tree({}), await tree({ "log.md": "- L\n" }), await tree({ "log.md": "- A\n" }), new Map(), () => "union");
    expect(out.conflicts).toEqual([]);
    expect(await contents(out.result)).toEqual({ "log.md": "- L\n- A\n" });
  });

  test("lines: ticking neighbouring tasks merges; the same task ticked differently conflicts", async () => {
    const baseline = await tree({ "tasks.md": BOARD, "other.md": BOARD });
    const local = await tree({ "tasks.md": "- [x] a\n- [ ] b\n- [ ] c\n", "other.md": "- [x] a\n- [ ] b\n- [ ] c\n" });
    const accepted = await tree({ "tasks.md": "- [ ] a\n- [x] b\n- [ ] c\n", "other.md": "- [-] a\n- [ ] b\n- [ ] c\n" });
    const out = await mergeTrees(git, baseline, local, accepted, new Map(), () => "lines");
    expect(out.conflicts).toEqual([{ path: "other.md", reason: "TEXT_CONFLICT", ranges: [{ start: 1, end: 5 }] }]);
    expect(await contents(out.result)).toEqual({
      "other.md": "<<<<<<< local\n- [x] a\n=======\n- [-] a\n>>>>>>> accepted\n- [ ] b\n- [ ] c\n",
      "tasks.md": "- [x] a\n- [x] b\n- [ ] c\n",
    });
  });

  test("binary: a file both sides changed keeps local's at the path and accepted's beside it", async () => {
    const baseline = await tree({ "data.csv": "1\n", "plan.md": "p\n" });
    const local = await tree({ "data.csv": "1\n2\n", "plan.md": "p\n" });
    const accepted = await tree({ "data.csv": "1\n3\n", "plan.md": "p!\n" });
    const out = await mergeTrees(git, baseline, local, accepted, new Map(), byPath({ "data.csv": "binary" }));
    expect(out.conflicts).toEqual([{ path: "data.csv", reason: "PATH_CONFLICT", ranges: [] }]);
    expect(await contents(out.result)).toEqual({ "data.csv": "1\n2\n", "data.csv~accepted": "1\n3\n", "plan.md": "p!\n" });
  });

  test("binary: the name beside never overwrites a file or a directory already there", async () => {
    const baseline = await tree({ "d.bin": "0\n" });
    const local = await tree({ "d.bin": "L\n", "d.bin~accepted": "mine\n" });
    const accepted = await tree({ "d.bin": "A\n", "d.bin~accepted~/x": "theirs\n" });
    const out = await mergeTrees(git, baseline, local, accepted, new Map(), () => "binary");
    expect(out.conflicts).toEqual([{ path: "d.bin", reason: "PATH_CONFLICT", ranges: [] }]);
    expect(await contents(out.result)).toEqual({ "d.bin": "L\n", "d.bin~accepted": "mine\n", "d.bin~accepted~/x": "theirs\n", "d.bin~accepted~~": "A\n" });
  });

  test("binary: a change on one side, or the same change on both, is taken as it is", async () => {
    const baseline = await tree({ "a.bin": "0\n", "b.bin": "0\n" });
    const local = await tree({ "a.bin": "1\n", "b.bin": "2\n" });
    const accepted = await tree({ "a.bin": "0\n", "b.bin": "2\n" });
    const out = await mergeTrees(git, baseline, local, accepted, new Map(), () => "binary");
    expect(out.conflicts).toEqual([]);
    expect(await contents(out.result)).toEqual({ "a.bin": "1\n", "b.bin": "2\n" });
  });

  for (const policy of ["union", "lines", "binary"] as const) {
    test(`${policy}: a file deleted on one side and changed on the other is the text merge's conflict`, async () => {
      const baseline = await tree({ "f.md": "a\nb\n" });
      const changed = await tree({ "f.md": "a\nB\n" });
      const deleted = await tree({});
      const want = await mergeTrees(git, baseline, deleted, changed);
      const got = await mergeTrees(git, baseline, deleted, changed, new Map(), () => policy);
      expect(want.conflicts.map((c) => c.reason)).toEqual(["TEXT_CONFLICT"]);
      expect(got).toEqual(want);
    });
  }

  test("the policy is asked about the path being merged", async () => {
    const asked: string[] = [];
    const baseline = await tree({ "a/x.md": "0\n", "b.md": "0\n" });
    await mergeTrees(git, baseline, await tree({ "a/x.md": "1\n", "b.md": "0\n" }), await tree({ "a/x.md": "2\n", "b.md": "1\n" }), new Map(), (p) => {
      asked.push(p);
      return "text";
    });
    // Only a file both sides changed needs a policy.
    expect(asked).toEqual(["a/x.md"]);
  });
});

describe("the merge attribute chooses the policy as git chooses a driver", () => {
  const table: Array<[Parameters<typeof mergePolicyOf>[0], MergePolicy]> = [
    [{ state: "unspecified" }, "text"],
    [{ state: "set" }, "text"],
    [{ state: "unset" }, "binary"],
    [{ state: "value", value: "text" }, "text"],
    [{ state: "value", value: "binary" }, "binary"],
    [{ state: "value", value: "union" }, "union"],
    [{ state: "value", value: "lines" }, "lines"],
    [{ state: "value", value: "ours" }, "text"],
    [{ state: "value", value: "Union" }, "text"],
    [{ state: "value", value: "" }, "text"],
  ];
  for (const [attribute, policy] of table) {
    test(`${JSON.stringify(attribute)} → ${policy}`, () => expect(mergePolicyOf(attribute)).toBe(policy));
  }
});

/*
 * The policy a merge uses by default comes from the accepted tree's
 * `.gitattributes` (tree-policy.ts): so a merge that also changes
 * `.gitattributes` is governed by the accepted one, and every process
 * merging onto that accepted state gets the same result.
 */
const HEAD = "# log\n";
async function text(t: FlatTree, path: string): Promise<string> {
  return decodeText(await git.readBlob(t.get(path)!))!;
}

const UNION = "log.md merge=union\n";

describe("the policy of the accepted tree", () => {
  test("root and subdirectory files, the deeper one winning, as git check-attr", async () => {
    const t = await tree({
      ".gitattributes": "*.md merge=union\nboard.md merge=lines\n",
      "team/.gitattributes": "*.md -merge\nnotes.md merge=text\n",
      "team/sub/.gitattributes": "log.md merge=nosuchdriver\n",
    });
    const policy = await policyOfTree(git, t);
    expect(policy("log.md")).toBe("union");
    expect(policy("board.md")).toBe("lines");
    expect(policy("a/board.md")).toBe("lines");
    expect(policy("team/log.md")).toBe("binary");
    expect(policy("team/notes.md")).toBe("text");
    expect(policy("team/sub/log.md")).toBe("text");
    expect(policy("plan.txt")).toBe("text");
  });

  test("both append to a log the accepted .gitattributes makes a union: no conflict", async () => {
    const baseline = await tree({ ".gitattributes": UNION, "log.md": HEAD });
    const local = await tree({ ".gitattributes": UNION, "log.md": `${HEAD}local\n` });
    const accepted = await tree({ ".gitattributes": UNION, "log.md": `${HEAD}accepted\n` });
    const out = await mergeTrees(git, baseline, local, accepted);
    expect(out.conflicts).toEqual([]);
    expect(await text(out.result, "log.md")).toBe(`${HEAD}local\naccepted\n`);
  });

  test("a merge that adds the attribute locally is still a text merge: the accepted state's attributes govern", async () => {
    const baseline = await tree({ "log.md": HEAD });
    const local = await tree({ ".gitattributes": UNION, "log.md": `${HEAD}local\n` });
    const accepted = await tree({ "log.md": `${HEAD}accepted\n` });
    const out = await mergeTrees(git, baseline, local, accepted);
    expect(out.conflicts.map((c) => [c.path, c.reason])).toEqual([["log.md", "TEXT_CONFLICT"]]);
    // The attribute itself is merged like any file, and governs from the next merge on.
    expect(await text(out.result, ".gitattributes")).toBe(UNION);
  });

  test("a merge onto an accepted state that just removed the attribute is a text merge", async () => {
    const baseline = await tree({ ".gitattributes": UNION, "log.md": HEAD });
    const local = await tree({ ".gitattributes": UNION, "log.md": `${HEAD}local\n` });
    const accepted = await tree({ "log.md": `${HEAD}accepted\n` });
    const out = await mergeTrees(git, baseline, local, accepted);
    expect(out.conflicts.map((c) => c.path)).toEqual(["log.md"]);
    expect(out.result.has(".gitattributes")).toBe(false);
  });

  test("the same three trees merge the same way whichever checkout merges them", async () => {
    // A pull, a commit and a writer carrying a proposal all pass the accepted
    // tree as the third side; the local checkout's attributes differ here.
    const accepted = await tree({ ".gitattributes": UNION, "log.md": `${HEAD}accepted\n` });
    const baseline = await tree({ ".gitattributes": UNION, "log.md": HEAD });
    const one = await mergeTrees(git, baseline, await tree({ ".gitattributes": UNION, "log.md": `${HEAD}local\n` }), accepted);
    const other = await mergeTrees(git, baseline, await tree({ ".gitattributes": "", "log.md": `${HEAD}local\n` }), accepted);
    expect(await text(one.result, "log.md")).toBe(await text(other.result, "log.md"));
    expect(other.conflicts.filter((c) => c.path === "log.md")).toEqual([]);
  });
});
