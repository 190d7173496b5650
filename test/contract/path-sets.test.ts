/**
 * Path sets: parsing and its refusals, the longest-match rule, and the four
 * advertising surfaces pinned for every combination of sets.
 */
import { describe, expect, test } from "bun:test";
import { buildPathSets, isProtected, parsePathSet } from "../../src/contract/path-sets.ts";
import { errorEnvelope, errorText, successResult, successText } from "../../src/contract/results.ts";
import { DomainError } from "../../src/contract/errors.ts";
import { StartupRefusal } from "../../src/contract/startup.ts";
import { serverInstructions } from "../../src/contract/tools.ts";
import { toolDescription } from "../../src/surfaces/operations.ts";

const PULL =
  "Write the current notebook into the notebook directory and record the accepted state. Omit path or pass an empty string to use the server’s notebook directory, which the result reports. Edit UTF-8 text files (without U+0000) there between notes_pull and notes_commit; notes_commit publishes the changes and incorporates concurrent non-conflicting changes.";
const COMMIT =
  "Publish the caller’s changes in the notebook directory and incorporate concurrent non-conflicting changes. Omit path or pass an empty string to use the server’s notebook directory, which the result reports. message must be non-blank UTF-8 without U+0000, at most 16,384 bytes; it is retained in recent internal history only.";
const INSTRUCTIONS =
  "The notebook directory is /n. Call notes_pull, edit UTF-8 text files\n(without U+0000) there, then call notes_commit to publish. Both tools\ndefault to that directory; pass path only to address a subdirectory of it.";

function refusalOf(fn: () => unknown): StartupRefusal {
  try {
    fn();
  } catch (e) {
    if (e instanceof StartupRefusal) return e;
    throw e;
  }
  throw new Error("expected a start-up refusal");
}

describe("parsing", () => {
  test("entries are trimmed, normalised, de-duplicated and sorted", () => {
    expect(parsePathSet("--read-only-paths", " faq.md, ./docs/ ,docs//api,,b ,docs")).toEqual(["b", "docs", "docs/api", "faq.md"]);
    expect(parsePathSet("--read-only-paths", undefined)).toEqual([]);
    expect(parsePathSet("--read-only-paths", " ")).toEqual([]);
  });

  test("invalid entries are refused with a diagnostic naming the setting and the entry", () => {
    const cases: Array<[string, string]> = [
      ["/etc", '--writable-paths entry "/etc" is absolute; entries are relative to the notebook directory'],
      ["~/x", '--writable-paths entry "~/x" is absolute; entries are relative to the notebook directory'],
      ["a/../b", `--writable-paths entry "a/../b" has a '..' segment`],
      ["..", `--writable-paths entry ".." has a '..' segment`],
      ["notes/.git/x", `--writable-paths entry "notes/.git/x" has a '.git' segment`],
      [".GIT", `--writable-paths entry ".GIT" has a '.git' segment`],
      [".", '--writable-paths entry "." names the whole notebook; name files or directories in it'],
      ["a\\b", '--writable-paths entry "a\\b" contains a backslash; use / between segments'],
    ];
    for (const [entry, message] of cases) {
      const e = refusalOf(() => parsePathSet("--writable-paths", `ok,${entry}`));
      expect(e.kind).toBe("invalid path-set entry");
      expect(e.diagnostic()).toBe(`slivingdoc: invalid path-set entry: ${message}`);
    }
    const long = refusalOf(() => parsePathSet("--read-only-paths", "é".repeat(2049)));
    expect(long.diagnostic()).toContain("is over 4,096 bytes");
  });

  test("one path named by both settings is refused, naming the path and both settings", () => {
    const e = refusalOf(() => buildPathSets(["docs", "faq.md"], ["agents", "docs"]));
    expect(e.diagnostic()).toBe(
      'slivingdoc: overlapping path settings: "docs" is named by both --read-only-paths and --writable-paths; name each path in one setting only',
    );
  });
});

