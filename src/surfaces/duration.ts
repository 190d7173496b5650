/** Durations as flags and settings give them: 500ms, 90s, 30m, 1h, 2d; a bare number is seconds. */
import { StartupRefusal } from "../contract/startup.ts";

const DURATION = /^(\d+)(ms|s|m|h|d)?$/;
const UNIT_MS: Record<string, number> = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 };
const DAY_MS = UNIT_MS.d!;

/** Milliseconds of a duration (possibly past what a number holds exactly), or null when `value` is not one. */
function durationMs(value: string): number | null {
  const match = DURATION.exec(value);
  return match === null ? null : Number(match[1]) * UNIT_MS[match[2] ?? "s"]!;
}

/** Milliseconds, or the start-up refusal that names the flag. */
export function parseDuration(flag: string, value: string): number {
  const ms = durationMs(value);
  if (ms === null) throw new StartupRefusal("invalid configuration", `--${flag} must be a duration such as 90s, 30m, 1h or 2d`);
  // Past this the milliseconds are no longer exact, and no input field takes them.
  if (!Number.isSafeInteger(ms)) {
    throw new StartupRefusal("invalid configuration", `--${flag} must be a duration of at most ${Math.floor(Number.MAX_SAFE_INTEGER / DAY_MS)}d; got ${value.slice(0, 40)}`);
  }
  return ms;
}

const DATE = /^\d{4}-\d{2}-\d{2}(T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:\d{2})?)?$/;

/**
 * `--since`: a duration back from `now` (90s, 30m, 1h, 2d) or a date
 * (`2026-11-30`, midnight UTC; `2026-11-30T14:00Z`; without a zone, UTC),
 * from 1970-01-01 on (the times a commit records start there).
 * Milliseconds since the epoch, or the argument refusal that says what it
 * takes.
 */
export function parseSince(flag: string, value: string, now: number): number {
  const shown = value.slice(0, 40);
  let ms = Number.NaN;
  const back = durationMs(value);
  if (back !== null) ms = now - back;
  else if (DATE.test(value)) ms = Date.parse(value.length === 10 ? `${value}T00:00:00Z` : /(Z|[+-]\d{2}:\d{2})$/.test(value) ? value : `${value}Z`);
  else {
    throw new StartupRefusal("argument refusal", `--${flag} must be a duration such as 30m or 2d, or a date such as 2026-11-30 or 2026-11-30T14:00Z; got ${shown}`);
  }
  if (Number.isNaN(ms)) throw new StartupRefusal("argument refusal", `--${flag} ${shown} is not a date of the calendar; give one such as 2026-11-30 or 2026-11-30T14:00Z`);
  if (ms < 0) {
    throw new StartupRefusal(
      "argument refusal",
      `--${flag} ${shown} reaches back before 1970-01-01; give a duration of at most ${Math.floor(now / DAY_MS)}d, or a date from 1970-01-01 on`,
    );
  }
  return ms;
}

/** A duration for a person to read: "0.4 s", "12 s", "3 min". */
export function seconds(ms: number): string {
  if (ms < 10_000) return `${Math.round(ms / 100) / 10} s`;
  if (ms < 120_000) return `${Math.round(ms / 1000)} s`;
  return `${Math.round(ms / 60_000)} min`;
}
