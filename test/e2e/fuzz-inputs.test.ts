/**
 * Bad input at scale, since a model's tool arguments can be anything:
 * seeded random tool arguments — random JSON with known and unknown fields,
 * 1,000-level nesting, 1 MB strings, lone surrogates, U+0000, BOM,
 * direction marks, emoji and combining marks — and a share of valid calls.
 * Every answer is OK or INVALID_REQUEST with a reason an input can
 * legitimately earn, never an exception, never a retryable or operator
 * error; structured cases with one known defect must get exactly their
 * reason. First thousands of cases in process through runOperation (the
 * code both surfaces run), then a few hundred through the built binary with
 * the SDK's client, where every answer must be a tool result and the server
 * must still serve afterwards.
 *
 * Legitimate for an input alone: MALFORMED_INPUT for anything malformed
 * (wrong shape or type, unknown field, null, a path not absolute or over
 * 4,096 bytes, ill-formed UTF-16); the three message reasons for a
 * well-typed message; PATH_OUTSIDE_ROOT for a well-formed path outside the
 * workspace root or nesting with a checkout; PULL_REQUIRED for a valid
 * commit to a directory never pulled. Anything else — a STORAGE_* or
 * RECOVERY_FAILURE answer, INVALID_CONTENT, a conflict — would mean the
 * input reached somewhere it should not: no input can make a healthy store
 * fail, and the fuzz never writes invalid content.
 *
 * The seed is printed; SLIVINGDOC_FUZZ_SEED=N replays a run and
 * SLIVINGDOC_FUZZ_CASES=N changes the in-process count.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { CallToolResultSchema } from "@modelcontextprotocol/sdk/types.js";
import { errorText, NO_PATH_SETS } from "../../src/contract/results.ts";
import { REASONS, type Reason } from "../../src/contract/tokens.ts";
import { deadlineIn } from "../../src/store/deadline.ts";
import { createLog } from "../../src/surfaces/log.ts";
import type { OperationContext, OperationResult } from "../../src/surfaces/operation.ts";
import { runOperation } from "../../src/surfaces/run-operation.ts";
import { makeWorld, type World } from "../support/fixture.ts";
import { describeArgs, type FuzzCase, Gen, makeCase, type PathWorld, type Verdict } from "../support/fuzz-input.ts";
import { call, connect, type Session } from "../support/mcp.ts";
import { mulberry32 } from "../support/seeded.ts";

const SEED = process.env.SLIVINGDOC_FUZZ_SEED !== undefined ? Number(process.env.SLIVINGDOC_FUZZ_SEED) : Math.floor(Math.random() * 2 ** 31);
const IN_PROCESS_CASES = Number(process.env.SLIVINGDOC_FUZZ_CASES ?? 3000);
const BINARY_CASES = 500;
console.log(`fuzz-inputs: seed ${SEED} (replay with SLIVINGDOC_FUZZ_SEED=${SEED})`);

/** A bound on an answer's message: no input, however large, is echoed back whole. */
const MESSAGE_BOUND = 1024;

/** Names that stress path handling, all siblings under the workspace root so none nests in another. */
const POOL = [
  "plain",
  "with space",
  "emoji 😀👩‍👩‍👧‍👦",
  "caf\u00e9", // NFC …
  "cafe\u0301", // … and NFD: two different directories on Linux
  ".hidden",
  "\u202ertl-override",
  "\ufeffbom",
  "\u200fmark",
  "ü".repeat(127), // 254 bytes, one short of the name bound
  "中文目录",
  "tab\there",
  "~tilde",
];

/** Everything wrong with one answer, or null; `got` is what the answer says. */
function problem(c: FuzzCase, got: { verdict: string; code: string; action: string; retryable: boolean; diagnosticId: string; message: string; files: unknown[] } | null): string | null {
  if (got === null) return null;
  const issues: string[] = [];
  if (!c.expect.includes(got.verdict as Verdict)) issues.push(`verdict ${got.verdict}, expected ${c.expect.join("|")}`);
  if (got.verdict !== "OK") {
    const row = REASONS[got.verdict as Reason];
    if (row === undefined || got.code !== row.code || got.action !== row.action) issues.push(`tokens ${got.code} · ${got.verdict} · ${got.action}`);
    if (got.retryable !== false) issues.push("retryable");
    if (!/^[0-9a-f]{16}$/.test(got.diagnosticId)) issues.push(`diagnosticId ${got.diagnosticId}`);
    if (got.message.length > MESSAGE_BOUND) issues.push(`message of ${got.message.length} chars`);
    if (got.files.length !== 0) issues.push("files");
  }
  return issues.length === 0 ? null : issues.join("; ");
}

