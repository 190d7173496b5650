/**
 * One call of an operation, by its registry entry or by its MCP tool's name:
 * the one way the surfaces (and tests) run an operation. Apart from
 * operation.ts, which defines what an entry is and runs one, so that the
 * registry (operations.ts) can import that definition without a circle.
 */
import type { SuccessResult } from "../contract/results.ts";
import type { ToolName } from "../contract/tools.ts";
import { callOperation, type Operation, type OperationContext, type OperationResult } from "./operation.ts";
import { operationByTool } from "./operations.ts";

export async function runOperation(ctx: OperationContext, tool: ToolName, args: unknown, requestId?: string | number): Promise<OperationResult<SuccessResult>>;
export async function runOperation<R>(ctx: OperationContext, operation: Operation<any, R>, args: unknown, requestId?: string | number): Promise<OperationResult<R>>;
export async function runOperation(ctx: OperationContext, operation: Operation | ToolName, args: unknown, requestId?: string | number): Promise<OperationResult> {
  return callOperation(ctx, typeof operation === "string" ? operationByTool(operation) : operation, args, requestId);
}
