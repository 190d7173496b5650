/** Durations on the command line: 500ms, 90s, 30m, 1h, 2d; a bare number is seconds. */
import { StartupRefusal } from "../../contract/startup.ts";

const DURATION = /^(\d+)(ms|s|m|h|d)?$/;
const UNIT_MS: Record<string, number> = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/** Milliseconds, or the start-up refusal that names the flag. */
export function parseDuration(flag: string, value: string): number {
  const match = DURATION.exec(value);
  if (match === null) throw new StartupRefusal("invalid configuration", `--${flag} must be a duration such as 90s, 30m, 1h or 2d`);
  return Number(match[1]) * UNIT_MS[match[2] ?? "s"]!;
}
