/**
 * The scan: read the visible directory into a notebook tree and enforce the
 * notebook contract (docs/decisions/0005-the-notebook-contract.md) — regular
 * files of valid UTF-8 without U+0000, under valid UTF-8 names without a
 * `.git` segment. Every violation is collected so the caller learns all
 * offending files at once.
 *
 * What the notebook's `.gitignore` files and the built-in list ignore
 * (ignored.ts) is left out and listed: never read, never a violation, and
 * an ignored directory is not entered — unless the notebook holds a file
 * below it. Nothing else is skipped silently: an entry that cannot be
 * stat'ed, read or listed (no permission, or an absolute path longer than
 * the file system takes) is refused by name like any other violation, with
 * what to do. Only an entry removed between the listing and its stat is
 * left out: it is not there.
 */
import { lstatSync, readdirSync, readFileSync, rmSync, statSync, type Stats } from "node:fs";
import { DomainError, type ErrorFile } from "../../contract/errors.ts";
import { isText } from "../merge/text.ts";
import { IGNORE_FILE, type IgnoreRules } from "../patterns/ignore.ts";
import { isDirectoryMark } from "./directory-identity.ts";
import { builtInRules, type HeldPaths, isRuleFile, NOTHING_HELD } from "./ignored.ts";

/**
 * What identifies one version of a file on disk without reading it (like
 * git's index). Times are milliseconds as doubles, precise to well under a
 * microsecond today: the `bigint` variant of lstat costs a third more, and
 * ten thousand of them are most of a no-change call.
 */
export interface FileStamp {
  size: number;
  mtimeMs: number;
  ctimeMs: number;
  ino: number;
}

export function stampOf(st: Stats): FileStamp {
  return { size: st.size, mtimeMs: st.mtimeMs, ctimeMs: st.ctimeMs, ino: st.ino };
}

/**
 * A scanned file: its blob id when the stat cache vouches for it, or when
 * the scan read it and `absorb` took its bytes (`read`); else its bytes.
 */
export type ScannedFile = { stamp: FileStamp; oid: string; bytes: null; read?: true } | { stamp: FileStamp; oid: null; bytes: Uint8Array };

/** Notebook-relative slash path → scanned file, in path order. */
export type NotebookFiles = Map<string, ScannedFile>;

/** The blob id of an unchanged file, from the stat cache; null when it must be read. */
export type KnownFile = (path: string, stamp: FileStamp) => string | null;

/** Takes a file's bytes as soon as they are read and validated (to store them), and gives its blob id. The bytes are its own: the scan keeps no view of them. */
export type Absorb = (path: string, bytes: Uint8Array) => string;

/**
 * The names of the temporary files this engine makes beside a visible file
 * it rewrites (visible-writes.ts). The journal records each one before it is
 * made, and recovery removes exactly those; so a file under such a name that
 * the journal does not record is not ours, and since it cannot be told from
 * one by its name, the scan refuses it by name rather than skip it (a
 * skipped user file would never be published).
 */
export const PARTIAL_FILE = /^\.slivingdoc-partial-[0-9a-f]{16}$/;

/**
 * The cookie a server's watcher writes at a checkout's root and awaits
 * before each call (watcher.ts), removed at once: at the root, like the
 * directory's mark, it is slivingdoc's and never a notebook file.
 */
export const WATCH_COOKIE_PREFIX = ".slivingdoc-cookie-";

export function isWatchCookie(name: string): boolean {
  return /^\.slivingdoc-cookie-[0-9a-f]{16}$/.test(name);
}

// ignoreBOM: a name may begin with U+FEFF, and that character is part of it.
const nameDecoder = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });

function isGitSegment(name: string): boolean {
  return name.length === 4 && name.toLowerCase() === ".git";
}

/**
 * The most a notebook file may hold: 128 MiB. Merging one takes several
 * times its size in memory (docs/performance.md, "Big files"), so a bigger
 * file is refused by name, from its size, before it is read; and so is one
 * the store holds (another tool or version wrote it), before it is read or
 * written out.
 */
export const MAX_FILE_BYTES = 128 * 1024 * 1024;

/** The message of a file over the limit (MAX_FILE_BYTES, but for tests), here or in the store. */
export function tooBigAdvice(names: string, limit = MAX_FILE_BYTES): string {
  const most = limit % (1024 * 1024) === 0 ? `${limit / (1024 * 1024)} MiB` : `${limit} bytes`;
  return `These files are over ${most}, the most a notebook file may hold: ${names}. Split them into smaller files, or delete them, then call again.`;
}

/** Why an entry is refused: each kind has its own advice in the message. */
type Violation = "content" | "unreadable" | "tooLong" | "reserved" | "tooBig";

