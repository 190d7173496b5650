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

  get: ObjectStore["get"] = async (key) => (await this.open()).get(key);
  putIfAbsent: ObjectStore["putIfAbsent"] = async (key, body) => (await this.open()).putIfAbsent(key, body);
  putIfMatch: ObjectStore["putIfMatch"] = async (key, body, etag) => (await this.open()).putIfMatch(key, body, etag);
  list: ObjectStore["list"] = async (prefix) => (await this.open()).list(prefix);
  delete: ObjectStore["delete"] = async (key) => (await this.open()).delete(key);

  async close(): Promise<void> {
    const opened = this.opened;
    if (opened === null) return;
    await (await opened.catch(() => null))?.close();
  }
}
