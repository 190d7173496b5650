import type { Clock } from "../contract/clock.ts";

/** The system's clocks and sleep, as the engine and the stores are given them. */
export const SYSTEM_CLOCK: Clock = {
  now: () => new Date(),
  monotonic: () => performance.now(),
  sleep: (ms) => Bun.sleep(ms),
};