function fromOperation(r: OperationResult) {
  if (r.ok) return { verdict: r.result.code, code: "OK", action: "", retryable: false, diagnosticId: r.diagnosticId, message: "", files: [] };
  const e = r.envelope;
  return { verdict: e.reason, code: e.code, action: e.action, retryable: e.retryable, diagnosticId: e.diagnosticId, message: e.message, files: e.files };
}

function report(failures: string[]): void {
  if (failures.length > 0) console.error(`fuzz-inputs (seed ${SEED}): ${failures.length} failing cases, first ones:\n${failures.slice(0, 15).join("\n")}`);
}

describe("in process, through runOperation", () => {
  let world: World;
  let ws: string;
  let home: string;
  let ctx: OperationContext;
  const logLines: string[] = [];

  beforeAll(async () => {
    world = makeWorld();
    ws = join(world.root, "ws");
    home = join(world.root, "home");
    const outside = join(world.root, "outside");
    for (const d of [ws, home, outside, ...POOL.map((n) => join(ws, n))]) mkdirSync(d, { recursive: true });
    // A symlink to a pool directory resolves into the root; one to outside escapes it.
    symlinkSync(join(ws, "plain"), join(ws, "alias"));
    symlinkSync(outside, join(ws, "escape"));
    ctx = {
      deps: world.deps({ sleep: async () => {} }),
      deadline: () => deadlineIn(60_000),
      sets: NO_PATH_SETS,
      paths: { defaultDir: join(ws, "default"), cwd: ws, home, workspaceRoot: ws },
      log: createLog({ write: (t) => logLines.push(t), isTTY: false }),
      secrets: [world.privateRoot],
      requireAbsolute: true,
    };
    // The default directory is a checkout from the start, so the root itself
    // always contains one and can never become a checkout (which would nest
    // every pool directory in it).
    const first = await runOperation(ctx, "notes_pull", {});
    expect(first.ok).toBe(true);
  });
  afterAll(async () => {
    await world.close();
  });

  test(`${IN_PROCESS_CASES} random inputs: OK or INVALID_REQUEST with a legitimate reason, exact for one-defect cases, never a throw`, async () => {
    const gen = new Gen(mulberry32(SEED));
    const defaultDir = join(ws, "default");
    const paths: PathWorld = {
      valid: [
        { arg: undefined, dir: defaultDir },
        { arg: "", dir: defaultDir },
        { arg: defaultDir, dir: defaultDir },
        { arg: join(ws, "alias"), dir: join(ws, "plain") },
        ...POOL.flatMap((n) => [
          { arg: join(ws, n), dir: join(ws, n) },
          { arg: `${join(ws, n)}/`, dir: join(ws, n) },
          { arg: `${ws}//${n}`, dir: join(ws, n) },
          { arg: `${ws}/nothing/../${n}`, dir: join(ws, n) },
        ]),
      ],
      pulled: new Set([defaultDir]),
      outside: [
        "/",
        "/etc",
        tmpdir(),
        world.root,
        world.privateRoot,
        `${ws}-evil`,
        join(ws, ".."),
        join(ws, "..", "outside", "x"),
        join(ws, "escape"),
        join(ws, "escape", "deeper"),
        "~",
        "~/",
        "~/notes",
        `~/${ws}`,
      ],
      refusedExisting: [ws, `${ws}/`],
      nestedMissing: [join(defaultDir, "sub"), join(defaultDir, "a", "b")],
    };
    const failures: string[] = [];
    const counts: Record<string, number> = {};
    let fileNo = 0;
    for (let i = 0; i < IN_PROCESS_CASES; i++) {
      const c = makeCase(gen, paths, home);
      // A valid commit sometimes has something to publish.
      if (c.kind === "valid" && c.tool === "notes_commit" && paths.pulled.has(c.dir!) && gen.chance(0.3)) {
        writeFileSync(join(c.dir!, `file-${fileNo++}.md`), `${gen.validMessage()}\n`);
      }
      const linesBefore = logLines.length;
      let outcome: OperationResult;
      try {
        outcome = await runOperation(ctx, c.tool, c.args, i);
      } catch (e) {
        failures.push(`#${i} ${c.kind} ${c.tool} ${describeArgs(c.args)}: threw ${String(e).slice(0, 200)}`);
        continue;
      }
      const got = fromOperation(outcome);
      counts[got.verdict] = (counts[got.verdict] ?? 0) + 1;
      if (got.verdict === "OK" && c.tool === "notes_pull" && c.dir !== undefined) paths.pulled.add(c.dir);
      let issue = problem(c, got);
      if (!outcome.ok) {
        try {
          errorText(outcome.envelope);
          JSON.stringify(outcome.envelope);
        } catch (e) {
          issue = `${issue ?? ""} envelope does not render: ${String(e)}`;
        }
      }
      // Exactly the pair of log records, correlated, and small whatever the input.
      const records = logLines.slice(linesBefore);
      const parsed = records.map((l) => JSON.parse(l) as { msg: string; mcpReqID: string });
      if (
        parsed.length !== 2 ||
        parsed[0]!.msg !== "tool call started" ||
        parsed[1]!.msg !== "tool call completed" ||
        parsed.some((p) => p.mcpReqID !== outcome.diagnosticId) ||
        records.some((l) => l.length > 4096)
      ) {
        issue = `${issue ?? ""} log records: ${records.map((l) => l.slice(0, 200)).join(" | ")}`;
      }
      if (issue !== null) failures.push(`#${i} ${c.kind} ${c.tool} ${describeArgs(c.args)}: ${issue}`);
    }
    console.log(`fuzz-inputs: in process ${IN_PROCESS_CASES} cases, verdicts ${JSON.stringify(counts)}`);
    report(failures);
    expect(failures).toEqual([]);
    // The mix reached every verdict, so the categories really ran.
    for (const v of ["OK", "MALFORMED_INPUT", "MESSAGE_BLANK", "MESSAGE_TOO_LONG", "MESSAGE_INVALID", "PATH_OUTSIDE_ROOT", "PULL_REQUIRED"]) {
      expect(counts[v] ?? 0).toBeGreaterThan(0);
    }
  }, 180_000);

  // Regression: a path the host cannot hold (U+0000, a name over 255 bytes)
  // used to answer STORAGE_FAILURE · LOCAL_STATE (retryable, though a retry
  // never helps) or PULL_REQUIRED; it is malformed input for both tools.
  test("a path with U+0000, or with a name over 255 bytes, is MALFORMED_INPUT for both tools", async () => {
    const got: string[] = [];
    for (const path of [join(ws, "a\u0000b"), join(ws, "x".repeat(256)), join(ws, "é".repeat(128))]) {
      for (const [tool, args] of [
        ["notes_pull", { path }],
        ["notes_commit", { path, message: "m" }],
      ] as const) {
        const r = await runOperation(ctx, tool, args);
        got.push(`${tool} ${JSON.stringify(path.slice(ws.length, ws.length + 8))}…: ${r.ok ? "OK" : `${r.envelope.code} · ${r.envelope.reason}`}`);
      }
    }
    expect(got).toEqual(got.map((g) => `${g.slice(0, g.lastIndexOf(": "))}: INVALID_REQUEST · MALFORMED_INPUT`));
  });
});

