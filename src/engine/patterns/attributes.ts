/**
 * The `merge` attribute of a path from the notebook's `.gitattributes`
 * files, as git's attr.c resolves it: the files of deeper directories
 * before shallower ones, later lines before earlier ones, and within a line
 * later states before earlier ones; the first that speaks of `merge`
 * decides. Macros (`[attr]name states`, in the root file only, and git's
 * built-in `binary`: -diff -merge -text) set what they stand for when they
 * are set. A line git would refuse — a negative pattern, an invalid
 * attribute name, a macro outside the root file, a line of 2,048 bytes or
 * more — is passed over whole, as git passes it over with a warning.
 */
import { linesOf, type PathPattern, parsePathPattern, patternMatches } from "./pattern.ts";
import { toBytes } from "./wildmatch.ts";

export type MergeAttribute = { state: "unspecified" } | { state: "set" } | { state: "unset" } | { state: "value"; value: string };

export interface AttributeRules {
  merge(path: string): MergeAttribute;
}

/** The name of the file that holds a directory's attributes. */
export const ATTRIBUTES_FILE = ".gitattributes";

/** What one state on a line does to its attribute: set, unset (`-`), back to unspecified (`!`), or a value. */
type Setting = { readonly attr: string; readonly to: MergeAttribute };

type Line = { readonly pattern: PathPattern; readonly states: readonly Setting[] };

const BLANK = /[ \t\r\n]/;
const MAX_LINE_BYTES = 2048;
const MACRO_PREFIX = "[attr]";

const BUILT_IN_MACROS: ReadonlyArray<[string, string]> = [["binary", "-diff -merge -text"]];

function isValidName(name: string): boolean {
  return /^[A-Za-z0-9_.][-A-Za-z0-9_.]*$/.test(name);
}

/** The states after a pattern, or null when one is invalid (git refuses the line). */
function parseStates(text: string): Setting[] | null {
  const states: Setting[] = [];
  for (const word of text.split(/[ \t\r\n]+/).filter((w) => w !== "")) {
    const eq = word.indexOf("=");
    const sign = word[0] === "-" || word[0] === "!" ? word[0] : "";
    const name = word.slice(sign.length, eq < 0 ? word.length : eq);
    if (!isValidName(name)) return null;
    let to: MergeAttribute;
    if (sign === "-") to = { state: "unset" };
    else if (sign === "!") to = { state: "unspecified" };
    else if (eq < 0) to = { state: "set" };
    else to = { state: "value", value: fromBytes(word.slice(eq + 1)) };
    states.push({ attr: name, to });
  }
  return states;
}

function fromBytes(bytes: string): string {
  return Buffer.from(bytes, "latin1").toString("utf8");
}

const ESCAPES: Record<string, string> = { a: "\x07", b: "\b", f: "\f", n: "\n", r: "\r", t: "\t", v: "\v", "\\": "\\", '"': '"' };

/** quote.c unquote_c_style: the pattern inside the double quotes at the start of `s`, and what follows it; null when malformed. */
function unquoteC(s: string): { name: string; rest: string } | null {
  let out = "";
  for (let i = 1; i < s.length; i++) {
    const c = s[i]!;
    if (c === '"') return { name: out, rest: s.slice(i + 1) };
    if (c !== "\\") {
      out += c;
      continue;
    }
    const e = s[++i];
    if (e === undefined) return null;
    if (e in ESCAPES) out += ESCAPES[e];
    else if (/^[0-3][0-7][0-7]$/.test(s.slice(i, i + 3))) {
      out += String.fromCharCode(parseInt(s.slice(i, i + 3), 8));
      i += 2;
    } else return null;
  }
  return null;
}

type Parsed = { macro: string; states: Setting[] } | ({ macro: null } & Line) | null;

