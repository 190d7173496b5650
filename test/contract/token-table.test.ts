/**
 * The token table in src/contract/tokens.ts is pinned against the product's
 * own errors page, docs/errors.md (the contract's token table): every code
 * with its retryable verdict, every reason with its code and action, every
 * action's CLI wording, every file reason, and the ENGINE_FAILED detail set.
 */
import { expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { DomainError } from "../../src/contract/errors.ts";
import { errorEnvelope, errorText } from "../../src/contract/results.ts";
import { ACTION_WORDING, CODES, ENGINE_DETAILS, REASONS } from "../../src/contract/tokens.ts";

const doc = readFileSync(join(import.meta.dir, "../../docs/errors.md"), "utf8").split("\n");
const rows = (header: string) => {
  const start = doc.indexOf(header);
  expect(start).toBeGreaterThanOrEqual(0);
  const out: string[][] = [];
  for (let i = start + 1; i < doc.length && doc[i]!.includes("\t"); i++) out.push(doc[i]!.split("\t"));
  return out;
};

test("codes and their retryable verdicts", () => {
  const table = rows("Code\tRetryable\tMeaning");
  expect(Object.fromEntries(table.map(([code, r]) => [code, r === "yes"]))).toEqual(
    Object.fromEntries(Object.entries(CODES).map(([c, v]) => [c, v.retryable])),
  );
});

test("every reason with its code and action", () => {
  const fromDoc: Record<string, { code: string; action: string | null }> = {};
  for (const code of Object.keys(CODES)) {
    const at = doc.indexOf(code, doc.indexOf("Reasons, by code"));
    expect(at).toBeGreaterThan(0);
    const header = doc.findIndex((l, i) => i > at && l.startsWith("Reason\tMeaning\tAction"));
    expect(header - at).toBeLessThanOrEqual(4);
    for (let i = header + 1; i < doc.length && doc[i]!.includes("\t"); i++) {
      const [reason, , action] = doc[i]!.split("\t") as [string, string, string];
      fromDoc[reason] = { code, action: /^[A-Z_]+$/.test(action) ? action : null };
    }
  }
  expect(fromDoc).toEqual(Object.fromEntries(Object.entries(REASONS).map(([r, v]) => [r, { code: v.code, action: v.action }])));
  // The one conditional action is written out in the doc.
  expect(doc.some((l) => l.startsWith("LOCAL_MUTATION_FAILED\t") && l.includes("PULL when resynchronized is true, otherwise RETRY"))).toBe(true);
});

test("actions and their CLI wording", () => {
  expect(Object.fromEntries(rows("Action\tCaller meaning\tCLI wording").map(([a, , w]) => [a, w]))).toEqual(ACTION_WORDING);
});

test("file reasons", () => {
  const reasons = rows("File reason\tUsed by\tRanges").map(([r]) => r);
  expect(reasons).toEqual(["TEXT_CONFLICT", "PATH_CONFLICT", "UNRESOLVED_MARKERS", "READ_ONLY", "INVALID_CONTENT"]);
});

test("the closed set of ENGINE_FAILED details", () => {
  const start = doc.findIndex((l) => l.startsWith("ENGINE_FAILED is the one reason"));
  const bullets = doc.slice(start).filter((l) => l.startsWith("• ")).slice(0, 5).map((l) => l.slice(2));
  expect(bullets).toEqual([
    ENGINE_DETAILS.notRegularFile("<name>"),
    ENGINE_DETAILS.nothingToPublish(),
    ENGINE_DETAILS.stateMissingLocally(),
    ENGINE_DETAILS.downloadedStateEmpty(),
    ENGINE_DETAILS.stateToRecordEmpty(),
  ]);
  expect(() => new DomainError("ENGINE_FAILED", "x", { detail: "free text" as never })).toThrow();
  expect(() => new DomainError("MERGE_CONFLICT", "x", { detail: ENGINE_DETAILS.nothingToPublish() })).toThrow();
});

test("RECOVERY_FAILURE's action follows the report", () => {
  const report = { stage: "commit.readonly", remoteAccepted: "no" as const, resynchronized: true };
  expect(new DomainError("LOCAL_MUTATION_FAILED", "x", { recovery: report }).action).toBe("PULL");
  expect(new DomainError("LOCAL_MUTATION_FAILED", "x", { recovery: { ...report, resynchronized: false } }).action).toBe("RETRY");
});

test("the envelope and its candid text item are exactly mcp-tools.md's example", () => {
  const error = new DomainError("MERGE_CONFLICT", "Resolve the conflict blocks before notes_commit.", {
    files: [{ path: "notes/today.md", reason: "TEXT_CONFLICT", ranges: [{ start: 12, end: 18 }] }],
  });
  const envelope = errorEnvelope(error, "0011223344556677", { readOnly: [], writable: [] });
  expect(envelope).toEqual({
    code: "CONTENT_CONFLICT",
    reason: "MERGE_CONFLICT",
    action: "EDIT_FILES",
    diagnosticId: "0011223344556677",
    retryable: false,
    message: "Resolve the conflict blocks before notes_commit.",
    files: [{ path: "notes/today.md", reason: "TEXT_CONFLICT", ranges: [{ start: 12, end: 18 }] }],
    readOnly: [],
    writable: [],
  });
  expect(errorText(envelope)).toBe(
    [
      "CONTENT_CONFLICT · MERGE_CONFLICT",
      "Resolve the conflict blocks before notes_commit.",
      "file: notes/today.md · TEXT_CONFLICT · lines 12-18",
      "action: EDIT_FILES",
      "retryable: false",
      "diagnosticId: 0011223344556677",
    ].join("\n"),
  );
});

test("scrubbing removes keys, ids, access key ids, URL user information and private paths", () => {
  const error = new DomainError(
    "INTERNAL",
    "failed at https://user:pw@host/x for packs/" +
      "a".repeat(64) +
      ".pack, commit " +
      "b".repeat(40) +
      " by AKIAIOSFODNN7EXAMPLE under /home/me/.local/state/slivingdoc/checkouts/x",
  );
  const { message } = errorEnvelope(error, "0011223344556677", { readOnly: [], writable: [] }, ["/home/me/.local/state/slivingdoc"]);
  expect(message).toBe("failed at https://<redacted>@host/x for <pack>, commit <id> by <access-key-id> under <private>/checkouts/x");
});
