import type { ObjectStore } from "../store/object-store.ts";

/** A store opened on its first use; `open()` opens it ahead of that (serve does, once the handshake is answered). */
export class DeferredStore implements ObjectStore {
  private opened: Promise<ObjectStore> | null = null;

  constructor(
    readonly kind: string,
    private readonly openNow: () => Promise<ObjectStore>,
  ) {}

  open(): Promise<ObjectStore> {
    this.opened ??= this.openNow();
    return this.opened;
  }

  get: ObjectStore["get"] = async (key, signal) => (await this.open()).get(key, signal);
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
