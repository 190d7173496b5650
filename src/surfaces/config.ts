/**
 * Flags + environment → the process's configuration: the store, the path
 * sets, the private and workspace roots, the commit retry bound. Flags win
 * over environment variables
 * (docs/decisions/0002-settings-flags-and-environment.md). Every invalid
 * value is a start-up refusal raised here, before any store is opened.
 */
import { homedir } from "node:os";
import { join, resolve } from "node:path";
import { AGENT_MAX_BYTES, agentProblem } from "../contract/agent.ts";
import { buildPathSets, parsePathSet } from "../contract/path-sets.ts";
import type { PathSets } from "../contract/results.ts";
import { isAtOrBelow } from "../contract/path-containment.ts";
import { parseDuration } from "./duration.ts";
import { realpathLoose } from "./paths.ts";
import { type ConfigFlags, type Env, invalid, nonEmpty } from "./settings.ts";
import { parseStore, STORE_KINDS, type StoreSpec, storeKind } from "./stores.ts";

export type { ConfigFlags, Env } from "./settings.ts";

export interface RuntimeConfig {
  store: StoreSpec;
  pathSets: PathSets;
  privateRoot: string;
  workspaceRoot: string | null;
  /** Absent: the engine's default, applied by engineDeps (so resolving a configuration does not load the engine). */
  commitRetries?: number;
  /** Who publishes, from `--agent` or SLIVINGDOC_AGENT; absent: derived (engine-deps.ts). */
  agent?: string;
  /** How long compaction keeps history (--history-period, SLIVINGDOC_HISTORY_PERIOD); absent: the engine's 30 days. */
  historyPeriodMs?: number;
  /** The call deadline (--deadline, SLIVINGDOC_DEADLINE): every call, and a CLI process's start with it, answers within this. */
  deadlineMs: number;
}

const MAX_COMMIT_RETRIES = 100;

/**
 * A minute: what an MCP host commonly waits for a tool's answer, and far
 * above a call against a working store (a cold pull of 10,000 files takes
 * seconds, docs/performance.md).
 */
export const DEFAULT_DEADLINE_MS = 60_000;

/**
 * `--commit-retries` when not given. Sixteen writers on one notebook
 * exhausted 10 retries (docs/performance.md, scenario `race`); with jittered
 * backoff capped at 1 s, 30 rarely costs more than a few seconds.
 */
export const DEFAULT_COMMIT_RETRIES = 30;
/** A day: longer would be no deadline, and overflows the timers. */
const MAX_DEADLINE_MS = 86_400_000;

function parseDeadline(flags: ConfigFlags, env: Env): number {
  const raw = nonEmpty(flags.deadline) ?? nonEmpty(env.SLIVINGDOC_DEADLINE);
  if (raw === undefined) return DEFAULT_DEADLINE_MS;
  const ms = parseDuration("deadline", raw);
  if (ms === 0 || ms > MAX_DEADLINE_MS) throw invalid("--deadline must be more than 0 and at most 24h, such as 30s or 5m");
  return ms;
}

function parseRetries(flags: ConfigFlags, env: Env): number | undefined {
  const raw = nonEmpty(flags["commit-retries"]) ?? nonEmpty(env.SLIVINGDOC_COMMIT_RETRIES);
  if (raw === undefined) return undefined;
  if (!/^\d+$/.test(raw) || Number(raw) > MAX_COMMIT_RETRIES) {
    throw invalid(`--commit-retries must be a whole number from 0 to ${MAX_COMMIT_RETRIES}`);
  }
  return Number(raw);
}

function parseAgent(flags: ConfigFlags, env: Env): string | undefined {
  const raw = flags.agent ?? nonEmpty(env.SLIVINGDOC_AGENT);
  if (raw === undefined) return undefined;
  const problem = agentProblem(raw);
  if (problem !== null) {
    throw invalid(`--agent ${problem}; give a name of at most ${AGENT_MAX_BYTES} bytes without control characters, < or >`);
  }
  return raw;
}

export function resolveConfig(flags: ConfigFlags, env: Env, cwd: string): RuntimeConfig {
  const home = nonEmpty(env.HOME) ?? homedir();
  const store = parseStore({ flags, env, cwd, home });
  const commitRetries = parseRetries(flags, env);
  const agent = parseAgent(flags, env);
  const period = nonEmpty(flags["history-period"]) ?? nonEmpty(env.SLIVINGDOC_HISTORY_PERIOD);
  const historyPeriodMs = period === undefined ? undefined : parseDuration("history-period", period);
  const deadlineMs = parseDeadline(flags, env);
  const pathSets = buildPathSets(
    parsePathSet("--read-only-paths", flags["read-only-paths"] ?? env.SLIVINGDOC_READ_ONLY_PATHS),
    parsePathSet("--writable-paths", flags["writable-paths"] ?? env.SLIVINGDOC_WRITABLE_PATHS),
  );
  const stateHome = nonEmpty(env.XDG_STATE_HOME) ?? join(home, ".local", "state");
  const privateRootRaw = nonEmpty(flags["private-root"]) ?? nonEmpty(env.SLIVINGDOC_PRIVATE_ROOT) ?? join(stateHome, "slivingdoc");
  const workspaceRaw = nonEmpty(flags["workspace-root"]) ?? nonEmpty(env.SLIVINGDOC_WORKSPACE_ROOT);
  const privateRoot = realpathLoose(resolve(cwd, privateRootRaw));
  const workspaceRoot = workspaceRaw === undefined ? null : realpathLoose(resolve(cwd, workspaceRaw));
  if (workspaceRoot !== null && (isAtOrBelow(workspaceRoot, privateRoot) || isAtOrBelow(privateRoot, workspaceRoot))) {
    throw invalid("the private root and the workspace root overlap; give them separate directories");
  }
  const storeFile = storeKind(store).file?.(store);
  if (storeFile !== undefined && workspaceRoot !== null && isAtOrBelow(workspaceRoot, storeFile)) {
    throw invalid("the store file is inside the workspace root; keep it outside the notebook");
  }
  return { store, pathSets, privateRoot, workspaceRoot, deadlineMs, ...(commitRetries !== undefined ? { commitRetries } : {}), ...(agent !== undefined ? { agent } : {}),
    ...(historyPeriodMs !== undefined ? { historyPeriodMs } : {}),
  };
}

/**
 * Secrets the process can see, scrubbed from every diagnostic and result as
 * defence in depth (they should never reach one in the first place).
 */
export function runtimeSecrets(env: Env): string[] {
  return STORE_KINDS.flatMap((kind) => kind.secretEnv ?? [])
    .map((name) => env[name])
    .filter((v): v is string => !!v && v.length >= 8);
}
