/**
 * Packs downloaded ahead of the call that needs them (engine/fetch-ahead.ts),
 * held in the process memory until that call takes them or an idle look
 * imports them, by the name they were published under: the SHA-256 of
 * their bytes, checked when they were downloaded, so the same name is the
 * same bytes for every checkout. Bounded by bytes, the oldest dropped first:
 * a dropped pack is only downloaded again.
 */
export class HeldPacks {
  private readonly held = new Map<string, { bytes: Uint8Array; at: number }>();
  private total = 0;

  constructor(private readonly bound: number) {}

  has(name: string): boolean {
    return this.held.has(name);
  }

  /** Hold `bytes` as pack `name`, downloaded at `at` (the monotonic clock's ms). */
  hold(name: string, bytes: Uint8Array, at: number): void {
    if (this.held.has(name) || bytes.byteLength > this.bound) return;
    this.held.set(name, { bytes, at });
    this.total += bytes.byteLength;
    for (const [oldest, { bytes: old }] of this.held) {
      if (this.total <= this.bound) break;
      this.held.delete(oldest);
      this.total -= old.byteLength;
    }
  }

  /** The bytes of pack `name`, no longer held; null when not held. */
  take(name: string): Uint8Array | null {
    const found = this.held.get(name);
    if (found === undefined) return null;
    this.held.delete(name);
    this.total -= found.bytes.byteLength;
    return found.bytes;
  }

  /** When pack `name` was downloaded (monotonic ms), if it is held. */
  heldSince(name: string): number | null {
    return this.held.get(name)?.at ?? null;
  }
}