/**
 * The violation an errno stands for, or null for an entry that is simply
 * gone. Any other error is not the file's fault and propagates.
 */
function accessViolation(cause: unknown): Violation | null {
  const code = (cause as { code?: unknown } | null)?.code;
  switch (code) {
    case "ENOENT":
    case "ENOTDIR":
      return null;
    case "EACCES":
    case "EPERM":
      return "unreadable";
    case "ENAMETOOLONG":
      return "tooLong";
    default:
      throw cause;
  }
}

const ADVICE: Record<Violation, (names: string, maxFileBytes: number) => string> = {
  content: (names) => `The notebook holds UTF-8 text files only; these are not: ${names}. Delete or replace them, then call again.`,
  unreadable: (names) => `These cannot be read: ${names}. Make them readable (chmod u+rX) or delete them, then call again.`,
  tooLong: (names) =>
    `These paths are too long for the file system (over 4,096 bytes from /): ${names}. Move or rename them to a shorter path, or delete them, then call again.`,
  tooBig: tooBigAdvice,
  reserved: (names) =>
    `These names are reserved for slivingdoc's temporary files (.slivingdoc-partial- and 16 hex digits): ${names}. Rename them, or delete them if they are leftovers, then call again.`,
};

/** One scan under way: what it may skip reading, the files read so far, those ignored, and every violation, refused together at the end. */
export interface Scan {
  known: KnownFile;
  maxFileBytes: number;
  absorb: Absorb | null;
  ours: ReadonlySet<string>;
  held: HeldPaths;
  files: NotebookFiles;
  ignored: string[];
  invalid: Array<ErrorFile & { why: Violation }>;
}

export interface ScanOptions {
  /** The blob id of an unchanged file, from the stat cache. */
  known?: KnownFile;
  /**
   * Notebook-relative paths of temporary files an interrupted call left,
   * which the journal records (read only by a caller that repairs nothing:
   * `status`); left out rather than refused.
   */
  ours?: ReadonlySet<string>;
  /** The files the notebook holds (the baseline's; on a pull, the accepted state's too): no ignore rule hides them. */
  held?: HeldPaths;
  /** The most a file may hold (MAX_FILE_BYTES by default). */
  maxFileBytes?: number;
  /**
   * Where the bytes of each file read go, as it is read: the scan then
   * keeps its blob id only, so a notebook of any size is never held in
   * memory all at once. Without it, the bytes are in the result.
   */
  absorb?: Absorb;
  /**
   * Count what breaks the notebook contract (Scanned.invalid) rather than
   * refuse it: a look at a directory that is no checkout yet (engine/foreign.ts),
   * whose pull refuses those files by name itself.
   */
  countInvalid?: boolean;
  /** Told each directory entered ("" for the root, else "a/b/") with the ignore rules in force in it (null: an ignored one, entered for held files). */
  onDirectory?: (relDir: string, rules: IgnoreRules | null) => void;
}

export interface Scanned {
  files: NotebookFiles;
  /** What the ignore rules left out, in path order: files, and directories (with a trailing slash) that were not entered. */
  ignored: string[];
  /** With `countInvalid`: how many entries break the notebook contract. */
  invalid?: number;
}

function bad(scan: Scan, path: string, why: Violation = "content"): void {
  scan.invalid.push({ path, reason: "INVALID_CONTENT", ranges: [], why });
}

export function scanNotebook(root: string, options: ScanOptions = {}): Scanned {
  const scan = startScan(options);
  if (!notebookExists(root)) return { files: scan.files, ignored: [] };
  walk(scan, root, "", builtInRules(), options.onDirectory);
  if (options.countInvalid === true) return { files: scan.files, ignored: scan.ignored, invalid: scan.invalid.length };
  if (scan.invalid.length > 0) throw refusal(scan.invalid, scan.maxFileBytes);
  return { files: scan.files, ignored: scan.ignored };
}

/** A scan with nothing found yet. */
export function startScan(options: ScanOptions): Scan {
  return {
    known: options.known ?? (() => null),
    maxFileBytes: options.maxFileBytes ?? MAX_FILE_BYTES,
    absorb: options.absorb ?? null,
    ours: options.ours ?? new Set(),
    held: options.held ?? NOTHING_HELD,
    files: new Map(),
    ignored: [],
    invalid: [],
  };
}

