/**
 * The token table in src/contract/tokens.ts is pinned against the product's
 * own errors page, docs/errors.md (the contract's token table): every code
 * with its retryable verdict, every reason with its code and action, every
 * action's CLI wording, every file reason, and the ENGINE_FAILED detail set.
 */
import { describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { DomainError } from "../../src/contract/errors.ts";
import { errorEnvelope, errorText, NO_PATH_SETS } from "../../src/contract/results.ts";
import { scrubCredentials } from "../../src/contract/scrub.ts";
import { StartupRefusal } from "../../src/contract/startup.ts";
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
  const { message } = errorEnvelope(error, "0011223344556677", { readOnly: [], writable: [] }, { privatePaths: ["/home/me/.local/state/slivingdoc"] });
  expect(message).toBe("failed at https://<redacted>@host/x for <pack>, commit <id> by <access-key-id> under <private>/checkouts/x");
});

/**
 * The product's own values — its store keys and ids, as it writes them,
 * its credentials, its private root — are scrubbed wherever they stand as a
 * value, the sentence around them intact; a caller's name that merely looks
 * like one is the caller's data and passes unchanged, full stop included.
 */
describe("scrubbing replaces the values the product knows, never a name that looks like one", () => {
  const HEX40 = "0123456789abcdef0123456789abcdef01234567";
  const HEX64 = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08";
  const PRIVATE = "/home/me/.local/state/slivingdoc";
  const scrub = (message: string, files: string[] = [], sets = NO_PATH_SETS) =>
    errorEnvelope(
      new DomainError("INVALID_CONTENT", message, { files: files.map((path) => ({ path, reason: "INVALID_CONTENT", ranges: [] })) }),
      "0011223344556677",
      sets,
      { credentials: ["wJalrXUtnFEMI/K7MDENG/bPxRfiCYzSECRET0KEY"], privatePaths: [PRIVATE] },
    ).message;

  test("a caller's names pass unchanged: packs/, probe/, hex-named files, names beside the private root", () => {
    const names = [
      "packs/x.md",
      "probe/paths/ws/notes.md",
      `${HEX40}.md`,
      `notes/${HEX64}.txt`,
      `archive/${HEX40}`,
      "packs/notes.pack",
      "proposals/draft.md",
    ];
    const message = `The notebook holds UTF-8 text files only; these are not: ${names.join(", ")}. Delete or replace them, then call again.`;
    expect(scrub(message, names)).toBe(message);
    for (const text of [
      "The path is not at or below the workspace root /tmp/x/probe/paths/ws; address a directory there, or omit path.",
      `This directory is inside another checkout (/srv/packs/${HEX40}); pull or commit that checkout.`,
      `The export directory overlaps the checkout /data/probe/${HEX64}/packs/a.pack.`,
      `These cannot be read: /home/me/.local/state/slivingdoc-notes/a.md, /mnt${PRIVATE}/b.md.`,
    ]) {
      expect(scrub(text)).toBe(text);
    }
  });

  test("a name the caller gave is theirs even when it is exactly an id or a key: in files and in the path sets", () => {
    const files = [HEX40, `packs/${HEX64}.pack`];
    const message = `The notebook holds UTF-8 text files only; these are not: ${files.join(", ")}. Delete or replace them, then call again.`;
    expect(scrub(message, files)).toBe(message);
    const sets = { readOnly: [HEX64], writable: [] };
    const readOnly = `Write only where this process may (read-only: ${HEX64}), then commit again.`;
    expect(scrub(readOnly, [], sets)).toBe(readOnly);
  });

  test("a value the caller gave or owns that a message names beyond its files (DomainError's named) passes unchanged; a real id beside it does not", () => {
    const message = `The restore would overwrite unpublished local edits (${HEX40}, ${HEX64}); nothing was restored. Commit them first.`;
    const envelope = (named: string[]) => errorEnvelope(new DomainError("MALFORMED_INPUT", `${message} head ${HEX40.toUpperCase()}.`, { named }), "0011223344556677", NO_PATH_SETS);
    expect(envelope([HEX40, HEX64]).message).toBe(`${message} head <id>.`);
    const refusal = new StartupRefusal("argument refusal", `export DIR "${HEX40}" is a regular file; head ${HEX64}`, [HEX40]);
    expect(refusal.diagnostic()).toBe(`slivingdoc: argument refusal: export DIR "${HEX40}" is a regular file; head <id>`);
  });

  test("the product's own values are scrubbed as values, with the sentence around them kept", () => {
    expect(scrub(`A pack packs/${HEX64}.pack is missing.`)).toBe("A pack <pack> is missing.");
    expect(scrub(`The key team/notes/packs/${HEX64}.pack, then probe/3f2a9c0d1e4b5a69/swap; and proposals/${HEX40.slice(0, 32)}.`)).toBe(
      "The key <pack>, then <probe>; and <proposal>.",
    );
    expect(scrub(`head ${HEX40}, tree ${HEX40.toUpperCase()} (${HEX64}).`)).toBe("head <id>, tree <id> (<id>).");
    expect(scrub(`{"key":"packs/${HEX64}.pack","etag":"${HEX64}"}`)).toBe('{"key":"<pack>","etag":"<id>"}');
    expect(scrub(`state under ${PRIVATE}/checkouts/a, and ${PRIVATE}.`)).toBe("state under <private>/checkouts/a, and <private>.");
    expect(scrub("secret wJalrXUtnFEMI/K7MDENG/bPxRfiCYzSECRET0KEY and ASIAQ3TEMPSECRETID77 via https://u:p@h/x.")).toBe(
      "secret <redacted> and <access-key-id> via https://<redacted>@h/x.",
    );
  });

  test("logs lose credentials only: store keys, ids and local paths are the operator's", () => {
    const line = `s3 get team/notes/packs/${HEX64}.pack under ${PRIVATE} for AKIAZ7QSECRETKEYID42 at https://u:p@h: secret0key`;
    expect(scrubCredentials(line, ["secret0key"])).toBe(`s3 get team/notes/packs/${HEX64}.pack under ${PRIVATE} for <access-key-id> at https://<redacted>@h: <redacted>`);
  });
});
