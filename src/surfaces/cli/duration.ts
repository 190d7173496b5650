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

const DATE = /^\d{4}-\d{2}-\d{2}(T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:\d{2})?)?$/;

/**
 * `--since`: a duration back from `now` (90s, 30m, 1h, 2d) or a date
 * (`2026-11-30`, midnight UTC; `2026-11-30T14:00Z`; without a zone, UTC).
 * Milliseconds since the epoch, or the start-up refusal.
 */
export function parseSince(flag: string, value: string, now: number): number {
  if (DURATION.test(value)) return now - parseDuration(flag, value);
  if (DATE.test(value)) {
    const zoned = value.length === 10 ? `${value}T00:00:00Z` : /(Z|[+-]\d{2}:\d{2})$/.test(value) ? value : `${value}Z`;
    const ms = Date.parse(zoned);
    if (!Number.isNaN(ms)) return ms;
  }
  throw new StartupRefusal("invalid configuration", `--${flag} must be a duration such as 30m or 2d, or a date such as 2026-11-30 or 2026-11-30T14:00Z`);
}
