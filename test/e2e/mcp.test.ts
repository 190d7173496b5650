/**
 * The MCP surface through a real client spawning the built binary: the
 * pinned tool list and instructions, a round trip, two servers on one store,
 * strict decoding, stdout hygiene, and exit on stdin close.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { CallToolResultSchema } from "@modelcontextprotocol/sdk/types.js";
import { call, connect, type Session } from "../support/mcp.ts";
import { spawnServe } from "../support/raw-mcp.ts";

const root = mkdtempSync(join(tmpdir(), "slivingdoc-mcp-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));
const version = JSON.parse(readFileSync(join(import.meta.dir, "../../package.json"), "utf8")).version as string;
const spec = readFileSync(join(import.meta.dir, "../../docs/mcp-tools.md"), "utf8");

function envFor(name: string, extra: Record<string, string> = {}): Record<string, string> {
  return {
    PATH: process.env.PATH ?? "/usr/bin:/bin",
    HOME: join(root, name, "home"),
    TMPDIR: join(root, name, "tmp"),
    SLIVINGDOC_STORE: `sqlite:${join(root, name, "store.db")}`,
    SLIVINGDOC_PRIVATE_ROOT: join(root, name, "private"),
    ...extra,
  };
}

/** The quoted description after "• NAME — " in the spec, byte for byte. */
function specDescription(name: string): string {
  const line = spec.split("\n").find((l) => l.startsWith(`• ${name} — `))!;
  return line.slice(line.indexOf("“") + 1, line.lastIndexOf("”"));
}

