/**
 * The call deadline (docs/glossary.md): the time by which a call answers,
 * whatever the store does. An endpoint that stops answering would
 * otherwise hold a call — and the checkout's lock with it — for as long as
 * its requests' own timeouts and retries add up to, minutes.
 *
 * `boundedStore` puts every request of one call under it: a request not
 * answered by then ends (its signal aborts it, and the S3 store closes its
 * connection, so nothing keeps a CLI process alive), and nothing is sent
 * after it. The engine bounds its own waits — the checkout's lock, the
 * retries — by the same deadline (engine/checkout/deps.ts
 * CheckoutDeps.deadline), with `deadlinePassed` and `sleepWithin` below.
 */
import { type ObjectStore, StoreError, type StoreOperation } from "./object-store.ts";

export interface Deadline {
  /** Its length, as configured: what messages name. */
  readonly ms: number;
  /** Milliseconds left; 0 once it has passed. */
  remaining(): number;
  /** Aborted once it has passed. */
  readonly signal: AbortSignal;
}

/** A deadline `ms` from now. Its timer does not keep a process alive. */
export function deadlineIn(ms: number): Deadline {
  const at = performance.now() + ms;
  return { ms, remaining: () => Math.max(0, at - performance.now()), signal: AbortSignal.timeout(ms) };
}

/** A request the deadline ended, or one it kept from being sent. */
export class DeadlinePassed extends StoreError {
  constructor(
    kind: string,
    operation: StoreOperation,
    outcome: "failed" | "unknown",
    readonly deadlineMs: number,
  ) {
    super(operation, `${kind} ${operation}: no answer within the call deadline${outcome === "unknown" ? "; the write may have landed" : ""}`, outcome);
  }
}

/** A deadline's length in words: "60 s", "1.5 s", "500 ms". */
export function deadlineText(ms: number): string {
  return ms < 1000 ? `${ms} ms` : `${Math.round(ms / 100) / 10} s`;
}

const passed = (deadline: Deadline) => deadline.signal.aborted || deadline.remaining() === 0;

/**
 * `store` with every request bounded by `deadline`. A request the deadline
 * ends fails as DeadlinePassed: "unknown" for a write already sent (the
 * engine proves it, as for any lost answer), "failed" for a read, and for
 * any request once the deadline has passed, which is not sent at all. The
 * embedded store's writer queue gives up a wait for its turn at the
 * deadline, and so does its wait for another process's write lock on the
 * store file (sqlite.ts `run`); its other work, local and synchronous, is
 * not bounded.
 */
export function boundedStore(store: ObjectStore, deadline: Deadline): ObjectStore {
  const bound = <T>(operation: StoreOperation, writes: boolean, request: (signal: AbortSignal) => Promise<T>): Promise<T> => {
    if (passed(deadline)) return Promise.reject(new DeadlinePassed(store.kind, operation, "failed", deadline.ms));
    const { signal } = deadline;
    return new Promise<T>((resolve, reject) => {
      // Settles the call at the deadline even where a store does not listen to the signal.
      const expire = () => reject(new DeadlinePassed(store.kind, operation, writes ? "unknown" : "failed", deadline.ms));
      signal.addEventListener("abort", expire, { once: true });
      request(signal)
        .then(resolve, reject)
        .finally(() => signal.removeEventListener("abort", expire));
    });
  };
  const { queue, putWith } = store;
  return {
    kind: store.kind,
    get: (key) => bound("get", false, (signal) => store.get(key, signal)),
    getIfNoneMatch: (key, etag) => bound("get", false, (signal) => store.getIfNoneMatch(key, etag, signal)),
    putIfAbsent: (key, body) => bound("putIfAbsent", true, (signal) => store.putIfAbsent(key, body, signal)),
    putIfMatch: (key, body, etag) => bound("putIfMatch", true, (signal) => store.putIfMatch(key, body, etag, signal)),
    list: (prefix) => bound("list", false, (signal) => store.list(prefix, signal)),
    delete: (key) => bound("delete", true, (signal) => store.delete(key, signal)),
    // A view: the store is its owner's to close.
    close: async () => {},
    ...(store.lastAnswer ? { lastAnswer: () => store.lastAnswer!() } : {}),
    ...(queue ? { queue: { enter: (whileWaiting, signal, placed) => queue.enter(whileWaiting, signal ? AbortSignal.any([deadline.signal, signal]) : deadline.signal, placed) } } : {}),
    ...(putWith
      ? {
          // Not sent when the deadline ends it (object-store.ts `putWith`): a definite failure.
          putWith: (creates, key, body, etag, committed) =>
            bound("putIfMatch", false, (signal) => putWith.call(store, creates, key, body, etag, committed, signal)),
        }
      : {}),
  };
}

/** Whether the call's deadline, when it has one, has passed: no more retries, no more waiting. */
export function deadlinePassed(call: { deadline?: Deadline }): boolean {
  return call.deadline !== undefined && call.deadline.remaining() === 0;
}

/** A wait of `ms` that ends by the call's deadline at the latest. */
export function sleepWithin(call: { deadline?: Deadline; sleep: (ms: number) => Promise<void> }, ms: number): Promise<void> {
  return call.sleep(Math.min(ms, call.deadline?.remaining() ?? Infinity));
}
