/**
 * One pull or commit as both surfaces run it: decode, resolve the path, run
 * the engine with stage timing, and build the success result or the error
 * envelope — with the pair of log records (start, completion) that share
 * the call's mcpReqID, which is also the result's diagnosticId.
 */
import { DomainError } from "../contract/errors.ts";
import { type ErrorEnvelope, errorEnvelope, newDiagnosticId, type PathSets, type SuccessResult, successResult } from "../contract/results.ts";
import { scrubText } from "../contract/scrub.ts";
import { decodeToolInput } from "../contract/tool-input.ts";
import type { ToolName } from "../contract/tools.ts";
import { commit } from "../engine/commit.ts";
import type { EngineDeps } from "../engine/engine.ts";
import { pull } from "../engine/pull.ts";
import type { Log } from "./log.ts";
import { type PathContext, resolveNotebookPath } from "./paths.ts";

export interface OperationContext {
  deps: EngineDeps;
  sets: PathSets;
  paths: PathContext;
  log: Log;
  /** Runtime values that must never appear in a result (private root, …). */
  secrets: string[];
  /** MCP paths must be absolute after `~/` expansion; the CLI resolves relative ones. */
  requireAbsolute: boolean;
}

export type OperationResult =
  | { ok: true; result: SuccessResult; diagnosticId: string }
  | { ok: false; envelope: ErrorEnvelope; diagnosticId: string };

/** Milliseconds per stage, from the engine's stage hooks. */
class StageTimer {
  private readonly started = performance.now();
  private current: { stage: string; at: number } | null = null;
  readonly stages: Record<string, number> = {};

  mark = (stage: string) => {
    const now = performance.now();
    this.close(now);
    this.current = { stage, at: now };
  };

  finish(): { durationMs: number; stages: Record<string, number> } {
    const now = performance.now();
    this.close(now);
    return { durationMs: round(now - this.started), stages: this.stages };
  }

  private close(now: number) {
    if (this.current) this.stages[this.current.stage] = round((this.stages[this.current.stage] ?? 0) + now - this.current.at);
    this.current = null;
  }
}

const round = (ms: number) => Math.round(ms * 10) / 10;

export async function runOperation(ctx: OperationContext, tool: ToolName, args: unknown, requestId?: string | number): Promise<OperationResult> {
  const diagnosticId = newDiagnosticId();
  const timer = new StageTimer();
  ctx.log.info("tool call started", { mcpReqID: diagnosticId, tool, ...(requestId !== undefined ? { requestId } : {}) });
  try {
    timer.mark("decode");
    const input = decodeToolInput(tool, args);
    const path = resolveNotebookPath(input.path, ctx.paths, ctx.requireAbsolute);
    const deps: EngineDeps = {
      ...ctx.deps,
      onStage: async (stage) => {
        timer.mark(stage);
        await ctx.deps.onStage?.(stage);
      },
    };
    const outcome = tool === "notes_pull" ? await pull(deps, path) : await commit(deps, path, input.message!);
    const result = successResult(outcome, ctx.sets);
    ctx.log.info("tool call completed", {
      mcpReqID: diagnosticId,
      tool,
      outcome: "OK",
      generation: result.generation,
      filesChanged: result.filesChanged,
      ...timer.finish(),
    });
    return { ok: true, result, diagnosticId };
  } catch (e) {
    const error =
      e instanceof DomainError ? e : new DomainError("INTERNAL", "An unexpected error occurred; the server log has the cause under this diagnosticId.", { cause: e });
    const envelope = errorEnvelope(error, diagnosticId, ctx.sets, ctx.secrets);
    ctx.log.info("tool call completed", {
      mcpReqID: diagnosticId,
      tool,
      outcome: `${envelope.code} · ${envelope.reason}`,
      ...timer.finish(),
      // The full cause, for the operator only; it never reaches the caller.
      ...(error.cause !== undefined ? { cause: scrubText(describeCause(error.cause), ctx.secrets) } : {}),
    });
    return { ok: false, envelope, diagnosticId };
  }
}

function describeCause(cause: unknown): string {
  if (cause instanceof Error) {
    const inner = cause.cause !== undefined ? ` ← ${describeCause(cause.cause)}` : "";
    return `${cause.name}: ${cause.message}${inner}`;
  }
  return String(cause);
}