describe("one server", () => {
  let session: Session;
  const env = envFor("one");
  beforeAll(async () => {
    mkdirSync(env.TMPDIR!, { recursive: true });
    session = await connect(env);
  });
  afterAll(() => session.close());

  test("advertises slivingdoc with the release version, tools only, and the spec's instructions", () => {
    expect(session.client.getServerVersion()).toEqual({ name: "slivingdoc", version });
    const caps = session.client.getServerCapabilities()!;
    expect(Object.keys(caps).filter((k) => k !== "experimental")).toEqual(["tools"]);
    const instructions = session.client.getInstructions()!;
    const dir = /^The notebook directory is (\S+)\. /.exec(instructions)![1]!;
    expect(dir.startsWith(join(root, "one", "tmp", "slivingdoc-"))).toBe(true);
    expect(dir.endsWith("/notebook")).toBe(true);
    const block = spec.slice(spec.indexOf("The notebook directory is <path>."), spec.indexOf("subdirectory of it.") + "subdirectory of it.".length);
    expect(instructions).toBe(block.replace("<path>", dir));
  });

  test("exactly two tools, with the spec's descriptions and pinned schemas", async () => {
    const { tools } = await session.client.listTools();
    expect(tools.map((t) => t.name)).toEqual(["notes_pull", "notes_commit"]);
    for (const t of tools) expect(t.description).toBe(specDescription(t.name));
    const path = {
      type: "string",
      description:
        "Optional host path of the notebook directory, at or below the workspace root; may begin with ~/. Omit it or pass an empty string for the server's notebook directory.",
    };
    expect(tools[0]!.inputSchema).toEqual({ type: "object", properties: { path }, additionalProperties: false });
    expect(tools[1]!.inputSchema).toEqual({
      type: "object",
      properties: { message: { type: "string", description: "The commit message: non-blank UTF-8 without U+0000, at most 16,384 bytes." }, path },
      required: ["message"],
      additionalProperties: false,
    });
    // Hosts read these hints for auto-approval; the contract strings above stay byte-exact beside them.
    expect(tools[0]!.annotations).toEqual({
      title: "Pull the shared notebook",
      readOnlyHint: false,
      destructiveHint: false,
      idempotentHint: true,
      openWorldHint: false,
    });
    expect(tools[1]!.annotations).toEqual({
      title: "Publish notebook edits",
      readOnlyHint: false,
      destructiveHint: true,
      idempotentHint: false,
      openWorldHint: false,
    });
    const prompts = await session.client.listPrompts().catch((e: Error) => e);
    expect(prompts).toBeInstanceOf(Error);
  });

  test("pull, edit, commit: the text item is the path, the structured object the result", async () => {
    const pulled = await call(session, "notes_pull", {});
    expect(pulled.isError).toBe(false);
    const dir = pulled.data.path as string;
    expect(pulled.text).toBe(dir);
    expect(pulled.data).toEqual({ code: "OK", path: dir, generation: 0, filesChanged: 0, insertions: 0, deletions: 0, files: [], readOnly: [], writable: [] });
    writeFileSync(join(dir, "today.md"), "one\ntwo\n");
    const committed = await call(session, "notes_commit", { message: "first", path: "" });
    expect(committed.data).toEqual({
      code: "OK",
      path: dir,
      generation: 1,
      filesChanged: 1,
      insertions: 2,
      deletions: 0,
      files: [{ path: "today.md", insertions: 2, deletions: 0 }],
      readOnly: [],
      writable: [],
    });
    expect(committed.text).toBe(dir);
  });

  test("a malformed input is the MALFORMED_INPUT envelope, never a protocol error, and the server keeps serving", async () => {
    const cases: Array<[string, unknown, string]> = [
      ["notes_pull", { extra: 1 }, "MALFORMED_INPUT"],
      ["notes_pull", { path: null }, "MALFORMED_INPUT"],
      ["notes_pull", { path: 7 }, "MALFORMED_INPUT"],
      ["notes_pull", { path: ["a"] }, "MALFORMED_INPUT"],
      ["notes_pull", null, "MALFORMED_INPUT"],
      ["notes_pull", "a string", "MALFORMED_INPUT"],
      ["notes_pull", [1, 2], "MALFORMED_INPUT"],
      ["notes_pull", { path: "relative/dir" }, "MALFORMED_INPUT"],
      ["notes_pull", { path: `/${"é".repeat(2048)}` }, "MALFORMED_INPUT"], // 4,097 bytes, 2,049 code points
      ["notes_commit", {}, "MALFORMED_INPUT"],
      ["notes_commit", { message: null }, "MALFORMED_INPUT"],
      ["notes_commit", { message: 42 }, "MALFORMED_INPUT"],
      ["notes_commit", { message: "m", unknown: true }, "MALFORMED_INPUT"],
      ["notes_commit", { message: "" }, "MESSAGE_BLANK"],
      ["notes_commit", { message: " \u3000\u2028\t\n" }, "MESSAGE_BLANK"],
      ["notes_commit", { message: "€".repeat(5462) }, "MESSAGE_TOO_LONG"], // 16,386 bytes
      ["notes_commit", { message: "a\u0000b" }, "MESSAGE_INVALID"],
      ["notes_commit", { message: "a\ud800b" }, "MESSAGE_INVALID"],
    ];
    for (const [name, args, reason] of cases) {
      const result = await session.client.request({ method: "tools/call", params: { name, arguments: args } } as never, CallToolResultSchema);
      const data = result.structuredContent as Record<string, unknown>;
      expect({ name, args, isError: result.isError, code: data.code, reason: data.reason, action: data.action }).toEqual({
        name,
        args,
        isError: true,
        code: "INVALID_REQUEST",
        reason,
        action: "FIX_INPUT",
      });
      expect(data.diagnosticId).toMatch(/^[0-9a-f]{16}$/);
    }
    // A path of exactly 4,096 bytes is within the bound (it is then outside the root).
    const atBound = `/${Array(16).fill("a".repeat(255)).join("/")}`;
    expect(Buffer.byteLength(atBound)).toBe(4096);
    const bound = await call(session, "notes_pull", { path: atBound });
    expect(bound.data.reason).toBe("PATH_OUTSIDE_ROOT");
    const still = await call(session, "notes_pull", {});
    expect(still.isError).toBe(false);
  });

  test("an error's text item carries the whole safe diagnostic", async () => {
    const r = await call(session, "notes_commit", { message: "   " });
    const d = r.data;
    expect(r.text).toBe(
      `INVALID_REQUEST · MESSAGE_BLANK\n${d.message}\naction: FIX_INPUT\nretryable: false\ndiagnosticId: ${d.diagnosticId}`,
    );
  });

  test("each call logs a start and a completion record whose mcpReqID is the diagnosticId", async () => {
    // A session of its own, ended before reading its log: the whole of
    // stderr is there once the stream has ended, with no pause to guess.
    const own = await connect(env);
    const r = await call(own, "notes_commit", { message: "\u0000" });
    const id = r.data.diagnosticId as string;
    const stderr = await own.finish();
    const records = stderr
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l) as Record<string, unknown>)
      .filter((rec) => rec.mcpReqID === id);
    expect(records.map((rec) => rec.msg)).toEqual(["tool call started", "tool call completed"]);
    expect(records[1]!.outcome).toBe("INVALID_REQUEST · MESSAGE_INVALID");
    expect(typeof records[1]!.durationMs).toBe("number");
    expect(records[1]!.stages).toBeDefined();
  });
});

