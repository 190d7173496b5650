/**
 * The MCP server (mcp-tools.md): exactly two tools — the entries of the
 * operations registry that are tools (operations.ts) — no prompts, no
 * resources. Built by a factory so each test gets a fresh one.
 *
 * The SDK's high-level McpServer, and even the low-level Server's own
 * tools/call wrapper, validate tool arguments themselves and answer with
 * protocol errors; mcp-tools.md wants strict decoding by the project, answered
 * with the domain error envelope (INVALID_REQUEST · MALFORMED_INPUT). So
 * tools/call is registered on the protocol layer directly, with a schema
 * that accepts any params, and decoding happens in runOperation.
 */
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { Protocol } from "@modelcontextprotocol/sdk/shared/protocol.js";
import { type CallToolResult, ErrorCode, type JSONRPCMessage, JSONRPCMessageSchema, ListToolsRequestSchema, McpError } from "@modelcontextprotocol/sdk/types.js";
import { z } from "zod";
import { errorText, type PathSets, successText } from "../../contract/results.ts";
import { TOOL_NAMES, type ToolName } from "../../contract/tools.ts";
import type { OperationContext } from "../operation.ts";
import { runOperation } from "../run-operation.ts";
import { operationByTool, toolList } from "../operations.ts";
import type { ServerIdentity } from "./handshake.ts";
import type { FetchAheadLooks } from "./fetch-ahead.ts";

/**
 * The SDK's check of one message, as its stdio transport makes it, for our
 * transport (stdio.ts), which is loaded before the SDK: the message, or
 * undefined when `value` is none.
 */
export function parseMessage(value: unknown): JSONRPCMessage | undefined {
  const parsed = JSONRPCMessageSchema.safeParse(value);
  return parsed.success ? parsed.data : undefined;
}

export interface McpServerOptions {
  /** Name, version, capabilities and instructions (naming the notebook directory), as the early handshake gives them. */
  identity: ServerIdentity;
  sets: PathSets;
  operation: OperationContext;
  /** The server's looks ahead at the store between calls (fetch-ahead.ts), told of each call; none in tests that want none. */
  looks?: Pick<FetchAheadLooks, "callStarts" | "callEnded">;
}

const AnyToolCall = z.object({
  method: z.literal("tools/call"),
  params: z.unknown(),
});

export interface SlivingdocServer {
  server: Server;
  /** Resolves when no tool call is running: stdin closing must not cut one short. */
  idle(): Promise<void>;
  busy(): boolean;
}

export function createMcpServer(options: McpServerOptions): SlivingdocServer {
  const { identity } = options;
  const server = new Server(identity.info, { capabilities: identity.capabilities, instructions: identity.instructions });
  const tools = toolList(options.sets);
  let inFlight = 0;
  const waiting: Array<() => void> = [];
  server.setRequestHandler(ListToolsRequestSchema, async () => ({ tools }));

  const callTool = async (request: z.infer<typeof AnyToolCall>, extra: { requestId: string | number }): Promise<CallToolResult> => {
    const params = request.params as { name?: unknown; arguments?: unknown } | undefined;
    const name = params?.name;
    if (typeof name !== "string" || !(TOOL_NAMES as readonly string[]).includes(name)) {
      // Which tool to run is the protocol's business, not the tool's input.
      throw new McpError(ErrorCode.InvalidParams, `Unknown tool; the tools are ${TOOL_NAMES.join(" and ")}`);
    }
    inFlight++;
    let outcome;
    try {
      await options.looks?.callStarts();
      try {
        outcome = await runOperation(options.operation, operationByTool(name as ToolName), params?.arguments, extra.requestId);
      } finally {
        options.looks?.callEnded();
      }
    } finally {
      if (--inFlight === 0) for (const wake of waiting.splice(0)) wake();
    }
    if (outcome.ok) {
      return {
        content: [{ type: "text", text: successText(outcome.result) }],
        structuredContent: outcome.result as unknown as Record<string, unknown>,
      };
    }
    return {
      isError: true,
      content: [{ type: "text", text: errorText(outcome.envelope) }],
      structuredContent: outcome.envelope as unknown as Record<string, unknown>,
    };
  };
  // Protocol's own registration, past Server's argument-validating wrapper (see above).
  Protocol.prototype.setRequestHandler.call(server, AnyToolCall as never, callTool as never);
  return {
    server,
    idle: () => (inFlight === 0 ? Promise.resolve() : new Promise<void>((resolve) => waiting.push(resolve))),
    busy: () => inFlight > 0,
  };
}
