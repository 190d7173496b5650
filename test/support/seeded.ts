/** Small shared helpers for seeded, differential tests against C git. */

/** A tiny seeded PRNG (mulberry32): the same seed gives the same cases, so a failure can be replayed. */
export function mulberry32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/**
 * An environment that shuts out the machine's git configuration, so a
 * user's `merge.conflictStyle` or `diff.algorithm` cannot change what C git
 * prints and the comparison stays honest.
 */
export function isolatedGitEnv(home: string): Record<string, string> {
  return {
    PATH: process.env.PATH ?? "/usr/bin:/bin",
    HOME: home,
    GIT_CONFIG_NOSYSTEM: "1",
    GIT_CONFIG_GLOBAL: "/dev/null",
    GIT_CEILING_DIRECTORIES: home,
    LC_ALL: "C",
  };
}

/** Seeded choices for generators: whole numbers, coin flips, picks. */
export class Choices {
  constructor(readonly rnd: () => number) {}

  int(n: number): number {
    return Math.floor(this.rnd() * n);
  }
  chance(p: number): boolean {
    return this.rnd() < p;
  }
  pick<T>(xs: readonly T[]): T {
    return xs[this.int(xs.length)]!;
  }
}