describe("paths and the workspace root", () => {
  let session: Session;
  const ws = join(root, "paths", "ws");
  const outside = join(root, "paths", "outside");
  const env = envFor("paths");
  beforeAll(async () => {
    mkdirSync(join(ws, "agent1"), { recursive: true });
    mkdirSync(outside, { recursive: true });
    mkdirSync(env.HOME!, { recursive: true });
    symlinkSync(outside, join(ws, "escape"));
    session = await connect(env, ["--workspace-root", ws]);
  });
  afterAll(() => session.close());

  test("omitted path is the workspace root; a subdirectory is its own checkout", async () => {
    expect(session.client.getInstructions()).toStartWith(`The notebook directory is ${ws}. `);
    const sub = await call(session, "notes_pull", { path: join(ws, "agent1") });
    expect(sub.data.path).toBe(join(ws, "agent1"));
    expect(sub.text).toBe(join(ws, "agent1"));
  });

  test("escapes by .., by a symlink, and by ~/ are PATH_OUTSIDE_ROOT naming the root", async () => {
    for (const path of [join(ws, "..", "outside"), join(ws, "escape"), join(ws, "escape", "deeper"), "~/notes", "/"]) {
      const r = await call(session, "notes_pull", { path });
      expect([r.isError, r.data.code, r.data.reason, r.data.action]).toEqual([true, "INVALID_REQUEST", "PATH_OUTSIDE_ROOT", "FIX_INPUT"]);
      expect(r.data.message as string).toContain(ws);
    }
  });
});

describe("two servers sharing one store", () => {
  test("an agent pulls, edits, commits, meets a conflict, reads its tokens, resolves and commits", async () => {
    const env = envFor("shared");
    mkdirSync(env.TMPDIR!, { recursive: true });
    const [a, b] = [await connect(env), await connect(env)];
    try {
      const da = (await call(a, "notes_pull")).data.path as string;
      const db = (await call(b, "notes_pull")).data.path as string;
      expect(da).not.toBe(db);
      writeFileSync(join(da, "plan.md"), "goal\nstatus: draft\n");
      expect((await call(a, "notes_commit", { message: "a" })).data.generation).toBe(1);
      const pulled = await call(b, "notes_pull");
      expect(pulled.data.files).toEqual([{ path: "plan.md", insertions: 2, deletions: 0 }]);
      writeFileSync(join(da, "plan.md"), "goal\nstatus: a\n");
      writeFileSync(join(db, "plan.md"), "goal\nstatus: b\n");
      await call(a, "notes_commit", { message: "a2" });
      const conflict = await call(b, "notes_commit", { message: "b2" });
      expect(conflict.isError).toBe(true);
      expect(conflict.data).toMatchObject({
        code: "CONTENT_CONFLICT",
        reason: "MERGE_CONFLICT",
        action: "EDIT_FILES",
        retryable: false,
        files: [{ path: "plan.md", reason: "TEXT_CONFLICT", ranges: [{ start: 2, end: 6 }] }],
      });
      expect(conflict.text).toContain("file: plan.md · TEXT_CONFLICT · lines 2-6");
      writeFileSync(join(db, "plan.md"), "goal\nstatus: a and b\n");
      const resolved = await call(b, "notes_commit", { message: "resolved" });
      expect(resolved.data.generation).toBe(3);
      await call(a, "notes_pull");
      expect(readFileSync(join(da, "plan.md"), "utf8")).toBe("goal\nstatus: a and b\n");
    } finally {
      await a.close();
      await b.close();
    }
  });
});

