/**
 * Fault injection around a real store (never a replacement): each operation
 * can be made to fail before it takes effect, or to take effect and then
 * lose its response, by a rule the test sets.
 */
import { type ConditionalRead, type ConditionalWrite, type ObjectStore, StoreError, type StoreOperation, type StoredObject } from "../../src/store/object-store.ts";

/**
 * fail-before: a definite failure, nothing happened.
 * drop-request: nothing happened, but the caller cannot know (a timeout).
 * lose-response: it happened, and the caller cannot know.
 * lose-race: the precondition is reported as failed.
 * delay: it happens, late (`delayMs`): a slow network or a stalled server.
 * answer-500: the server answered 5xx without doing anything. On a write the
 *   caller cannot know that (S3 reports a 5xx after the body was sent as an
 *   unknown outcome, see src/store/s3.ts); on a read it is a plain failure.
 * answer-409: a conditional write answered 409 ConditionalRequestConflict,
 *   which the S3 store maps to a lost precondition; nothing happened. On a
 *   read it is a plain failure.
 * corrupt-read: a get whose body comes back with bytes flipped (a bad disk,
 *   a broken proxy); the stored object is untouched.
 * hang: a store that stopped answering: the operation never takes effect
 *   and never answers, until its signal aborts it (the call deadline,
 *   src/store/deadline.ts). Unlike the other faults it applies to list and
 *   delete too, so that the whole store can hang.
 */
export type Fault =
  | "fail-before"
  | "drop-request"
  | "lose-response"
  | "lose-race"
  | "delay"
  | "answer-500"
  | "answer-409"
  | "corrupt-read"
  | "hang";
export type FaultRule = (operation: StoreOperation, key: string) => Fault | null;

export interface FaultOptions {
  /** How long a "delay" fault holds the operation (default 50 ms). */
  delayMs?: number;
  /**
   * The message of each injected StoreError; the default names the fault
   * ("injected failure", …). Secrets tests put secret-shaped text here.
   */
  message?: (operation: StoreOperation, fault: Fault) => string;
  /** The `cause` of each injected StoreError (default: none). */
  cause?: (operation: StoreOperation, fault: Fault) => unknown;
  /** How "corrupt-read" damages a body (default: invert every bit of the middle byte). */
  corrupt?: (body: Uint8Array) => Uint8Array;
}

const DEFAULT_MESSAGES: Partial<Record<Fault, string>> = {
  "fail-before": "injected failure",
  "drop-request": "injected timeout",
  "lose-response": "injected lost response",
  "answer-500": "injected 500",
  "answer-409": "injected 409",
};

/** Inverting a whole byte makes a JSON manifest invalid UTF-8 and changes a pack's digest: always detectable. */
function flipMiddleByte(body: Uint8Array): Uint8Array {
  const copy = new Uint8Array(body);
  if (copy.length > 0) copy[copy.length >> 1]! ^= 0xff;
  return copy;
}

/** What a hung operation does: wait for its signal, then fail as an aborted request does. */
function hang(operation: StoreOperation, signal: AbortSignal | undefined): Promise<never> {
  return new Promise((_, reject) => {
    const aborted = () => reject(new StoreError(operation, "injected hang, aborted", operation === "get" || operation === "list" ? "failed" : "unknown"));
    if (signal?.aborted) aborted();
    else signal?.addEventListener("abort", aborted, { once: true });
  });
}

export function faultyStore(inner: ObjectStore, rule: FaultRule, options: FaultOptions = {}): ObjectStore & { injected: number } {
  const delayMs = options.delayMs ?? 50;
  const corrupt = options.corrupt ?? flipMiddleByte;
  const fail = (operation: StoreOperation, fault: Fault, outcome: "failed" | "unknown" = "failed") => {
    const message = options.message?.(operation, fault) ?? DEFAULT_MESSAGES[fault] ?? `injected ${fault}`;
    const cause = options.cause?.(operation, fault);
    return new StoreError(operation, message, outcome, cause === undefined ? undefined : { cause });
  };

  async function conditional(
    operation: "putIfAbsent" | "putIfMatch",
    key: string,
    write: () => Promise<ConditionalWrite>,
    signal: AbortSignal | undefined,
  ): Promise<ConditionalWrite> {
    const asked = rule(operation, key);
    if (asked === "hang") {
      wrapper.injected++;
      return hang(operation, signal);
    }
    // Corruption is a read fault; a write passes through untouched and uncounted.
    const fault = asked === "corrupt-read" ? null : asked;
    if (fault) wrapper.injected++;
    if (fault === "fail-before") throw fail(operation, fault);
    if (fault === "drop-request") throw fail(operation, fault, "unknown");
    if (fault === "lose-race") return { ok: false as const };
    if (fault === "answer-500") throw fail(operation, fault, "unknown");
    if (fault === "answer-409") return { ok: false as const };
    if (fault === "delay") await Bun.sleep(delayMs);
    const result = await write();
    if (fault === "lose-response") throw fail(operation, fault, "unknown");
    return result;
  }

  /** Only a hang stops list and delete: the other faults pass them through, as they always did. */
  const hangs = (operation: "list" | "delete", key: string): boolean => {
    if (rule(operation, key) !== "hang") return false;
    wrapper.injected++;
    return true;
  };

  /** A read (get, or a conditional one): the rule asked as for a get. */
  async function read<T extends ConditionalRead>(key: string, signal: AbortSignal | undefined, request: () => Promise<T>): Promise<T> {
    const fault = rule("get", key);
    if (fault === "hang") {
      wrapper.injected++;
      return hang("get", signal);
    }
    if (fault === "fail-before") {
      wrapper.injected++;
      throw fail("get", fault);
    }
    // The other write faults mean nothing for a read and pass through, as before.
    if (fault === "answer-500" || fault === "answer-409") {
      wrapper.injected++;
      throw fail("get", fault);
    }
    if (fault === "delay") {
      wrapper.injected++;
      await Bun.sleep(delayMs);
    }
    const object = await request();
    if (fault === "corrupt-read" && object !== null && object !== "unchanged") {
      wrapper.injected++;
      return { body: corrupt(object.body), etag: object.etag } as T;
    }
    return object;
  }

  const wrapper = {
    kind: `faulty(${inner.kind})`,
    injected: 0,
    get: (key: string, signal?: AbortSignal): Promise<StoredObject | null> => read(key, signal, () => inner.get(key, signal)),
    // A conditional read is a get to the rule, and takes the same faults.
    getIfNoneMatch: (key: string, etag: string, signal?: AbortSignal): Promise<ConditionalRead> =>
      read(key, signal, () => inner.getIfNoneMatch(key, etag, signal)),
    putIfAbsent(key: string, body: Uint8Array, signal?: AbortSignal) {
      return conditional("putIfAbsent", key, () => inner.putIfAbsent(key, body, signal), signal);
    },
    putIfMatch(key: string, body: Uint8Array, etag: string, signal?: AbortSignal) {
      return conditional("putIfMatch", key, () => inner.putIfMatch(key, body, etag, signal), signal);
    },
    list: (prefix: string, signal?: AbortSignal) => (hangs("list", prefix) ? hang("list", signal) : inner.list(prefix, signal)),
    delete: (key: string, signal?: AbortSignal) => (hangs("delete", key) ? hang("delete", signal) : inner.delete(key, signal)),
    close: () => inner.close(),
  };
  return wrapper;
}
