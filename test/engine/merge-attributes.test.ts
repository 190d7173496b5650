/**
 * The merge policy a merge uses comes from the accepted tree's
 * `.gitattributes` (src/engine/merge/tree-policy.ts): root and subdirectory
 * files with git's precedence, and a merge that also changes
 * `.gitattributes` is governed by the accepted one, so every process
 * merging onto that accepted state gets the same result.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type FlatTree, ObjectCache } from "../../src/engine/git/object-cache.ts";
import { decodeText, encodeText } from "../../src/engine/merge/text.ts";
import { mergeTrees } from "../../src/engine/merge/tree-merge.ts";
import { policyOfTree } from "../../src/engine/merge/tree-policy.ts";
import { ProcessMemory } from "../../src/engine/process-memory.ts";
import { SYSTEM_RANDOM } from "../../src/surfaces/engine-deps.ts";

const root = mkdtempSync(join(tmpdir(), "slivingdoc-attributes-"));
let git: ObjectCache;
beforeAll(async () => {
  git = await ObjectCache.open(join(root, "git"), new ProcessMemory(SYSTEM_RANDOM).objects, SYSTEM_RANDOM.randomId);
});
afterAll(() => {
  git.close();
  rmSync(root, { recursive: true, force: true });
});

async function tree(files: Record<string, string>): Promise<FlatTree> {
  const t: FlatTree = new Map();
  for (const [path, content] of Object.entries(files)) t.set(path, await git.writeBlob(encodeText(content)));
  return t;
}

async function text(t: FlatTree, path: string): Promise<string> {
  return decodeText(await git.readBlob(t.get(path)!))!;
}

const LOG = "# log\n";
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
    const baseline = await tree({ ".gitattributes": UNION, "log.md": LOG });
    const local = await tree({ ".gitattributes": UNION, "log.md": `${LOG}local\n` });
    const accepted = await tree({ ".gitattributes": UNION, "log.md": `${LOG}accepted\n` });
    const out = await mergeTrees(git, baseline, local, accepted);
    expect(out.conflicts).toEqual([]);
    expect(await text(out.result, "log.md")).toBe(`${LOG}local\naccepted\n`);
  });

  test("a merge that adds the attribute locally is still a text merge: the accepted state's attributes govern", async () => {
    const baseline = await tree({ "log.md": LOG });
    const local = await tree({ ".gitattributes": UNION, "log.md": `${LOG}local\n` });
    const accepted = await tree({ "log.md": `${LOG}accepted\n` });
    const out = await mergeTrees(git, baseline, local, accepted);
    expect(out.conflicts.map((c) => [c.path, c.reason])).toEqual([["log.md", "TEXT_CONFLICT"]]);
    // The attribute itself is merged like any file, and governs from the next merge on.
    expect(await text(out.result, ".gitattributes")).toBe(UNION);
  });

  test("a merge onto an accepted state that just removed the attribute is a text merge", async () => {
    const baseline = await tree({ ".gitattributes": UNION, "log.md": LOG });
    const local = await tree({ ".gitattributes": UNION, "log.md": `${LOG}local\n` });
    const accepted = await tree({ "log.md": `${LOG}accepted\n` });
    const out = await mergeTrees(git, baseline, local, accepted);
    expect(out.conflicts.map((c) => c.path)).toEqual(["log.md"]);
    expect(out.result.has(".gitattributes")).toBe(false);
  });

  test("the same three trees merge the same way whichever checkout merges them", async () => {
    // A pull, a commit and a writer carrying a proposal all pass the accepted
    // tree as the third side; the local checkout's attributes differ here.
    const accepted = await tree({ ".gitattributes": UNION, "log.md": `${LOG}accepted\n` });
    const baseline = await tree({ ".gitattributes": UNION, "log.md": LOG });
    const one = await mergeTrees(git, baseline, await tree({ ".gitattributes": UNION, "log.md": `${LOG}local\n` }), accepted);
    const other = await mergeTrees(git, baseline, await tree({ ".gitattributes": "", "log.md": `${LOG}local\n` }), accepted);
    expect(await text(one.result, "log.md")).toBe(await text(other.result, "log.md"));
    expect(other.conflicts.filter((c) => c.path === "log.md")).toEqual([]);
  });
});
