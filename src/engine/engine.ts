/**
 * What every operation needs, injected (no globals): each part of the
 * engine declares its own port in its folder, and EngineDeps is those
 * ports together. The surfaces make it (surfaces/engine-deps.ts), the
 * composition root; an operation hands each part only its port.
 */
import type { PathSets } from "../contract/results.ts";
import type { ObjectStore } from "../store/object-store.ts";
import type { CheckoutDeps } from "./checkout/deps.ts";
import type { ProcessMemory } from "./process-memory.ts";
import type { CompactionPolicy } from "./publish/compact.ts";

/**
 * What the operations at the engine's root need besides the checkout's
 * port: the store, the whole process memory, the path sets, and what
 * publishing reads. Publishing's fields (from `commitRetries` down) are
 * where publish/'s own port belongs, declared in publish/ beside the
 * runner's Publisher (publish/publisher.ts) and joined in EngineDeps below
 * in their place; until then the commit's runner reads them here.
 */
export interface OperationDeps {
  store: ObjectStore;
  /**
   * The process memory (process-memory.ts): one per process, shared by
   * all its calls; a fresh one is a fresh world. Each part takes its own
   * part of it.
   */
  memory: ProcessMemory;
  /** The paths this process may not change (none by default). */
  pathSets?: PathSets;
  /** How many times a commit that lost the race re-merges and tries again. */
  commitRetries: number;
  /**
   * Whether a commit from a checkout at the state this process last saw may
   * publish without reading `current` first (publish-commit.ts). Default
   * true; fault tests aimed at that read turn it off.
   */
  guessCurrent?: boolean;
  /** When a commit compacts the pack list (publish/compact.ts); false never does (tests of compaction itself). */
  compaction?: Partial<CompactionPolicy> | false;
  /**
   * Who publishes: the name each commit records as its author and committer
   * (contract/agent.ts), read when a commit is built — `serve` knows its
   * client only after the handshake. Default "slivingdoc".
   */
  agent?: () => string;
}

/**
 * Every engine operation takes these, then its input: `op(deps, input)`.
 * Time and chance (`now`, `monotonic`, `sleep`, `random`, `randomId`:
 * contract/clock.ts) are the surfaces' to make (surfaces/engine-deps.ts);
 * the engine reads no clock or random source of its own.
 */
export type EngineDeps = CheckoutDeps & OperationDeps;

// Sixteen writers on one notebook exhausted 10 retries (docs/performance.md, scenario `race`);
// with jittered backoff capped at 1 s, 30 rarely costs more than a few seconds.
export const DEFAULT_COMMIT_RETRIES = 30;

/** Before the process ends: write out what only its memory holds (stat caches). */
export function flushProcessMemory(memory: ProcessMemory): void {
  memory.flush();
}
