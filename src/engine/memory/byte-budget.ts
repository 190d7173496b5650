/**
 * Bytes in flight, bounded: how many packs a pull downloads at once
 * (publish/accepted-state.ts fetchPacks), each whole in memory while it is
 * checked and imported.
 */

/** Bytes in flight, bounded: one taker at a time may exceed the bound, when it is alone. */
export class ByteBudget {
  private used = 0;
  private waiting: Array<() => void> = [];
  constructor(private readonly bound: number) {}

  async take(bytes: number): Promise<void> {
    while (this.used > 0 && this.used + bytes > this.bound) await new Promise<void>((resolve) => this.waiting.push(resolve));
    this.used += bytes;
  }

  give(bytes: number): void {
    this.used -= bytes;
    for (const wake of this.waiting.splice(0)) wake();
  }
}