describe("through the binary, with the SDK client", () => {
  let session: Session;
  let root: string;
  let ws: string;
  let home: string;

  beforeAll(async () => {
    root = mkdtempSync(join(tmpdir(), "slivingdoc-fuzz-"));
    ws = join(root, "ws");
    home = join(root, "home");
    // No escaping symlink here: the root is the notebook, and a symlink in it is INVALID_CONTENT.
    for (const d of [ws, home, join(root, "tmp")]) mkdirSync(d, { recursive: true });
    session = await connect(
      {
        PATH: process.env.PATH ?? "/usr/bin:/bin",
        HOME: home,
        TMPDIR: join(root, "tmp"),
        SLIVINGDOC_STORE: `sqlite:${join(root, "store.db")}`,
        SLIVINGDOC_PRIVATE_ROOT: join(root, "private"),
      },
      ["--workspace-root", ws],
    );
    expect((await call(session, "notes_pull", {})).isError).toBe(false);
  });
  afterAll(async () => {
    await session?.close();
    rmSync(root, { recursive: true, force: true });
  });

  test(`${BINARY_CASES} random inputs: every answer a tool result with a legitimate reason, and the server still serves`, async () => {
    const gen = new Gen(mulberry32(SEED ^ 0x5eed));
    const paths: PathWorld = {
      // With --workspace-root, the root is the notebook directory and already a checkout.
      valid: [
        { arg: undefined, dir: ws },
        { arg: "", dir: ws },
        { arg: ws, dir: ws },
        { arg: `${ws}/`, dir: ws },
        { arg: `${ws}/x/..`, dir: ws },
      ],
      pulled: new Set([ws]),
      outside: ["/", root, join(root, "private"), `${ws}-evil`, join(ws, ".."), join(ws, "..", "x"), "~", "~/notes"],
      refusedExisting: [],
      nestedMissing: [join(ws, "sub"), join(ws, "a", "b")],
    };
    const failures: string[] = [];
    const counts: Record<string, number> = {};
    for (let i = 0; i < BINARY_CASES; i++) {
      const c = makeCase(gen, paths, home);
      if (c.kind === "valid" && c.tool === "notes_commit" && gen.chance(0.3)) writeFileSync(join(ws, `file-${i}.md`), `${gen.validMessage()}\n`);
      const params: Record<string, unknown> = { name: c.tool };
      if (c.args !== undefined) params.arguments = c.args;
      let result;
      try {
        result = await session.client.request({ method: "tools/call", params } as never, CallToolResultSchema);
      } catch (e) {
        // A JSON-RPC error (or a dead server) for a well-formed tools/call.
        failures.push(`#${i} ${c.kind} ${c.tool} ${describeArgs(c.args)}: not a tool result: ${String(e).slice(0, 200)}`);
        continue;
      }
      const data = result.structuredContent as Record<string, unknown> | undefined;
      const content = result.content as Array<{ type: string; text: string }>;
      if (data === undefined || content.length !== 1 || content[0]!.type !== "text") {
        failures.push(`#${i} ${c.kind}: result shape ${describeArgs(result)}`);
        continue;
      }
      const verdict = data.code === "OK" ? "OK" : String(data.reason);
      counts[verdict] = (counts[verdict] ?? 0) + 1;
      let issue = problem(c, {
        verdict,
        code: String(data.code),
        action: String(data.action ?? ""),
        retryable: data.retryable === true,
        diagnosticId: String(data.diagnosticId ?? ""),
        message: String(data.message ?? ""),
        files: (data.files as unknown[]) ?? [],
      });
      if ((result.isError === true) !== (verdict !== "OK")) issue = `${issue ?? ""} isError ${result.isError}`;
      if (issue !== null) failures.push(`#${i} ${c.kind} ${c.tool} ${describeArgs(c.args)}: ${issue}`);
    }
    console.log(`fuzz-inputs: binary ${BINARY_CASES} cases, verdicts ${JSON.stringify(counts)}`);
    report(failures);
    expect(failures).toEqual([]);
    // Alive and serving: a valid call after all of it succeeds.
    const last = await call(session, "notes_pull", {});
    expect(last.isError).toBe(false);
    expect(last.data.path).toBe(ws);
    // The log stayed one JSON record a line throughout, a pair per call.
    const lines = session.stderr().trim().split("\n");
    const records = lines.map((l) => JSON.parse(l) as { msg: string });
    expect(records.filter((r) => r.msg === "tool call started").length).toBe(BINARY_CASES + 2);
    expect(records.filter((r) => r.msg === "tool call completed").length).toBe(BINARY_CASES + 2);
  }, 180_000);
});
