/**
 * The operations registry: one entry per operation, and the one place both
 * surfaces read them from. An entry holds the operation's CLI command and,
 * for the two that are MCP tools, the tool's name and description; its
 * input (one definition that decodes strictly and is advertised as the
 * tool's JSON Schema, contract/input-schema.ts); and what runs it. It holds
 * no rendering: how a person reads a result is the CLI's, found by the
 * operation's name (cli/renderers.ts). The MCP server lists and calls the
 * entries with a tool (mcp/server.ts), the CLI makes a command of every
 * entry (cli/definitions.ts, cli/run.ts), and `--json` prints the result
 * object the entry returns.
 *
 * Adding an operation is one entry (operations/), its engine function and
 * its renderer. Runners load the engine when they run, not when this
 * module loads: the CLI and `serve` read this registry at start
 * (docs/performance.md, scenario `start-up`), and `serve`, which renders
 * nothing, loads no CLI code.
 */
import type { PathSets } from "../contract/results.ts";
import { TOOL_ANNOTATIONS, TOOL_NAMES, type ToolName, withSentences } from "../contract/tools.ts";
import type { Operation } from "./operation.ts";
import { agentsOperation, blameOperation, exportOperation, logOperation, showOperation } from "./operations/history.ts";
import { diffOperation, restoreOperation, statusOperation } from "./operations/local.ts";
import { doctorOperation, gcOperation, generationOperation } from "./operations/maintenance.ts";
import { attachOperation, commitOperation, initOperation, pullOperation } from "./operations/notebook.ts";

/** Every operation by its command's name, in the order help lists them. */
export const OPERATIONS_BY_NAME = {
  init: initOperation,
  pull: pullOperation,
  attach: attachOperation,
  commit: commitOperation,
  gc: gcOperation,
  generation: generationOperation,
  log: logOperation,
  agents: agentsOperation,
  show: showOperation,
  blame: blameOperation,
  export: exportOperation,
  status: statusOperation,
  diff: diffOperation,
  restore: restoreOperation,
  doctor: doctorOperation,
};

export type OperationName = keyof typeof OPERATIONS_BY_NAME;

/** Every operation, in the order help lists them. */
export const OPERATIONS: readonly Operation[] = Object.values(OPERATIONS_BY_NAME);

export function operationByCli(name: string): Operation | undefined {
  return OPERATIONS.find((op) => op.cli.name === name);
}

/** The MCP tools, in TOOL_NAMES order: exactly notes_pull and notes_commit. */
export function operationByTool(name: ToolName): Operation & { tool: NonNullable<Operation["tool"]> } {
  const op = OPERATIONS.find((o) => o.tool?.name === name);
  if (op === undefined) throw new Error(`no operation is the tool ${name}`);
  return op as Operation & { tool: NonNullable<Operation["tool"]> };
}

/** A tool's description, with the path-set sentences of this process (mcp-tools.md "Tool descriptions"). */
export function toolDescription(name: ToolName, sets: PathSets): string {
  return withSentences(operationByTool(name).tool.description, sets);
}

/** What tools/list answers. */
export function toolList(sets: PathSets) {
  return TOOL_NAMES.map((name) => ({
    name,
    description: toolDescription(name, sets),
    inputSchema: operationByTool(name).input.jsonSchema(),
    annotations: TOOL_ANNOTATIONS[name],
  }));
}