describe("the longest matching entry decides", () => {
  test("read-only only: the entries and below are protected", () => {
    const sets = { readOnly: ["docs", "faq.md"], writable: [] };
    expect(["docs", "docs/a.md", "docs/x/y.md", "faq.md"].map((p) => isProtected(p, sets))).toEqual([true, true, true, true]);
    expect(["docsx.md", "faq.md.bak", "notes/docs/a.md", "a.md"].map((p) => isProtected(p, sets))).toEqual([false, false, false, false]);
  });

  test("writable only: everything outside the entries is protected", () => {
    const sets = { readOnly: [], writable: ["agents/alice"] };
    expect(isProtected("agents/alice/notes.md", sets)).toBe(false);
    expect(isProtected("agents/bob/notes.md", sets)).toBe(true);
    expect(isProtected("top.md", sets)).toBe(true);
  });

  test("both, read-only inside writable", () => {
    const sets = { readOnly: ["agents/alice/frozen"], writable: ["agents/alice"] };
    expect(isProtected("agents/alice/a.md", sets)).toBe(false);
    expect(isProtected("agents/alice/frozen/a.md", sets)).toBe(true);
    expect(isProtected("elsewhere.md", sets)).toBe(true);
  });

  test("both, writable inside read-only", () => {
    const sets = { readOnly: ["docs"], writable: ["docs/drafts"] };
    expect(isProtected("docs/index.md", sets)).toBe(true);
    expect(isProtected("docs/drafts/new.md", sets)).toBe(false);
    // With a writable set, a path no entry matches is protected.
    expect(isProtected("notes.md", sets)).toBe(true);
  });
});

describe("the four surfaces, pinned for each combination", () => {
  const combos = {
    none: { readOnly: [], writable: [] },
    readOnly: { readOnly: ["docs", "faq.md"], writable: [] },
    writable: { readOnly: [], writable: ["agents/alice"] },
    readOnlyInsideWritable: { readOnly: ["agents/alice/frozen"], writable: ["agents/alice"] },
    writableInsideReadOnly: { readOnly: ["docs"], writable: ["docs/drafts"] },
  };
  const RO = (e: string, end: string) => `Read-only paths: ${e}. notes_commit refuses any change to them, resets those files, and reports READ_ONLY_PATH; ${end}`;
  const W = (e: string) => `Writable paths: ${e}. notes_commit refuses any change elsewhere, resets those files, and reports READ_ONLY_PATH; write only under them.`;
  const expected: Record<keyof typeof combos, { sentences: string[]; suffix: string }> = {
    none: { sentences: [], suffix: "" },
    readOnly: { sentences: [RO("docs, faq.md", "write elsewhere.")], suffix: " (read-only: docs, faq.md)" },
    writable: { sentences: [W("agents/alice")], suffix: " (writable: agents/alice)" },
    readOnlyInsideWritable: {
      sentences: [W("agents/alice"), RO("agents/alice/frozen", "where the two sets nest, the longest matching entry decides.")],
      suffix: " (writable: agents/alice; read-only: agents/alice/frozen; longest match decides)",
    },
    writableInsideReadOnly: {
      sentences: [W("docs/drafts"), RO("docs", "where the two sets nest, the longest matching entry decides.")],
      suffix: " (writable: docs/drafts; read-only: docs; longest match decides)",
    },
  };
  for (const [name, sets] of Object.entries(combos) as Array<[keyof typeof combos, (typeof combos)[keyof typeof combos]]>) {
    test(name, () => {
      const { sentences, suffix } = expected[name];
      const tail = (sep: string) => (sentences.length ? sep + sentences.join(sep) : "");
      expect(serverInstructions("/n", sets)).toBe(INSTRUCTIONS + tail("\n"));
      expect(toolDescription("notes_pull", sets)).toBe(PULL + tail(" "));
      expect(toolDescription("notes_commit", sets)).toBe(COMMIT + tail(" "));
      const result = successResult({ path: "/n", generation: 3, files: [] }, sets);
      expect(successText(result)).toBe(`/n${suffix}`);
      expect([result.readOnly, result.writable]).toEqual([sets.readOnly, sets.writable]);
      const envelope = errorEnvelope(new DomainError("MESSAGE_BLANK", "blank"), "0011223344556677", sets);
      expect([envelope.readOnly, envelope.writable]).toEqual([sets.readOnly, sets.writable]);
      const text = errorText(envelope);
      expect(text.includes("read-only:")).toBe(sets.readOnly.length > 0);
      expect(text.includes("writable:")).toBe(sets.writable.length > 0);
    });
  }
});
