/**
 * The store as `slivingdoc web` reads it: only read, and a store whose
 * local file does not exist (a fresh machine's default store) read as an
 * empty one — no notebook yet — without opening it, which would make the
 * file. Once the file appears (a first `init` or commit), it is read.
 */
import type { ObjectStore } from "../../store/object-store.ts";

export function readOnlyView(store: ObjectStore, absent: () => boolean): ObjectStore {
  const refused = (): never => {
    throw new Error("slivingdoc web only reads the store");
  };
  return {
    kind: store.kind,
    get: async (key, signal) => (absent() ? null : store.get(key, signal)),
    getIfNoneMatch: async (key, etag, signal) => (absent() ? null : store.getIfNoneMatch(key, etag, signal)),
    list: async (prefix, signal) => (absent() ? [] : store.list(prefix, signal)),
    putIfAbsent: async () => refused(),
    putIfMatch: async () => refused(),
    delete: async () => refused(),
    close: () => store.close(),
  };
}
