/**
 * An operation on a checkout, at the engine's root: open (the lock, the
 * recovery of what a dead call left, and the settling of its publication),
 * run, close. pull, commit and restore are each their `run`.
 */
import { DEFAULT_AGENT } from "../contract/agent.ts";
import { NO_PATH_SETS } from "../contract/results.ts";
import { MissingObjectError } from "./git/objects.ts";
import { type CheckoutSession, closeSession, localFailure, openSession } from "./checkout/session.ts";
import { privateStateMissing } from "./checkout/session-baseline.ts";
import type { EngineDeps } from "./engine.ts";
import { settlePublication } from "./publish/publication.ts";

/** An operation's deps, its defaults filled in. */
export type OperationSessionDeps = EngineDeps & Required<Pick<EngineDeps, "pathSets" | "compaction" | "guessCurrent" | "meetAtOnce" | "agent">>;

/** One operation's open checkout: the checkout's session, its deps the operation's. */
export type OpenCheckout = CheckoutSession<OperationSessionDeps>;

/** How an operation uses its checkout. */
export interface CheckoutUse {
  /**
   * Make the directory when missing, and rebuild a damaged state: a pull.
   * Every other operation asks for that pull when the private cache lost an
   * object (privateStateMissing); a pull repairs it itself.
   */
  create: boolean;
  /**
   * The operation attaches the checkout to the store as it is (pull.ts), so
   * a publication recorded against a store that went backwards is settled
   * as not landed rather than refused.
   */
  attach?: boolean;
}

/**
 * Run `run` on the checkout at `path`, opened for it and closed after it;
 * what it throws is answered as an operation answers a local failure
 * (localFailure), and a lost object as privateStateMissing (see `create`).
 */
export async function withCheckout<T>(deps: EngineDeps, path: string, use: CheckoutUse, run: (checkout: OpenCheckout) => Promise<T>): Promise<T> {
  const checkout = await openCheckout(deps, path, use);
  try {
    return await run(checkout);
  } catch (e) {
    if (!use.create && e instanceof MissingObjectError) throw privateStateMissing(e);
    throw localFailure(checkout, e);
  } finally {
    closeSession(checkout);
  }
}

/** Open the checkout's session, settling a publication a dead call recorded (publish/publication.ts) before its journal goes. */
function openCheckout(deps: EngineDeps, path: string, use: CheckoutUse): Promise<OpenCheckout> {
  const full: OperationSessionDeps = { pathSets: NO_PATH_SETS, compaction: {}, guessCurrent: true, meetAtOnce: true, agent: () => DEFAULT_AGENT, ...deps };
  const settle = async (state: OpenCheckout["state"], overrides: Parameters<typeof settlePublication>[3]) => {
    await settlePublication(state, full.store, full.randomId, overrides, use.attach === true);
  };
  return openSession(full, path, { create: use.create, settle });
}
