/**
 * Time and chance, as the engine is given them: the surfaces make the
 * system's (surfaces/engine-deps.ts) and pass them in EngineDeps, and each
 * part of the engine takes what it needs from its caller. The engine reads
 * no clock, timer or random source of its own (test/contract/layers.test.ts),
 * so a test can set any of them, and what a call does follows from what it
 * was given.
 */
export interface Clock {
  /** The wall clock: the times commits record, and what the times of files, locks and stored objects are compared with. */
  now: () => Date;
  /** Milliseconds from an arbitrary start, never going back (performance.now): how long something took. */
  monotonic: () => number;
  /** A wait of `ms` milliseconds. */
  sleep: (ms: number) => Promise<void>;
}

export interface RandomSource {
  /** A number in [0, 1) (Math.random): how long a wait is spread. */
  random: () => number;
  /** `bytes` random bytes as lowercase hex (random-hex.ts): unique names for temporary files, publications and nonces. */
  randomId: (bytes: number) => string;
}

/** What writing private files takes of them: the wall clock file times are compared with, and names for temporary files. */
export type FileClock = Pick<Clock, "now"> & Pick<RandomSource, "randomId">;
