/**
 * How both surfaces run an operation of the registry (operations.ts):
 * decode its input with the entry's schema, run the entry with stage
 * timing, and build its result or the error envelope — with the pair of log
 * records (start, completion) that share the call's mcpReqID, which is also
 * the result's diagnosticId.
 */
import { DomainError } from "../contract/errors.ts";
import type { InputSchema } from "../contract/input-schema.ts";
import { type ErrorEnvelope, errorEnvelope, newDiagnosticId, type PathSets, type SuccessResult } from "../contract/results.ts";
import { scrubCredentials } from "../contract/scrub.ts";
import { StartupRefusal } from "../contract/startup.ts";
import { NewerStoreFormat } from "../contract/store-formats.ts";
import type { ToolName } from "../contract/tools.ts";
import type { EngineDeps } from "../engine/engine.ts";
import { boundedStore, type Deadline } from "../store/deadline.ts";
import type { ObjectStore } from "../store/object-store.ts";
import { credentialsRefusal } from "../store/probe.ts";
import type { Log } from "./log.ts";
import { namedPath, type PathContext, resolveNotebookPath } from "./paths.ts";

export interface OperationContext {
  /** The engine's dependencies; a surface may make them on first read (a getter), so operations that need no checkout never do. */
  deps: EngineDeps;
  /** The store, when it is not to be read from `deps` (which may not be made yet). */
  store?: ObjectStore;
  /**
   * The call deadline of a call that starts now: `serve` makes one per
   * call, a CLI process has one, begun at its start. The call's store
   * requests end by it, and so do its engine's waits.
   */
  deadline(): Deadline;
  sets: PathSets;
  paths: PathContext;
  log: Log;
  /** The credentials the process holds (runtimeSecrets), which no result or log record may carry. */
  secrets: string[];
  /** The private root, which no result may carry (a log record may). */
  privatePaths?: string[];
  /** MCP paths must be absolute after `~/` expansion; the CLI resolves relative ones. */
  requireAbsolute: boolean;
  /** The commit retry bound configured (--commit-retries); absent: the engine's default. */
  commitRetries?: number;
  /**
   * The store refused the credentials a call went as (store/probe.ts's
   * credentialsRefusal): the surface drops the probe's record of them
   * (verified-store.ts), so the next start probes again and refuses.
   */
  credentialsRefused?(): void;
  /**
   * Set by the CLI only: a StartupRefusal an operation throws is then its
   * argument refusal (exit 2), and `adopt` says whether `--adopt` was given.
   * A store of a newer format than this binary reads is its start-up
   * refusal too (INCOMPATIBLE_STORE), since upgrading is the only way on;
   * `serve`'s calls keep the token table's MANIFEST_INVALID.
   */
  cli?: { adopt: boolean };
}

/** What an operation's runner gets for one call. */
export interface RunContext {
  sets: PathSets;
  /** The store, its requests bounded by the call's deadline. */
  store: ObjectStore;
  /** The call's deadline. */
  deadline: Deadline;
  /** The commit retry bound configured; absent: the engine's default. */
  commitRetries?: number;
  /**
   * Whether a first pull refuses a directory of files that are nothing of
   * the notebook's (engine/foreign.ts): on the command line unless
   * `--adopt`; never in `serve`, which judges its workspace root at start.
   */
  refuseForeign: boolean;
  /** The engine's dependencies, with this call's stage timing; made on first use. */
  engine(): EngineDeps;
  /** A caller's notebook path (absent or "": the default directory), resolved and bounded by the workspace root. */
  notebookPath(path: string | undefined): string;
  /** The same path made absolute as the caller named it, no symlink resolved (paths.ts). */
  namedPath(path: string | undefined): string;
}

/** A command-line flag of an operation, beyond the configuration flags every command takes. */
export interface CliFlag {
  type: "string" | "boolean";
  description: string;
  alias?: string;
  valueHint?: string;
  required?: boolean;
  /**
   * The value must reach us byte for byte: a U+FFFD in it is checked
   * against the raw command line (cli/arguments.ts).
   */
  exactBytes?: boolean;
}

