import { type ObjectStore, type StoreCapabilities, StoreError, type WriterQueue } from "../store/object-store.ts";

/**
 * A store opened on its first use; `open()` opens it ahead of that (serve
 * does, once the handshake is answered). It offers what its kind declares
 * (`capabilities`, from the registry entry), as the store it opens does.
 */
export class DeferredStore implements ObjectStore {
  private opened: Promise<ObjectStore> | null = null;
  readonly queue?: WriterQueue;
  readonly putWith?: ObjectStore["putWith"];

  constructor(
    readonly kind: string,
    capabilities: StoreCapabilities,
    private readonly openNow: () => Promise<ObjectStore>,
  ) {
    if (capabilities.queue) {
      this.queue = {
        enter: async (whileWaiting, signal, placed) => {
          const queue = (await this.open()).queue;
          // A store that could not set its queue up: the caller goes without a turn, as it would with that store.
          if (queue === undefined) throw new StoreError("open", "the store's writer queue could not be opened");
          return queue.enter(whileWaiting, signal, placed);
        },
      };
    }
    if (capabilities.putWith) {
      this.putWith = async (creates, key, body, etag, committed) => {
        const store = await this.open();
        if (store.putWith === undefined) throw new Error(`a ${this.kind} store declares putWith but has none`);
        return store.putWith(creates, key, body, etag, committed);
      };
    }
  }

  open(): Promise<ObjectStore> {
    this.opened ??= this.openNow();
    return this.opened;
  }

  get: ObjectStore["get"] = async (key, signal) => (await this.open()).get(key, signal);
  getIfNoneMatch: ObjectStore["getIfNoneMatch"] = async (key, etag, signal) => (await this.open()).getIfNoneMatch(key, etag, signal);
  putIfAbsent: ObjectStore["putIfAbsent"] = async (key, body, signal) => (await this.open()).putIfAbsent(key, body, signal);
  putIfMatch: ObjectStore["putIfMatch"] = async (key, body, etag, signal) => (await this.open()).putIfMatch(key, body, etag, signal);
  list: ObjectStore["list"] = async (prefix, signal) => (await this.open()).list(prefix, signal);
  delete: ObjectStore["delete"] = async (key, signal) => (await this.open()).delete(key, signal);

  async close(): Promise<void> {
    const opened = this.opened;
    if (opened === null) return;
    await (await opened.catch(() => null))?.close();
  }
}
