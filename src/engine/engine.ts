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
import type { PublishSettings } from "./publish/publisher.ts";

/**
 * What the operations at the engine's root need besides the parts' ports:
 * the store, the whole process memory and the path sets.
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
}

/**
 * Every engine operation takes these, then its input: `op(deps, input)`.
 * Time and chance (`now`, `monotonic`, `sleep`, `random`, `randomId`:
 * contract/clock.ts) are the surfaces' to make (surfaces/engine-deps.ts);
 * the engine reads no clock or random source of its own.
 */
export type EngineDeps = CheckoutDeps & PublishSettings & OperationDeps;

/** Before the process ends: write out what only its memory holds (stat caches). */
export function flushProcessMemory(memory: ProcessMemory): void {
  memory.flush();
}