/** Whether the notebook directory exists yet; something else at its path is refused. */
function notebookExists(root: string): boolean {
  try {
    const entry = lstatSync(root);
    if (!entry.isDirectory()) throw notADirectory(entry);
    return true;
  } catch (e) {
    if (e instanceof DomainError) throw e;
    const code = (e as { code?: unknown } | null)?.code;
    // A directory that does not exist yet holds no files.
    if (code === "ENOENT" || code === "ENOTDIR") return false;
    throw new DomainError("LOCAL_STATE", "The notebook directory could not be read.", { cause: e });
  }
}

/** What stands at a path, in a person's words. */
function kindOf(entry: Stats): string {
  if (entry.isFile()) return "a regular file";
  if (entry.isFIFO()) return "a FIFO (named pipe)";
  if (entry.isSocket()) return "a socket";
  if (entry.isCharacterDevice() || entry.isBlockDevice()) return "a device";
  if (entry.isSymbolicLink()) return "a symbolic link";
  return "not a directory";
}

/**
 * Something that is not a directory where the notebook should be: the
 * caller's mistake or another program's doing, never a reason to retry, and
 * answered the same wherever it is found — before anything is created, or
 * when the directory was replaced during a call (PATH_OUTSIDE_ROOT is for
 * escapes).
 */
export function notADirectory(entry: Stats | "in-path"): DomainError {
  const what = entry === "in-path" ? "has a file where one of its directories should be" : `is ${kindOf(entry)}, not a directory`;
  return new DomainError(
    "INVALID_CONTENT",
    `The notebook path ${what}; the notebook is a directory of text files. Move or delete what is there, or address a directory, then call again.`,
  );
}

/**
 * Refuses a notebook path that names something other than a directory (a
 * symbolic link to a directory is one), before a call creates or reads
 * anything there. A path that does not exist yet passes: a first pull makes it.
 */
export function refuseNonDirectory(path: string): void {
  let entry: Stats;
  try {
    entry = statSync(path);
  } catch (e) {
    const code = (e as { code?: unknown } | null)?.code;
    if (code === "ENOTDIR") throw notADirectory("in-path");
    return; // Absent (or unreadable): the call's own steps answer it.
  }
  if (!entry.isDirectory()) throw notADirectory(entry);
}

// Each directory is listed, its entries stat'ed once and visited in path
// order (a directory sorts as if its name ended in "/"), so the result
// comes out sorted without sorting every path at the end. `parent`: the
// ignore rules in force above the directory; null inside an ignored one,
// entered only for the files the notebook holds below it.
type OnDirectory = ScanOptions["onDirectory"];

function walk(scan: Scan, absDir: string, relDir: string, parent: IgnoreRules | null, onDirectory: OnDirectory): void {
  const names = listNames(scan, absDir, relDir);
  if (names === null) return;
  const rules = parent?.enter(relDir.slice(0, -1), names.includes(IGNORE_FILE) ? ignoreFileText(`${absDir}/${IGNORE_FILE}`) : null) ?? null;
  onDirectory?.(relDir, rules);
  for (const { name, st } of entriesInPathOrder(scan, absDir, relDir, names)) {
    const rel = relDir + name;
    const abs = `${absDir}/${name}`;
    const isDirectory = st.isDirectory();
    if (isIgnored(scan, rules, rel, name, isDirectory)) {
      if (isDirectory && scan.held.holdsBelow(rel)) walk(scan, abs, `${rel}/`, null, onDirectory);
      else scan.ignored.push(isDirectory ? `${rel}/` : rel);
    } else if (isDirectory) walk(scan, abs, `${rel}/`, rules, onDirectory);
    else if (st.isFile()) scanFile(scan, abs, rel, st);
    // Symlinks, sockets, FIFOs, devices: never notebook content.
    else bad(scan, rel);
  }
}

/** Whether the entry at `rel` is left out: a rule (or an ignored directory above it) hides it, and it is neither held nor a rule file. */
export function isIgnored(scan: Scan, rules: IgnoreRules | null, rel: string, name: string, isDirectory: boolean): boolean {
  if (isDirectory) return rules === null || rules.excludes(rel, true);
  // Inside an ignored directory, only what the notebook holds is scanned.
  if (rules !== null && (isRuleFile(name) || !rules.excludes(rel, false))) return false;
  return !scan.held.has(rel);
}

/** A directory's `.gitignore` as bytes, or null when it is not a file that can be read (the scan names it then, as any such entry). */
function ignoreFileText(abs: string): Uint8Array | null {
  try {
    return lstatSync(abs).isFile() ? readFileSync(abs) : null;
  } catch {
    return null;
  }
}

