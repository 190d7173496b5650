/**
 * One pattern of a .gitignore or .gitattributes line, as git's dir.c reads
 * and matches it: a pattern without a slash (a trailing one aside) matches
 * the basename at any depth below the directory of the file it is in; with
 * one at the start or in the middle, it matches the path relative to that
 * directory; a trailing slash matches directories only; `!` in front
 * negates (ignore files only). All strings are byte strings (wildmatch.ts).
 */
import { WM_PATHNAME, wildmatch } from "./wildmatch.ts";

export interface PathPattern {
  /** Without its `!` and its trailing slash. */
  readonly pattern: string;
  /** The directory of the file it is in, relative to the notebook: "" or "a/b". */
  readonly base: string;
  readonly negative: boolean;
  readonly mustBeDir: boolean;
  /** No slash in it: it matches the basename. */
  readonly noDir: boolean;
  /** The length of its leading part without glob characters, compared as is. */
  readonly literalPrefix: number;
  /** How a basename is matched (matchBasename), decided once per pattern rather than for every file. */
  readonly basenameForm: BasenameForm;
}

/**
 * dir.c match_basename's shortcuts: a literal pattern compared as is,
 * "*literal" as a suffix, and (the same answer as wildmatch's, since a
 * basename has no slash) "literal*" as a prefix — the forms of nearly every
 * ignore line, matched against every file a scan meets; else wildmatch.
 */
type BasenameForm = { kind: "literal" | "suffix" | "prefix"; text: string } | { kind: "glob" };

/** Glob characters: a pattern without them after its first character is "*literal" or "literal*". */
const GLOB = /[*?[\\]/;

function basenameForm(p: string, literalPrefix: number): BasenameForm {
  if (literalPrefix === p.length) return { kind: "literal", text: p };
  if (literalPrefix === 0 && p[0] === "*" && !GLOB.test(p.slice(1))) return { kind: "suffix", text: p.slice(1) };
  if (literalPrefix === p.length - 1 && p[p.length - 1] === "*") return { kind: "prefix", text: p.slice(0, -1) };
  return { kind: "glob" };
}

/** How long `p` goes without a glob character (`*?[\`). */
function simpleLength(p: string): number {
  const m = /[*?[\\]/.exec(p);
  return m === null ? p.length : m.index;
}

/** dir.c parse_path_pattern. */
export function parsePathPattern(text: string, base: string): PathPattern {
  let p = text;
  const negative = p.startsWith("!");
  if (negative) p = p.slice(1);
  let len = p.length;
  const mustBeDir = len > 0 && p[len - 1] === "/";
  if (mustBeDir) len--;
  const pattern = p.slice(0, len);
  const literalPrefix = Math.min(simpleLength(p), len);
  return { pattern, base, negative, mustBeDir, noDir: !pattern.includes("/"), literalPrefix, basenameForm: basenameForm(pattern, literalPrefix) };
}

/**
 * Whether `pat` matches `path` (notebook-relative, a byte string), a
 * directory when `isDir`; `basename`, its last segment, when the caller
 * has it already. Whether a parent directory matched is the caller's
 * matter.
 */
export function patternMatches(pat: PathPattern, path: string, isDir: boolean, basename = path.slice(path.lastIndexOf("/") + 1)): boolean {
  if (pat.mustBeDir && !isDir) return false;
  if (pat.noDir) return matchBasename(pat, basename);
  return matchPathname(pat, path);
}

/** dir.c match_basename, in the form decided when the pattern was read. */
function matchBasename(pat: PathPattern, basename: string): boolean {
  const form = pat.basenameForm;
  switch (form.kind) {
    case "literal":
      return form.text === basename;
    case "suffix":
      return basename.endsWith(form.text);
    case "prefix":
      return basename.startsWith(form.text);
    case "glob":
      return wildmatch(pat.pattern, basename);
  }
}

/**
 * dir.c match_pathname: relative to the pattern's directory, its leading
 * slash dropped; the literal prefix compared first, and only the rest
 * given to wildmatch — which matters, as a `**` right after that prefix
 * then stands at the start of what wildmatch sees.
 */
function matchPathname(pat: PathPattern, path: string): boolean {
  let pattern = pat.pattern;
  let prefix = pat.literalPrefix;
  if (pattern.startsWith("/")) {
    pattern = pattern.slice(1);
    prefix--;
  }
  const base = pat.base;
  if (path.length < base.length + 1 || (base !== "" && path[base.length] !== "/") || !path.startsWith(base)) return false;
  let name = base === "" ? path : path.slice(base.length + 1);
  if (prefix > 0) {
    if (prefix > name.length) return false;
    if (pattern.slice(0, prefix) !== name.slice(0, prefix)) return false;
    pattern = pattern.slice(prefix);
    name = name.slice(prefix);
    if (pattern === "" && name === "") return true;
  }
  return wildmatch(pattern, name, WM_PATHNAME);
}

/** The lines of a rules file's text (a byte string), its UTF-8 BOM dropped; a CR before the newline stays for the caller. */
export function linesOf(bytes: string): string[] {
  const text = bytes.startsWith("\xef\xbb\xbf") ? bytes.slice(3) : bytes;
  const lines = text.split("\n");
  if (lines[lines.length - 1] === "") lines.pop();
  return lines;
}
