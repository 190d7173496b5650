/**
 * The operations registry (src/surfaces/operations.ts): the MCP surface is
 * exactly the two tools, every operation is a CLI command, and what a tool
 * advertises is what its decode accepts — one definition for both.
 */
import { expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { DomainError } from "../../src/contract/errors.ts";
import { TOOL_NAMES } from "../../src/contract/tools.ts";
import { subCommands } from "../../src/surfaces/cli/definitions.ts";
import { RENDERERS } from "../../src/surfaces/cli/renderers.ts";
import { OPERATIONS, OPERATIONS_BY_NAME, toolList } from "../../src/surfaces/operations.ts";
import { NO_PATH_SETS } from "../../src/contract/results.ts";
import { commit } from "../../src/engine/commit.ts";
import { collectGarbage } from "../../src/engine/gc.ts";
import { acceptedGeneration } from "../../src/engine/generation.ts";
import { historyAgents } from "../../src/engine/history/agents.ts";
import { historyBlame } from "../../src/engine/history/blame.ts";
import { exportHistory } from "../../src/engine/history/export.ts";
import { historyLog, showGeneration } from "../../src/engine/history/log.ts";
import { readLocalChanges } from "../../src/engine/local-changes.ts";
import { attach, pull } from "../../src/engine/pull.ts";
import { restore } from "../../src/engine/restore.ts";

test("the MCP tools are exactly notes_pull and notes_commit, in that order", () => {
  expect(OPERATIONS.flatMap((op) => (op.tool ? [op.tool.name] : [])).sort()).toEqual([...TOOL_NAMES].sort());
  expect(toolList(NO_PATH_SETS).map((t) => t.name)).toEqual([...TOOL_NAMES]);
});

test("every operation is a CLI command of its own, beside serve and web", () => {
  const names = OPERATIONS.map((op) => op.cli.name);
  expect(new Set(names).size).toBe(names.length);
  expect(Object.keys(subCommands)).toEqual(["serve", "web", ...names]);
});

test("the registry names each entry by its command", () => {
  expect(Object.entries(OPERATIONS_BY_NAME).filter(([name, op]) => op.cli.name !== name)).toEqual([]);
});

/**
 * The entries hold no rendering: the CLI finds each operation's renderer
 * by its name (cli/renderers.ts). Every operation has exactly one, and no
 * renderer names an operation the registry does not hold.
 */
test("every operation has exactly one renderer, and every renderer an operation", () => {
  const operations = OPERATIONS.map((op) => op.cli.name).sort();
  const renderers = Object.keys(RENDERERS).sort();
  expect(renderers.filter((name) => !operations.includes(name))).toEqual([]);
  expect(operations.filter((name) => !renderers.includes(name))).toEqual([]);
  for (const renderer of Object.values(RENDERERS)) {
    expect(typeof renderer.render).toBe("function");
    expect(["stdout", "stderr", "function"]).toContain(typeof renderer.renderTo === "function" ? "function" : renderer.renderTo);
  }
  // An entry carries none of a renderer's members.
  const rendering = ["render", "renderTo", "renderStdout", "done", "exitCode"];
  expect(OPERATIONS.flatMap((op) => Object.keys(op).filter((k) => rendering.includes(k)).map((k) => `${op.cli.name}.${k}`))).toEqual([]);
});

test("each input accepts exactly the properties it advertises, and requires what it marks required", () => {
  for (const op of OPERATIONS) {
    const schema = op.input.jsonSchema() as { properties: Record<string, unknown>; required?: string[]; additionalProperties: boolean };
    expect(schema.additionalProperties).toBe(false);
    const reason = (args: unknown) => {
      try {
        op.input.decode(args);
        return "OK";
      } catch (e) {
        return e instanceof DomainError ? e.reason : String(e);
      }
    };
    expect(reason({ notAField: 1 })).toBe("MALFORMED_INPUT");
    for (const name of Object.keys(schema.properties)) expect(reason({ [name]: null })).toBe("MALFORMED_INPUT");
    for (const name of schema.required ?? []) expect(reason({})).not.toBe("OK"), expect(name in schema.properties).toBe(true);
  }
});

test("docs/cli.md's synopsis lists every command as the registry calls it", () => {
  const cliDoc = readFileSync(join(import.meta.dir, "../../docs/cli.md"), "utf8");
  const synopsis = /^```\n([\s\S]*?)\n```/m.exec(cliDoc)![1]!.split("\n");
  for (const op of OPERATIONS) expect(synopsis.some((line) => line.startsWith(`slivingdoc ${op.cli.usage}`))).toBe(true);
});

/**
 * docs/cli.md's Output section says where each command's output goes, in
 * the same places the CLI's renderers send it (Renderer.renderTo in
 * cli/renderers.ts, pipes.test.ts):
 * a command added to the registry fails here until the section names it.
 */
test("docs/cli.md's Output section places every command of the registry", () => {
  const cliDoc = readFileSync(join(import.meta.dir, "../../docs/cli.md"), "utf8");
  const output = cliDoc.slice(cliDoc.indexOf("\n## Output\n"), cliDoc.indexOf("\n```\nerror: "));
  const named = new Set([...output.matchAll(/`(\w+)[` ]/g)].map((m) => m[1]!));
  expect(OPERATIONS.map((op) => op.cli.name).filter((name) => !named.has(name))).toEqual([]);
});

/** The parameters a function declares, as its source names them. */
function parameters(fn: (...args: never[]) => unknown): string[] {
  const list = /^[^(]*\(([^)]*)\)/.exec(fn.toString())![1]!;
  return list.split(",").map((p) => p.trim()).filter((p) => p !== "");
}

test("every engine operation takes its dependencies, then one input object: op(deps, input)", () => {
  for (const op of [pull, attach, commit, restore, readLocalChanges, collectGarbage, historyLog, historyAgents, showGeneration, historyBlame, exportHistory]) {
    expect({ op: op.name, parameters: parameters(op) }).toEqual({ op: op.name, parameters: ["deps", "input"] });
  }
  // Reading `current` needs no input.
  expect(parameters(acceptedGeneration)).toEqual(["deps"]);
});