describe("the process", () => {
  test("stdout of a whole session is JSON-RPC, line by line, and the server exits when stdin closes", async () => {
    const env = envFor("raw");
    mkdirSync(env.TMPDIR!, { recursive: true });
    const server = spawnServe(env);
    const send = (msg: unknown) => server.send(msg);
    send({ jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "raw", version: "1" } } });
    send({ jsonrpc: "2.0", method: "notifications/initialized" });
    send({ jsonrpc: "2.0", id: 2, method: "tools/list" });
    send({ jsonrpc: "2.0", id: 3, method: "tools/call", params: { name: "notes_pull", arguments: {} } });
    send({ jsonrpc: "2.0", id: 4, method: "tools/call", params: { name: "notes_commit", arguments: { message: "nothing" } } });
    send({ jsonrpc: "2.0", id: 5, method: "tools/call", params: { name: "notes_pull", arguments: { bogus: true } } });
    send({ jsonrpc: "2.0", id: 6, method: "tools/call", params: { name: "no_such_tool", arguments: {} } });
    for (const id of [1, 2, 3, 4, 5, 6]) await server.answer(id);
    // Every call is answered and the server is still running: closing stdin is what ends it.
    expect(server.child.exitCode).toBeNull();
    // finish fails on a line of stdout that is not JSON, or a last line without its newline.
    const { code, stderr } = await server.finish();
    expect(code).toBe(0);
    const messages = server.messages() as Array<{ jsonrpc: string; id: number; result?: unknown; error?: unknown }>;
    for (const m of messages) expect(m.jsonrpc).toBe("2.0");
    // Calls run concurrently, so answers may come in any order; each comes once.
    expect(messages.map((m) => m.id).sort()).toEqual([1, 2, 3, 4, 5, 6]);
    expect(messages.find((m) => m.id === 6)!.error).toBeDefined();
    for (const l of stderr.trim().split("\n")) expect(() => JSON.parse(l)).not.toThrow();
  });
});

describe("cancellation", () => {
  test("a cancelled commit gets no envelope, and leaves checkout and store consistent", async () => {
    const env = envFor("cancel");
    mkdirSync(env.TMPDIR!, { recursive: true });
    const server = spawnServe(env);
    const send = (msg: unknown) => server.send(msg);
    const answer = async (id: number) => (await server.answer(id)) as { result: { structuredContent: Record<string, unknown> } };
    send({ jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "c", version: "1" } } });
    send({ jsonrpc: "2.0", method: "notifications/initialized" });
    send({ jsonrpc: "2.0", id: 2, method: "tools/call", params: { name: "notes_pull", arguments: {} } });
    const dir = (await answer(2)).result.structuredContent.path as string;
    for (let i = 0; i < 1500; i++) writeFileSync(join(dir, `note-${i}.md`), `note ${i}\n`);
    // The cancel goes right behind the request: the server starts the call
    // on reading its line, and no commit can finish before the next line is
    // read (a pause here made the test depend on the commit being slower).
    send({ jsonrpc: "2.0", id: 3, method: "tools/call", params: { name: "notes_commit", arguments: { message: "big" } } });
    send({ jsonrpc: "2.0", method: "notifications/cancelled", params: { requestId: 3, reason: "test" } });
    // The next call waits for the checkout lock, so it runs after the cancelled one finished or stopped.
    send({ jsonrpc: "2.0", id: 4, method: "tools/call", params: { name: "notes_pull", arguments: {} } });
    const after = (await answer(4)).result.structuredContent;
    expect(after.code).toBe("OK");
    expect(server.messages().some((l) => l.id === 3)).toBe(false);
    // Whatever the cancel interrupted, nothing is lost: committing again publishes everything.
    send({ jsonrpc: "2.0", id: 5, method: "tools/call", params: { name: "notes_commit", arguments: { message: "again" } } });
    const again = (await answer(5)).result.structuredContent;
    expect(again.code).toBe("OK");
    expect(again.generation).toBe(1);
    for (let i = 0; i < 1500; i += 299) expect(readFileSync(join(dir, `note-${i}.md`), "utf8")).toBe(`note ${i}\n`);
    // Everything published: the session goes with the server.
    expect((await server.finish()).code).toBe(0);
  });
});

