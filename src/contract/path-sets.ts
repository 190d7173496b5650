/**
 * Path sets (--read-only-paths, --writable-paths): per-process protection of
 * parts of the notebook. Entries are notebook-relative slash paths, each
 * naming a file or a directory and everything below it. Parsing refuses
 * what cannot be meant (absolute paths, `..` or `.git` segments, entries
 * over the bound) and one path named by both settings.
 */
import type { PathSets } from "./results.ts";
import { StartupRefusal } from "./startup.ts";

export const PATH_SET_ENTRY_MAX_BYTES = 4_096;

function invalidEntry(setting: string, entry: string, why: string): StartupRefusal {
  const shown = entry.length > 80 ? `${entry.slice(0, 80)}…` : entry;
  return new StartupRefusal("invalid path-set entry", `${setting} entry "${shown}" ${why}`);
}

/** Normalise one entry: `./a//b/` → `a/b`. */
function normalizeEntry(setting: string, raw: string): string {
  const entry = raw.trim();
  if (Buffer.byteLength(entry, "utf8") > PATH_SET_ENTRY_MAX_BYTES) {
    throw invalidEntry(setting, entry, `is over ${PATH_SET_ENTRY_MAX_BYTES.toLocaleString("en-US")} bytes`);
  }
  if (entry.startsWith("/") || /^[A-Za-z]:[\\/]/.test(entry) || entry.startsWith("~")) {
    throw invalidEntry(setting, entry, "is absolute; entries are relative to the notebook directory");
  }
  if (entry.includes("\\")) throw invalidEntry(setting, entry, "contains a backslash; use / between segments");
  if (/[\u0000-\u001f]/.test(entry)) throw invalidEntry(setting, entry, "contains a control character");
  const segments = entry.split("/").filter((s) => s !== "" && s !== ".");
  if (segments.length === 0) throw invalidEntry(setting, entry, "names the whole notebook; name files or directories in it");
  if (segments.includes("..")) throw invalidEntry(setting, entry, "has a '..' segment");
  if (segments.some((s) => s.toLowerCase() === ".git")) throw invalidEntry(setting, entry, "has a '.git' segment");
  return segments.join("/");
}

export function parsePathSet(setting: string, value: string | undefined): string[] {
  if (value === undefined || value.trim() === "") return [];
  const entries = value
    .split(",")
    .filter((raw) => raw.trim() !== "")
    .map((raw) => normalizeEntry(setting, raw));
  return [...new Set(entries)].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
}

export function buildPathSets(readOnly: string[], writable: string[]): PathSets {
  const both = readOnly.filter((p) => writable.includes(p));
  if (both.length > 0) {
    throw new StartupRefusal(
      "overlapping path settings",
      `"${both[0]}" is named by both --read-only-paths and --writable-paths; name each path in one setting only`,
    );
  }
  return { readOnly, writable };
}

/** Whether the notebook path `path` is `entry` or lies below it: for the path sets, restore's and log's paths. */
export function isAtOrBelowEntry(entry: string, path: string): boolean {
  return path === entry || path.startsWith(`${entry}/`);
}

/**
 * Whether the process may not change `path`. The longest matching entry of
 * either set decides; with a writable set, a path no entry matches is
 * protected, since the process may write only under its writable entries.
 */
export function isProtected(path: string, sets: PathSets): boolean {
  let best: { length: number; readOnly: boolean } | null = null;
  for (const entry of sets.readOnly) if (isAtOrBelowEntry(entry, path) && (!best || entry.length > best.length)) best = { length: entry.length, readOnly: true };
  for (const entry of sets.writable) if (isAtOrBelowEntry(entry, path) && (!best || entry.length > best.length)) best = { length: entry.length, readOnly: false };
  if (best) return best.readOnly;
  return sets.writable.length > 0;
}
