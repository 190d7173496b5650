/**
 * Fault injection around a real store (never a replacement): each operation
 * can be made to fail before it takes effect, or to take effect and then
 * lose its response, by a rule the test sets.
 */
import { type ObjectStore, StoreError, type StoreOperation } from "../../src/store/object-store.ts";

/**
 * fail-before: a definite failure, nothing happened.
 * drop-request: nothing happened, but the caller cannot know (a timeout).
 * lose-response: it happened, and the caller cannot know.
 * lose-race: the precondition is reported as failed.
 */
export type Fault = "fail-before" | "drop-request" | "lose-response" | "lose-race";
export type FaultRule = (operation: StoreOperation, key: string) => Fault | null;

export function faultyStore(inner: ObjectStore, rule: FaultRule): ObjectStore & { injected: number } {
  const wrapper = {
    kind: `faulty(${inner.kind})`,
    injected: 0,
    async get(key: string) {
      if (rule("get", key) === "fail-before") {
        wrapper.injected++;
        throw new StoreError("get", "injected failure");
      }
      return inner.get(key);
    },
    async putIfAbsent(key: string, body: Uint8Array) {
      const fault = rule("putIfAbsent", key);
      if (fault) wrapper.injected++;
      if (fault === "fail-before") throw new StoreError("putIfAbsent", "injected failure");
      if (fault === "drop-request") throw new StoreError("putIfAbsent", "injected timeout", "unknown");
      if (fault === "lose-race") return { ok: false as const };
      const result = await inner.putIfAbsent(key, body);
      if (fault === "lose-response") throw new StoreError("putIfAbsent", "injected lost response", "unknown");
      return result;
    },
    async putIfMatch(key: string, body: Uint8Array, etag: string) {
      const fault = rule("putIfMatch", key);
      if (fault) wrapper.injected++;
      if (fault === "fail-before") throw new StoreError("putIfMatch", "injected failure");
      if (fault === "drop-request") throw new StoreError("putIfMatch", "injected timeout", "unknown");
      if (fault === "lose-race") return { ok: false as const };
      const result = await inner.putIfMatch(key, body, etag);
      if (fault === "lose-response") throw new StoreError("putIfMatch", "injected lost response", "unknown");
      return result;
    },
    list: (prefix: string) => inner.list(prefix),
    delete: (key: string) => inner.delete(key),
    close: () => inner.close(),
  };
  return wrapper;
}