describe("path sets through MCP", () => {
  test("two servers on one store, one with --read-only-paths docs: advertised, enforced, never conflicting", async () => {
    const env = envFor("sets");
    mkdirSync(env.TMPDIR!, { recursive: true });
    const admin = await connect(env);
    const agent = await connect(env, ["--read-only-paths", "docs"]);
    try {
      const ro = "Read-only paths: docs. notes_commit refuses any change to them, resets those files, and reports READ_ONLY_PATH; write elsewhere.";
      expect(admin.client.getInstructions()).not.toContain("Read-only");
      expect(agent.client.getInstructions()).toEndWith(`subdirectory of it.\n${ro}`);
      const tools = (await agent.client.listTools()).tools;
      for (const t of tools) expect(t.description).toBe(`${specDescription(t.name)} ${ro}`);
      const plain = (await admin.client.listTools()).tools;
      for (const t of plain) expect(t.description).toBe(specDescription(t.name));

      const da = (await call(admin, "notes_pull")).data.path as string;
      mkdirSync(join(da, "docs"), { recursive: true });
      writeFileSync(join(da, "docs", "rules.md"), "rule 1\n");
      writeFileSync(join(da, "notes.md"), "notes\n");
      await call(admin, "notes_commit", { message: "seed" });

      const pulled = await call(agent, "notes_pull");
      const dg = pulled.data.path as string;
      expect(pulled.text).toBe(`${dg} (read-only: docs)`);
      expect([pulled.data.readOnly, pulled.data.writable]).toEqual([["docs"], []]);

      writeFileSync(join(dg, "docs", "rules.md"), "rule 1, relaxed by the agent\n");
      writeFileSync(join(dg, "notes.md"), "notes by the agent\n");
      const refused = await call(agent, "notes_commit", { message: "try" });
      expect(refused.data).toMatchObject({
        code: "INVALID_REQUEST",
        reason: "READ_ONLY_PATH",
        action: "EDIT_FILES",
        files: [{ path: "docs/rules.md", reason: "READ_ONLY", ranges: [] }],
        readOnly: ["docs"],
        writable: [],
      });
      expect(refused.text).toContain("file: docs/rules.md · READ_ONLY");
      expect(refused.text).toEndWith("read-only: docs");
      expect(readFileSync(join(dg, "docs", "rules.md"), "utf8")).toBe("rule 1\n");
      expect(readFileSync(join(dg, "notes.md"), "utf8")).toBe("notes by the agent\n");

      // The admin changes the protected file while the agent edits it again: no conflict for the agent.
      writeFileSync(join(da, "docs", "rules.md"), "rule 1, amended\n");
      await call(admin, "notes_commit", { message: "amend" });
      writeFileSync(join(dg, "docs", "rules.md"), "agent again\n");
      const synced = await call(agent, "notes_pull");
      expect(synced.isError).toBe(false);
      expect(readFileSync(join(dg, "docs", "rules.md"), "utf8")).toBe("rule 1, amended\n");
      const landed = await call(agent, "notes_commit", { message: "notes" });
      expect(landed.data).toMatchObject({ code: "OK", files: [{ path: "notes.md", insertions: 1, deletions: 1 }], readOnly: ["docs"] });
      expect(landed.text).toBe(`${dg} (read-only: docs)`);
    } finally {
      await admin.close();
      await agent.close();
    }
  });
});

/**
 * JSON text is UTF-8. A line that is not — a commit message with a stray
 * Latin-1 byte, say — is refused with JSON-RPC's parse error under its
 * request's id, and nothing is done: decoded with U+FFFD in place of the
 * byte, the message would have been stored changed.
 */