/** An operation's command line: flags and positional path in, the input object out. */
export interface CliForm {
  name: string;
  /** One line for help. */
  summary: string;
  /** How to call it, for a refusal that lacks a required flag ("commit -m MSG [PATH]"). */
  usage: string;
  /** One example, as `--help` shows it. */
  example: string;
  flags: Record<string, CliFlag>;
  /** Takes one optional notebook PATH (true), any number of notebook paths ("paths": restore's files), or none. */
  path: boolean | "paths";
  /**
   * Takes one positional argument that is not a notebook path (`show
   * GENERATION`, `export DIR`), passed to `toInput` as `path`; never with
   * a `path`.
   */
  positional?: { name: string; description: string; required: boolean };
  /**
   * Only reads the store, and only to add to what it reports (status, diff):
   * the store is opened without the start-up probe — which proves the
   * conditional writes such a command never makes — so it runs offline.
   */
  readsStoreOnly?: boolean;
  /**
   * Writes nothing to the store (pull, log, show, export…): credentials
   * that may only read it are enough, where a start-up probe's writes are
   * refused for access (verified-store.ts). Absent: it writes (commit, gc).
   */
  writesNothing?: boolean;
  /**
   * Examines the store itself, the start-up probe among it (doctor): the
   * store is opened without the probe, and whatever it answers is the
   * command's report, not a start-up refusal.
   */
  examinesStore?: boolean;
  /**
   * Sets a notebook up (init): an embedded store's file is made where it is
   * asked for, as `--create` would, since this is the first set-up path.
   */
  createsStore?: boolean;
  /** The operation's input from the parsed flags and positionals (a start-up refusal for a bad flag value). */
  toInput(flags: Record<string, string | boolean>, path: string | undefined, positionals: string[]): Record<string, unknown>;
}

/**
 * One operation: its names on the two surfaces, its input and what runs it.
 * Result objects are what `--json` and MCP's structured content carry; how
 * a person reads one is the CLI's (cli/renderers.ts), not the entry's.
 */
export interface Operation<I = any, R = any> {
  cli: CliForm;
  /** The MCP tool, for the operations that are one; the MCP surface stays exactly notes_pull and notes_commit. */
  tool?: { name: ToolName; description: string };
  input: InputSchema<I>;
  run(ctx: RunContext, input: I): Promise<R>;
}

export type OperationResult<R = any> =
  | { ok: true; result: R; diagnosticId: string }
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

/**
 * Past this resident size, or this growth since the call began, garbage is
 * collected between a call's stages. A call on a big file leaves buffers of
 * its size dead at the end of each stage (the bytes read, inflated,
 * deflated), and a call on a big notebook as many small ones as it has
 * files, which the runtime collects only later: the next stage's
 * allocations then stack on them, and the peak climbs stage by stage
 * (docs/performance.md, "Big files" and "BULK"). The growth is the call's
 * own, so a server holding much between calls collects no more often for
 * it; an ordinary call stays far below both and pays one read of its size
 * a stage.
 */
const COLLECT_ABOVE_BYTES = 512 * 2 ** 20;
const COLLECT_GROWN_BYTES = 96 * 2 ** 20;

function collectIfLarge(startRss: number): void {
  const rss = process.memoryUsage.rss();
  if (rss > COLLECT_ABOVE_BYTES || rss - startRss > COLLECT_GROWN_BYTES) Bun.gc(true);
}

/**
 * Run one call of `op` (an entry of the registry, operations.ts): decode,
 * run, and log it; the result or the error envelope. Callers name it by
 * run-operation.ts's runOperation, which also takes an MCP tool's name.
 */
export async function callOperation<R>(ctx: OperationContext, op: Operation<any, R>, args: unknown, requestId?: string | number): Promise<OperationResult<R>> {
  const tool = op.tool?.name ?? op.cli.name;
  const diagnosticId = newDiagnosticId();
  const timer = new StageTimer();
  ctx.log.info("tool call started", { mcpReqID: diagnosticId, tool, ...(requestId !== undefined ? { requestId } : {}) });
  try {
    timer.mark("decode");
    const input = op.input.decode(args);
    const run = runContext(ctx, timer);
    const result = await op.run(run, input);
    const counts = result as { generation?: unknown; filesChanged?: unknown };
    ctx.log.info("tool call completed", {
      mcpReqID: diagnosticId,
      tool,
      outcome: "OK",
      ...(typeof counts.generation === "number" ? { generation: counts.generation } : {}),
      ...(typeof counts.filesChanged === "number" ? { filesChanged: counts.filesChanged } : {}),
      ...timer.finish(),
    });
    return { ok: true, result, diagnosticId };
  } catch (e) {
    return { ok: false, envelope: failedCall(ctx, op, e, { diagnosticId, tool, timer }), diagnosticId };
  }
}

