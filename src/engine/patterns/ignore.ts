/**
 * .gitignore rules as git applies them (dir.c): each directory's
 * `.gitignore` holds patterns relative to that directory; a deeper file's
 * patterns take precedence over a shallower one's, a later line over an
 * earlier one, and the first that matches decides — excluded, or not when
 * it is a `!` pattern. Below them all, a list of lowest precedence (git's
 * core.excludesFile; here the built-in list of editor and OS files). A
 * directory that is excluded is not entered, so nothing below it can be
 * included again and its own `.gitignore` is never read.
 *
 * `IgnoreRules` is what a walk of the directory tree needs: the rules in
 * force in one directory, made from its parent's and its own file as the
 * walk enters it. `ignoreRules` answers for any path at once.
 */
import { linesOf, type PathPattern, parsePathPattern, patternMatches } from "./pattern.ts";
import { toBytes } from "./wildmatch.ts";

/** The name of the file that holds a directory's ignore rules. */
export const IGNORE_FILE = ".gitignore";

/** dir.c trim_trailing_spaces: trailing spaces go unless escaped with a backslash. */
function trimTrailingSpaces(line: string): string {
  let lastSpace = -1;
  for (let i = 0; i < line.length; i++) {
    const c = line[i];
    if (c === " ") {
      if (lastSpace < 0) lastSpace = i;
    } else if (c === "\\") {
      i++;
      if (i >= line.length) return line;
      lastSpace = -1;
    } else lastSpace = -1;
  }
  return lastSpace < 0 ? line : line.slice(0, lastSpace);
}

/** The patterns of one ignore file's text (or its bytes), in file order; `base` is its directory ("" or "a/b"). */
export function parseIgnoreFile(text: string | Uint8Array, base: string): PathPattern[] {
  const patterns: PathPattern[] = [];
  const bytes = typeof text === "string" ? toBytes(text) : Buffer.from(text.buffer, text.byteOffset, text.byteLength).toString("latin1");
  for (const raw of linesOf(bytes)) {
    // Empty lines and comments are no patterns; a CR before the newline is not part of the line.
    if (raw === "" || raw.startsWith("#")) continue;
    const line = trimTrailingSpaces(raw.endsWith("\r") ? raw.slice(0, -1) : raw);
    patterns.push(parsePathPattern(line, toBytes(base)));
  }
  return patterns;
}

/** The last pattern of `list` that matches, or undefined. */
function lastMatch(list: readonly PathPattern[], path: string, isDir: boolean, basename: string): PathPattern | undefined {
  for (let i = list.length - 1; i >= 0; i--) {
    if (patternMatches(list[i]!, path, isDir, basename)) return list[i];
  }
  return undefined;
}

/** The ignore rules in force in one directory: its own file's over its parents', over the lowest list. */
export class IgnoreRules {
  private constructor(
    private readonly own: readonly PathPattern[],
    private readonly parent: IgnoreRules | null,
  ) {}

  /** Rules with only `lowest` (a list of lowest precedence, as an ignore file's text whose base is the root). */
  static base(lowest = ""): IgnoreRules {
    return new IgnoreRules(parseIgnoreFile(lowest, ""), null);
  }

  /** The rules inside directory `dir` ("" for the root, "a/b"), whose `.gitignore` holds `text` (null: none), entered from the directory these rules are for. */
  enter(dir: string, text: string | Uint8Array | null): IgnoreRules {
    if (text === null) return this;
    const own = parseIgnoreFile(text, dir);
    return own.length === 0 ? this : new IgnoreRules(own, this);
  }

  /**
   * Whether the entry at `path` (notebook-relative, in the directory these
   * rules are for) is excluded, a directory when `isDir`. Its parent
   * directories are the walk's matter: it does not enter excluded ones.
   */
  excludes(path: string, isDir: boolean): boolean {
    const bytes = toBytes(path);
    const basename = bytes.slice(bytes.lastIndexOf("/") + 1);
    for (let rules: IgnoreRules | null = this; rules !== null; rules = rules.parent) {
      const found = lastMatch(rules.own, bytes, isDir, basename);
      if (found !== undefined) return !found.negative;
    }
    return false;
  }
}

/**
 * The rules of a whole tree of ignore files at once: `files` maps each
 * directory ("" for the root) to its `.gitignore` text. `ignored(path)`
 * says whether git would ignore `path` (a file, or a directory when
 * `isDir`), an excluded parent directory included.
 */
export function ignoreRules(files: ReadonlyMap<string, string>, lowest = ""): { ignored(path: string, isDir: boolean): boolean } {
  const base = IgnoreRules.base(lowest);
  const rulesIn = new Map<string, IgnoreRules | "excluded">();
  const dirRules = (dir: string): IgnoreRules | "excluded" => {
    const known = rulesIn.get(dir);
    if (known !== undefined) return known;
    let rules: IgnoreRules | "excluded";
    if (dir === "") rules = base.enter("", files.get("") ?? null);
    else {
      const parentDir = dir.includes("/") ? dir.slice(0, dir.lastIndexOf("/")) : "";
      const parent = dirRules(parentDir);
      rules = parent === "excluded" || parent.excludes(dir, true) ? "excluded" : parent.enter(dir, files.get(dir) ?? null);
    }
    rulesIn.set(dir, rules);
    return rules;
  };
  return {
    ignored(path, isDir) {
      const dir = path.includes("/") ? path.slice(0, path.lastIndexOf("/")) : "";
      const rules = dirRules(dir);
      return rules === "excluded" || rules.excludes(path, isDir);
    },
  };
}