/** attr.c parse_attr_line, on a line's bytes: a rule, a macro definition, or null for a line git passes over. */
function parseLine(line: string, base: string, macrosAllowed: boolean): Parsed {
  if (line.length >= MAX_LINE_BYTES) return null;
  const cp = line.replace(/^[ \t\r\n]+/, "");
  if (cp === "" || cp.startsWith("#")) return null;
  const quoted = cp.startsWith('"') ? unquoteC(cp) : null;
  const end = cp.search(BLANK) < 0 ? cp.length : cp.search(BLANK);
  let name = quoted?.name ?? cp.slice(0, end);
  let rest = quoted?.rest ?? cp.slice(end);
  if (name.length > MACRO_PREFIX.length && name.startsWith(MACRO_PREFIX)) {
    if (!macrosAllowed) return null;
    const after = (quoted === null ? cp : name).slice(MACRO_PREFIX.length).replace(/^[ \t\r\n]+/, "");
    const nameEnd = after.search(BLANK) < 0 ? after.length : after.search(BLANK);
    name = after.slice(0, nameEnd);
    if (!isValidName(name)) return null;
    rest = quoted === null ? after.slice(nameEnd) : rest;
    const states = parseStates(rest);
    return states === null ? null : { macro: name, states };
  }
  const states = parseStates(rest);
  if (states === null) return null;
  const pattern = parsePathPattern(name, base);
  // Negative patterns are not allowed in attributes: git ignores the line.
  if (pattern.negative) return null;
  return { macro: null, pattern, states };
}

/** One directory's rules, and (the root's only) its macro definitions. */
function parseAttributesFile(text: string, base: string, macros: Map<string, Setting[]> | null): Line[] {
  const lines: Line[] = [];
  for (const raw of linesOf(toBytes(text))) {
    const parsed = parseLine(raw, base, macros !== null);
    if (parsed === null) continue;
    if (parsed.macro === null) lines.push(parsed);
    // A later definition replaces an earlier one.
    else macros!.set(parsed.macro, parsed.states);
  }
  return lines;
}

/** files: directory ("" for the root, "a/b" for a subdirectory) → the text of its .gitattributes */
export function attributeRules(files: ReadonlyMap<string, string>): AttributeRules {
  const macros = new Map<string, Setting[]>();
  for (const [name, states] of BUILT_IN_MACROS) macros.set(name, parseStates(states)!);
  // Deepest first: a deeper directory's rules take precedence. Equal depth: unrelated directories, never both in force.
  const dirs = [...files.keys()].sort((a, b) => depth(b) - depth(a));
  const stack = dirs.map((dir) => ({ dir: toBytes(dir), lines: parseAttributesFile(files.get(dir)!, toBytes(dir), dir === "" ? macros : null) }));
  return {
    merge(path: string): MergeAttribute {
      const bytes = toBytes(path);
      const found = new Map<string, MergeAttribute>();
      for (const { dir, lines } of stack) {
        if (dir !== "" && !bytes.startsWith(`${dir}/`)) continue;
        for (let i = lines.length - 1; i >= 0; i--) {
          const line = lines[i]!;
          if (patternMatches(line.pattern, bytes, false)) fill(line.states, macros, found);
          if (found.has("merge")) return found.get("merge")!;
        }
      }
      return found.get("merge") ?? { state: "unspecified" };
    },
  };
}

function depth(dir: string): number {
  return dir === "" ? 0 : dir.split("/").length;
}

/** attr.c fill_one: a line's states, last first, each attribute taking the first value it meets; a macro that is set brings its own. */
function fill(states: readonly Setting[], macros: ReadonlyMap<string, readonly Setting[]>, found: Map<string, MergeAttribute>): void {
  for (let i = states.length - 1; i >= 0; i--) {
    const { attr, to } = states[i]!;
    if (found.has(attr)) continue;
    found.set(attr, to);
    const macro = macros.get(attr);
    if (macro !== undefined && to.state === "set") fill(macro, macros, found);
  }
}