test("a tool call that is not valid UTF-8 is refused with a parse error, and nothing is published", async () => {
  const env = envFor("not-utf8");
  mkdirSync(env.TMPDIR!, { recursive: true });
  const notebook = join(root, "not-utf8", "ws", "notebook");
  const server = spawnServe(env, ["--workspace-root", join(root, "not-utf8", "ws")]);
  await server.initialize();
  server.send({ jsonrpc: "2.0", id: 2, method: "tools/call", params: { name: "notes_pull", arguments: { path: notebook } } });
  expect((await server.answer(2)).result?.structuredContent).toMatchObject({ generation: 0 });
  writeFileSync(join(notebook, "a.md"), "a\n");
  const call = JSON.stringify({ jsonrpc: "2.0", id: 3, method: "tools/call", params: { name: "notes_commit", arguments: { path: notebook, message: "caf@" } } });
  const bytes = new TextEncoder().encode(call);
  bytes[bytes.indexOf("@".charCodeAt(0))] = 0xe9; // "café" in Latin-1: not UTF-8
  server.sendBytes(bytes);
  const refused = await server.answer(3);
  expect(refused.error).toEqual({ code: -32700, message: "Parse error: the message is not valid UTF-8 text; nothing was done. Send the text as UTF-8." });
  // The session goes on, and the file is still unpublished.
  server.send({ jsonrpc: "2.0", id: 4, method: "tools/call", params: { name: "notes_commit", arguments: { path: notebook, message: "café" } } });
  const committed = await server.answer(4);
  expect(committed.result?.structuredContent).toMatchObject({ generation: 1, files: [{ path: "a.md", insertions: 1, deletions: 0 }] });
  expect((await server.finish()).code).toBe(0);
});

/**
 * What the transport answers itself, as JSON-RPC 2.0 says: a line that is
 * not JSON, JSON that is no message, a batch as the negotiated protocol
 * version says, a line over the size bound. Each got no answer at all (a
 * line over 10 MiB ended the server); now each is answered, and the session
 * goes on.
 */