/** The names in a directory that are valid UTF-8 (the others are refused); null when it cannot be listed. */
function listNames(scan: Scan, absDir: string, relDir: string): string[] | null {
  let names: string[];
  try {
    names = readdirSync(absDir);
  } catch (cause) {
    if (relDir === "") throw new DomainError("LOCAL_STATE", "The notebook directory could not be read.", { cause });
    // A directory inside the notebook that cannot be listed: its files
    // are unknown, so the directory itself is named.
    const why = accessViolation(cause);
    if (why !== null) bad(scan, relDir.slice(0, -1), why);
    return null;
  }
  if (names.some((name) => name.includes("\uFFFD"))) {
    // Node-style APIs replace invalid UTF-8 in names; the raw bytes tell
    // a real U+FFFD from a name that is not UTF-8 at all.
    const valid = new Set<string>();
    for (const raw of readdirSync(absDir, { encoding: "buffer" })) {
      try {
        valid.add(nameDecoder.decode(raw));
      } catch {
        bad(scan, relDir + Buffer.from(raw).toString("latin1").replace(/[^\x20-\x7e]/g, "?"));
      }
    }
    names = names.filter((name) => valid.has(name));
  }
  return names;
}

/** The entries of a directory stat'ed, in path order; `.git` and the temporary files' names are refused, not visited. */
function entriesInPathOrder(scan: Scan, absDir: string, relDir: string, names: string[]): Array<{ name: string; st: Stats }> {
  // In path order: names sort natively (UTF-16 order, as paths compare
  // everywhere here); only a directory, which sorts as "name/", can need
  // the second, keyed sort below.
  names.sort();
  let hasDirectory = false;
  const entries: Array<{ name: string; key: string; st: Stats }> = [];
  for (const name of names) {
    // Hidden names are rare: test the cheap first character before the patterns.
    if (name.charCodeAt(0) === 0x2e) {
      if (isGitSegment(name)) {
        bad(scan, relDir + name);
        continue;
      }
      if (PARTIAL_FILE.test(name)) {
        if (!scan.ours.has(relDir + name)) bad(scan, relDir + name, "reserved");
        continue;
      }
      // The directory's mark (directory-identity.ts) and the watcher's cookie: slivingdoc's, never notebook files.
      if (relDir === "" && isDirectoryMark(name)) continue;
      if (relDir === "" && isWatchCookie(name)) {
        // A cookie lives an instant (watcher.ts sync): one still here was left by a server killed
        // between writing and removing it. Removed, so it does not litter the notebook; a live
        // one's writer has heard it on creation already.
        try {
          rmSync(`${absDir}/${name}`, { force: true });
        } catch {
          // A directory that cannot be written: the cookie stays, hidden from the notebook as before.
        }
        continue;
      }
    }
    let st: Stats;
    try {
      st = lstatSync(`${absDir}/${name}`);
    } catch (cause) {
      // Removed since the listing: not there. Anything else is named.
      const why = accessViolation(cause);
      if (why !== null) bad(scan, relDir + name, why);
      continue;
    }
    const isDirectory = st.isDirectory();
    hasDirectory ||= isDirectory;
    entries.push({ name, key: isDirectory ? `${name}/` : name, st });
  }
  if (hasDirectory) entries.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
  return entries;
}

/** A regular file: its blob id when the stat cache vouches for it, else its bytes, which must be text. */
export function scanFile(scan: Scan, abs: string, rel: string, st: Stats): void {
  if (st.size > scan.maxFileBytes) {
    bad(scan, rel, "tooBig");
    return;
  }
  const stamp = stampOf(st);
  const oid = scan.known(rel, stamp);
  if (oid !== null) {
    // Unchanged since a scan that read and validated it.
    scan.files.set(rel, { stamp, oid, bytes: null });
    return;
  }
  let bytes: Buffer;
  try {
    bytes = readFileSync(abs);
  } catch (cause) {
    const why = accessViolation(cause);
    if (why !== null) bad(scan, rel, why);
    return;
  }
  if (!isText(bytes)) bad(scan, rel);
  else {
    const read = new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    if (scan.absorb !== null) scan.files.set(rel, { stamp, oid: scan.absorb(rel, read), bytes: null, read: true });
    else scan.files.set(rel, { stamp, oid: null, bytes: read });
  }
}

/** Every violation found, by path, each kind once with its advice. */
function refusal(invalid: Array<ErrorFile & { why: Violation }>, maxFileBytes: number): DomainError {
  invalid.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
  const kinds = (Object.keys(ADVICE) as Violation[]).filter((why) => invalid.some((f) => f.why === why));
  const message = kinds.map((why) => ADVICE[why](invalid.filter((f) => f.why === why).map((f) => f.path).join(", "), maxFileBytes)).join(" ");
  return new DomainError("INVALID_CONTENT", message, { files: invalid.map(({ path, reason, ranges }) => ({ path, reason, ranges })) });
}