/** What a call's operation runs with: the store bounded by the call's deadline, the engine's dependencies made on first use, and the call's paths. */
function runContext(ctx: OperationContext, timer: StageTimer): RunContext {
  const deadline = ctx.deadline();
  const store = boundedStore(ctx.store ?? ctx.deps.store, deadline);
  const startRss = process.memoryUsage.rss();
  let deps: EngineDeps | null = null;
  return {
    sets: ctx.sets,
    store,
    deadline,
    ...(ctx.commitRetries !== undefined ? { commitRetries: ctx.commitRetries } : {}),
    refuseForeign: ctx.cli !== undefined && !ctx.cli.adopt,
    engine: () =>
      (deps ??= {
        ...ctx.deps,
        store,
        deadline,
        onStage: async (stage) => {
          timer.mark(stage);
          collectIfLarge(startRss);
          await ctx.deps.onStage?.(stage);
        },
      }),
    notebookPath: (path) => resolveNotebookPath(path, ctx.paths, ctx.requireAbsolute),
    namedPath: (path) => namedPath(path, ctx.paths),
  };
}

/**
 * A call's failure, logged: its envelope; or, on the command line, the
 * start-up refusal it is, thrown on (exit 2).
 */
function failedCall(ctx: OperationContext, op: Operation<any, unknown>, e: unknown, call: { diagnosticId: string; tool: string; timer: StageTimer }): ErrorEnvelope {
  const { diagnosticId, tool, timer } = call;
  // An operation that refuses its arguments once it has looked at the disk (export DIR, pull into
  // a directory of foreign files): on the command line, the CLI's argument refusal, exit 2, not an
  // operation failure. The MCP tools answer the envelope only.
  if (e instanceof StartupRefusal && (op.tool === undefined || ctx.cli !== undefined)) {
    ctx.log.info("tool call completed", { mcpReqID: diagnosticId, tool, outcome: e.kind, ...timer.finish() });
    throw e;
  }
  if (e instanceof NewerStoreFormat && ctx.cli !== undefined) {
    ctx.log.info("tool call completed", { mcpReqID: diagnosticId, tool, outcome: "INCOMPATIBLE_STORE", ...timer.finish() });
    throw e.startupRefusal();
  }
  const error = refusedCredentials(
    ctx,
    e instanceof DomainError ? e : new DomainError("INTERNAL", "An unexpected error occurred; the server log has the cause under this diagnosticId.", { cause: e }),
  );
  const envelope = errorEnvelope(error, diagnosticId, ctx.sets, { credentials: ctx.secrets, privatePaths: ctx.privatePaths ?? [] });
  ctx.log.info("tool call completed", {
    mcpReqID: diagnosticId,
    tool,
    outcome: `${envelope.code} · ${envelope.reason}`,
    ...timer.finish(),
    // The full cause, for the operator only; it never reaches the caller.
    ...(error.cause !== undefined ? { cause: scrubCredentials(describeCause(error.cause), ctx.secrets) } : {}),
  });
  return envelope;
}

/**
 * A failure whose cause is the store refusing the credentials: the table's
 * STORAGE_FAILURE, retryable by its code, though calling again cannot help
 * until someone grants them access. The message names the refusal and says
 * so; the probe's record of them goes (credentialsRefused).
 */
function refusedCredentials(ctx: OperationContext, error: DomainError): DomainError {
  if (error.code !== "STORAGE_FAILURE") return error;
  const refusal = credentialsRefusal(error.cause);
  if (refusal === null) return error;
  ctx.credentialsRefused?.();
  const message = `${error.message} The store refused the credentials: ${refusal}. Calling again cannot help until they are given access; the next start checks them again.`;
  return new DomainError(error.reason, message, { cause: error.cause });
}

function describeCause(cause: unknown): string {
  if (cause instanceof Error) {
    const inner = cause.cause !== undefined ? ` ← ${describeCause(cause.cause)}` : "";
    return `${cause.name}: ${cause.message}${inner}`;
  }
  return String(cause);
}