describe("JSON-RPC errors from the transport", () => {
  const PARSE_ERROR = -32700;
  const INVALID_REQUEST = -32600;
  const MiB = 1024 * 1024;
  /** The bound docs/cli.md gives for one line. */
  const MAX_LINE_MiB = 10;
  type Answer = { jsonrpc: string; id: unknown; error?: { code: number; message: string }; result?: Record<string, unknown> };

  async function session(name: string, protocolVersion = "2025-06-18") {
    const env = envFor(name);
    mkdirSync(env.TMPDIR!, { recursive: true });
    const server = spawnServe(env, ["--workspace-root", join(root, name, "ws")]);
    server.send({ jsonrpc: "2.0", id: 0, method: "initialize", params: { protocolVersion, capabilities: {}, clientInfo: { name: "t", version: "1" } } });
    expect(((await server.next()) as Answer).result!.protocolVersion).toBe(protocolVersion);
    server.send({ jsonrpc: "2.0", method: "notifications/initialized" });
    return server;
  }
  /** The error answering one line: its code and id (the message is words, which may change). */
  const refusal = (a: unknown) => ({ id: (a as Answer).id, code: (a as Answer).error?.code, jsonrpc: (a as Answer).jsonrpc });

  test("a line that is not JSON is -32700 with id null; JSON that is no message is -32600, under its id when a request's can be read", async () => {
    const server = await session("jsonrpc-errors");
    const lines: Array<[string, { id: unknown; code: number }]> = [
      ["{not json", { id: null, code: PARSE_ERROR }],
      ['{"jsonrpc":"2.0","id":1,"method":"tools/list"', { id: null, code: PARSE_ERROR }],
      ['{"id":2,"method":"tools/list"}', { id: 2, code: INVALID_REQUEST }],
      ['{"jsonrpc":"1.0","id":"three","method":"tools/list"}', { id: "three", code: INVALID_REQUEST }],
      ['{"jsonrpc":"2.0","id":null,"method":"tools/list"}', { id: null, code: INVALID_REQUEST }],
      ['{"jsonrpc":"2.0","id":{"x":1},"method":"tools/list"}', { id: null, code: INVALID_REQUEST }],
      ['{"jsonrpc":"2.0","id":4,"method":"tools/list","extra":true}', { id: 4, code: INVALID_REQUEST }],
      ['{"jsonrpc":"2.0","method":5}', { id: null, code: INVALID_REQUEST }],
      ['{"jsonrpc":"2.0","id":6}', { id: null, code: INVALID_REQUEST }],
      ['"a string"', { id: null, code: INVALID_REQUEST }],
      ["42", { id: null, code: INVALID_REQUEST }],
      ["null", { id: null, code: INVALID_REQUEST }],
      // Batches were removed in 2025-06-18, the version this session speaks: the requests in it are not run.
      ['[{"jsonrpc":"2.0","id":7,"method":"tools/list"},{"jsonrpc":"2.0","id":8,"method":"ping"}]', { id: null, code: INVALID_REQUEST }],
    ];
    for (const [line, expected] of lines) {
      server.sendBytes(new TextEncoder().encode(line));
      const answer = (await server.next()) as Answer;
      expect({ line, ...refusal(answer) }).toEqual({ line, ...expected, jsonrpc: "2.0" });
      expect(answer.error!.message).toMatch(expected.code === PARSE_ERROR ? /^Parse error: .*nothing was done/ : /^Invalid Request: .*nothing was done/);
      // The session goes on: the next request is answered, and in order.
      server.send({ jsonrpc: "2.0", id: 100, method: "ping" });
      expect(await server.next()).toEqual({ jsonrpc: "2.0", id: 100, result: {} });
    }
    server.send({ jsonrpc: "2.0", id: 101, method: "tools/call", params: { name: "notes_pull", arguments: {} } });
    expect(((await server.next()) as Answer).result!.structuredContent).toMatchObject({ code: "OK" });
    const { code, stdout } = await server.finish();
    expect(code).toBe(0);
    // Every answer was one line; the batch's requests never ran.
    expect(stdout.split("\n").filter((l) => l !== "").map((l) => JSON.parse(l).id).filter((id) => id === 7 || id === 8)).toEqual([]);
  });

  test("a batch under 2025-03-26: one array of answers, none for notifications or a cancelled request; refused before initialize, when empty, and for initialize", async () => {
    const env = envFor("batch-first");
    mkdirSync(env.TMPDIR!, { recursive: true });
    // Before initialize no version is negotiated, and initialize may not be batched.
    const early = spawnServe(env, ["--workspace-root", join(root, "batch-first", "ws")]);
    early.send([{ jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: "2025-03-26", capabilities: {}, clientInfo: { name: "t", version: "1" } } }]);
    expect(refusal(await early.next())).toEqual({ id: null, code: INVALID_REQUEST, jsonrpc: "2.0" });
    early.send({ jsonrpc: "2.0", id: 2, method: "initialize", params: { protocolVersion: "2025-03-26", capabilities: {}, clientInfo: { name: "t", version: "1" } } });
    expect(((await early.next()) as Answer).result!.protocolVersion).toBe("2025-03-26");
    expect((await early.finish()).code).toBe(0);

    const server = await session("batch", "2025-03-26");
    server.send([
      { jsonrpc: "2.0", id: 1, method: "tools/list" },
      { jsonrpc: "2.0", method: "notifications/progress", params: { progressToken: "x", progress: 1 } },
      { jsonrpc: "2.0", id: "two", method: "ping" },
      { jsonrpc: "2.0", id: 3 },
      { jsonrpc: "2.0", id: 4, method: "tools/call", params: { name: "notes_pull", arguments: {} } },
      { jsonrpc: "2.0", id: 5, method: "initialize", params: { protocolVersion: "2025-03-26", capabilities: {}, clientInfo: { name: "t", version: "1" } } },
      { jsonrpc: "2.0", id: 6, method: "no/such/method" },
    ]);
    const answers = (await server.next()) as Answer[];
    expect(Array.isArray(answers)).toBe(true);
    const byId = Object.fromEntries(answers.map((a) => [String(a.id), a]));
    expect(answers.length).toBe(6);
    expect((byId["1"]!.result!.tools as unknown[]).length).toBe(2);
    expect(byId.two).toEqual({ jsonrpc: "2.0", id: "two", result: {} });
    expect(refusal(byId.null)).toEqual({ id: null, code: INVALID_REQUEST, jsonrpc: "2.0" });
    expect((byId["4"]!.result!.structuredContent as Record<string, unknown>).code).toBe("OK");
    expect(refusal(byId["5"])).toEqual({ id: 5, code: INVALID_REQUEST, jsonrpc: "2.0" });
    expect(byId["6"]!.error!.code).toBe(-32601);
    // Notifications alone: no answer at all, not an empty array; an empty batch: one error.
    server.send([{ jsonrpc: "2.0", method: "notifications/progress", params: { progressToken: "x", progress: 2 } }]);
    server.send([]);
    expect(refusal(await server.next())).toEqual({ id: null, code: INVALID_REQUEST, jsonrpc: "2.0" });
    server.send({ jsonrpc: "2.0", id: 7, method: "ping" });
    expect(await server.next()).toEqual({ jsonrpc: "2.0", id: 7, result: {} });
    // A request the host cancels gets no answer, so the batch does not wait for it. The
    // cancel goes in the same write: it is read before the call can finish.
    const batch = [
      { jsonrpc: "2.0", id: 8, method: "tools/call", params: { name: "notes_commit", arguments: { message: "cancelled" } } },
      { jsonrpc: "2.0", id: 9, method: "ping" },
    ];
    const cancel = { jsonrpc: "2.0", method: "notifications/cancelled", params: { requestId: 8, reason: "test" } };
    await server.write(`${JSON.stringify(batch)}\n${JSON.stringify(cancel)}\n`);
    expect(await server.next()).toEqual([{ jsonrpc: "2.0", id: 9, result: {} }]);
    expect((await server.finish()).code).toBe(0);
  });

  test(`a line over ${MAX_LINE_MiB} MiB is -32600 under its request's id, read without being kept, and the server keeps serving`, async () => {
    const server = await session("oversized");
    const filler = "x".repeat(MiB);
    /** A tools/call line `mib` MiB long, members in the order given, written in parts. */
    const sendLong = async (mib: number, order: "id-last" | "id-first" | "no-method") => {
      const head = order === "id-first" ? '{"jsonrpc":"2.0","id":"first","method":"tools/call","params":{"name":"notes_commit","arguments":{"message":"'
        : order === "id-last" ? '{"method":"tools/call","params":{"name":"notes_commit","arguments":{"id":"nested","message":"'
        : '{"jsonrpc":"2.0","id":"reply","result":{"text":"';
      const tail = order === "id-last" ? '"}},"jsonrpc":"2.0","id":77}\n' : order === "id-first" ? '"}}}\n' : '"}}\n';
      await server.write(head);
      for (let i = 0; i < mib; i++) await server.write(filler);
      await server.write(tail);
    };
    await sendLong(MAX_LINE_MiB + 1, "id-last");
    expect(refusal(await server.next())).toEqual({ id: 77, code: INVALID_REQUEST, jsonrpc: "2.0" });
    await sendLong(MAX_LINE_MiB + 1, "id-first");
    const first = (await server.next()) as Answer;
    expect(refusal(first)).toEqual({ id: "first", code: INVALID_REQUEST, jsonrpc: "2.0" });
    expect(first.error!.message).toContain("10,485,760 bytes");
    // Not a request: no id is answered under.
    await sendLong(MAX_LINE_MiB + 1, "no-method");
    expect(refusal(await server.next())).toEqual({ id: null, code: INVALID_REQUEST, jsonrpc: "2.0" });
    // A quarter of a GiB is read, not held: the server's peak memory grows by far less.
    const peak = () => Number(/VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${server.pid}/status`, "utf8"))![1]) * 1024;
    const before = peak();
    await sendLong(256, "id-last");
    expect(refusal(await server.next())).toEqual({ id: 77, code: INVALID_REQUEST, jsonrpc: "2.0" });
    expect(peak() - before).toBeLessThan(96 * MiB);
    // A line just within the bound is a message like any other.
    server.send({ jsonrpc: "2.0", id: 8, method: "tools/call", params: { name: "notes_pull", arguments: {} } });
    expect(((await server.next()) as Answer).result!.structuredContent).toMatchObject({ code: "OK" });
    const { code, stdout } = await server.finish();
    expect(code).toBe(0);
    expect(stdout.length).toBeLessThan(MiB);
  }, 120_000);
});
