/**
 * The baseline's files, as a session reads them from its object cache, and
 * what an operation answers when the private cache lost them.
 */
import { DomainError } from "../../contract/errors.ts";
import { ENGINE_DETAILS } from "../../contract/tokens.ts";
import type { FlatTree } from "../git/object-cache.ts";
import { MissingObjectError } from "../git/objects.ts";
import type { CheckoutSession } from "./session.ts";

/** The baseline's files, or none when they are missing from the cache (a pull fetches them, and then knows what is held: engine/pull.ts). */
export async function baselineOrNothing(session: CheckoutSession): Promise<FlatTree> {
  try {
    return await baselineFiles(session);
  } catch (e) {
    if (e instanceof BaselineMissing) return new Map();
    throw e;
  }
}

/** The baseline's files; an absent baseline (never pulled) is the empty tree. */
export async function baselineFiles(session: CheckoutSession): Promise<FlatTree> {
  const b = session.baseline;
  if (b === null || b.tree === null) return new Map();
  try {
    return (await session.git.readFlatTree(b.tree)).files;
  } catch (cause) {
    if (cause instanceof MissingObjectError) throw new BaselineMissing(cause);
    throw cause;
  }
}

/**
 * The baseline's files, for an operation that cannot repair a lost baseline
 * itself (only a pull downloads it again): ENGINE_FAILED, asking for a pull.
 */
export async function baselineFilesOrRefuse(session: CheckoutSession): Promise<FlatTree> {
  try {
    return await baselineFiles(session);
  } catch (e) {
    if (!(e instanceof BaselineMissing)) throw e;
    throw privateStateMissing(e);
  }
}

/** The baseline's objects are gone from the private cache. */
export class BaselineMissing extends Error {
  override readonly name = "BaselineMissing";
  constructor(cause: unknown) {
    super("baseline objects missing", { cause });
  }
}

/**
 * What an operation answers when the checkout's private cache lost an
 * object (`cause`: a BaselineMissing or a MissingObjectError): ENGINE_FAILED,
 * with the detail that a pull repairs it.
 */
export function privateStateMissing(cause: unknown): DomainError {
  const message =
    cause instanceof BaselineMissing
      ? "The baseline of this checkout is missing from the private cache."
      : "Part of this checkout's private state is missing or unreadable.";
  return new DomainError("ENGINE_FAILED", message, { detail: ENGINE_DETAILS.stateMissingLocally(), cause });
}
