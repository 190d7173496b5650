/**
 * Maps bounded to their most recently used entries, the form of the
 * process memory (docs/performance.md, "The process memory").
 */

/**
 * Put `key` last (most recently used) in `map`, then drop the least recent
 * entries beyond `bound`. `release` is asked before each drop: it does the
 * clean-up and returns false for an entry that must stay (still in use).
 */
export function setRecent<K, V>(map: Map<K, V>, key: K, value: V, bound: number, release: (key: K, value: V) => boolean = () => true): void {
  map.delete(key);
  map.set(key, value);
  for (const [oldKey, oldValue] of map) {
    if (map.size <= bound) break;
    if (release(oldKey, oldValue)) map.delete(oldKey);
  }
}

/** A map that keeps its `bound` most recently set entries (setRecent), with `release` asked before each drop. */
export class RecentMap<K, V> {
  private readonly map = new Map<K, V>();

  constructor(
    private readonly bound: number,
    private readonly release: (key: K, value: V) => boolean = () => true,
  ) {}

  get(key: K): V | undefined {
    return this.map.get(key);
  }

  /** Set `key` and make it the most recent. */
  set(key: K, value: V): void {
    setRecent(this.map, key, value, this.bound, this.release);
  }

  delete(key: K): void {
    this.map.delete(key);
  }

  /** Drop every entry whose key matches (no release asked). */
  deleteWhere(test: (key: K) => boolean): void {
    for (const key of [...this.map.keys()]) if (test(key)) this.map.delete(key);
  }

  entries(): IterableIterator<[K, V]> {
    return this.map.entries();
  }
}
