/**
 * Seeded generators of tool arguments for the input fuzz
 * (test/e2e/fuzz-inputs.test.ts): random JSON of every shape, and
 * structured cases with exactly one defect whose reason is known in
 * advance. Shared by the in-process run and the run through the binary, so
 * both surfaces see the same kinds of input.
 */
import type { ToolName } from "../../src/contract/tools.ts";
import { Choices } from "./seeded.ts";

export type Rng = () => number;

/** Everything an answer may legitimately be for some input (decoding, the path, the engine). */
export type Verdict =
  | "OK"
  | "MALFORMED_INPUT"
  | "MESSAGE_BLANK"
  | "MESSAGE_TOO_LONG"
  | "MESSAGE_INVALID"
  | "PATH_OUTSIDE_ROOT"
  | "PULL_REQUIRED";

export const ANY_VERDICT: readonly Verdict[] = [
  "OK",
  "MALFORMED_INPUT",
  "MESSAGE_BLANK",
  "MESSAGE_TOO_LONG",
  "MESSAGE_INVALID",
  "PATH_OUTSIDE_ROOT",
  "PULL_REQUIRED",
];

export interface FuzzCase {
  tool: ToolName;
  /** `undefined` means the arguments are omitted, which is the empty object. */
  args: unknown;
  /** Which category made it, to tell a failure's kind at a glance. */
  kind: string;
  /** The verdicts this input may get; one element when the case has one known defect. */
  expect: readonly Verdict[];
  /** For a valid call: the resolved directory it addresses (to track pulls). */
  dir?: string;
}

/** Where the generated paths point; the test builds the directories. */
export interface PathWorld {
  /** Argument forms of valid notebook directories, each with the directory it resolves to. */
  valid: Array<{ arg: string | undefined; dir: string }>;
  /** Directories that have been pulled (a commit there is OK; elsewhere PULL_REQUIRED). */
  pulled: Set<string>;
  /** Absolute or `~` paths that resolve outside the workspace root: PATH_OUTSIDE_ROOT for both tools. */
  outside: string[];
  /** Existing directories that are PATH_OUTSIDE_ROOT for both tools (a checkout's parent, …). */
  refusedExisting: string[];
  /** Paths inside a pulled checkout that do not exist: PATH_OUTSIDE_ROOT for a pull (nested checkout). */
  nestedMissing: string[];
}

/** Text that breaks naive handling: BOM, direction marks, emoji sequences, combining marks, other scripts, quoting. */
export const ODD_WELL_FORMED = [
  "\ufeff",
  "\u200f",
  "\u200e",
  "\u202e",
  "\u2066",
  "\u2069",
  "😀",
  "👩‍👩‍👧‍👦",
  "🏳️‍🌈",
  "e\u0301",
  "é",
  "\u0301",
  "Z̤͔ͧ̑̓ä͖̭̈̇lͮ̒ͫǧ̗͚̚o̙̔ͮ̇͐̇",
  "\u3000",
  "\u2028",
  "\u2029",
  "\u00a0",
  "\u0085",
  "\u180e",
  "\t",
  "\n",
  "\r\n",
  "\uffff",
  "\ufffe",
  "\ufffd",
  "\u{10ffff}",
  "\u{1f4a9}",
  "نص",
  "עברית",
  "中文",
  "\\",
  '"',
  "'",
  "/",
  "..",
  "~",
  "%00",
  "${x}",
  "<<<<<<<",
  "\u001b[31m",
  "\u007f",
];
/** Not well-formed UTF-16 (lone surrogates) or U+0000: never a valid message, never a valid path. */
export const ODD_ILL_FORMED = ["\u0000", "\ud800", "\udfff", "\udc00\ud800", "a\ud83d", "\ude00b"];
const WHITE_SPACE = [" ", "\t", "\n", "\r", "\u000b", "\u000c", "\u0085", "\u00a0", "\u1680", "\u2000", "\u200a", "\u2028", "\u2029", "\u202f", "\u205f", "\u3000"];
const ASCII = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 -_.,:;!?";
const KEY_NAMES = ["path", "message", "Path", "PATH", "paths", "msg", "name", "arguments", "__proto__", "constructor", "toString", "hasOwnProperty", "", " path", "path\u0000", "pa\u200bth"];

export class Gen extends Choices {

  /** A string of ASCII and odd pieces; `wellFormed` keeps out lone surrogates and U+0000. */
  text(maxPieces: number, wellFormed: boolean): string {
    const n = this.int(maxPieces + 1);
    let s = "";
    for (let i = 0; i < n; i++) {
      const r = this.rnd();
      if (r < 0.55) s += ASCII[this.int(ASCII.length)];
      else if (r < 0.9 || wellFormed) s += this.pick(ODD_WELL_FORMED);
      else s += this.pick(ODD_ILL_FORMED);
    }
    return s;
  }

  /** About 1 MB: ASCII, or multi-byte and odd text repeated. */
  huge(wellFormed: boolean): string {
    const unit = this.chance(0.5) ? "x" : `${this.text(8, wellFormed)}é😀`;
    return unit.repeat(Math.ceil((1 << 20) / Math.max(1, unit.length)));
  }

  /** An object or array nested 1,000 levels deep. */
  deep(): unknown {
    let v: unknown = this.chance(0.5) ? this.text(4, false) : 1;
    const asArray = this.chance(0.5);
    for (let i = 0; i < 1000; i++) v = asArray ? [v] : { [this.chance(0.9) ? "a" : this.pick(KEY_NAMES)]: v };
    return v;
  }

  number(): number {
    return this.pick([0, -0, 1, -1, 7, 4096, 16_384, 2 ** 53 + 1, -(2 ** 63), 1e308, 5e-324, 0.1, this.rnd() * 1e6]);
  }

  /** A key for a random object: the known fields, near misses, prototype names, odd text. */
  key(): string {
    return this.chance(0.5) ? this.pick(KEY_NAMES) : this.text(6, false);
  }

  /** Any JSON value. Objects are built with defineProperty so "__proto__" is an own key, as JSON.parse makes it. */
  json(depth = 0): unknown {
    const r = this.rnd();
    if (r < 0.01) return this.deep();
    if (r < 0.02) return this.huge(this.chance(0.5));
    if (depth >= 4 || r < 0.3) {
      const s = this.rnd();
      if (s < 0.4) return this.text(12, false);
      if (s < 0.6) return this.number();
      if (s < 0.8) return this.chance(0.5);
      return null;
    }
    if (r < 0.5) return Array.from({ length: this.int(5) }, () => this.json(depth + 1));
    return this.object(depth + 1);
  }

  object(depth: number): Record<string, unknown> {
    const o: Record<string, unknown> = {};
    const n = this.int(4);
    for (let i = 0; i < n; i++) {
      Object.defineProperty(o, this.key(), { value: this.json(depth), enumerable: true, writable: true, configurable: true });
    }
    return o;
  }

  /** A message every rule accepts: well-formed, no U+0000, not blank, at most 16,384 bytes (sometimes exactly). */
  validMessage(): string {
    const r = this.rnd();
    if (r < 0.05) return "é".repeat(8192); // exactly 16,384 bytes
    if (r < 0.1) return `${"😀".repeat(4095)}abcd`; // 16,384 bytes of four-byte characters and ASCII
    const s = `${ASCII[this.int(26)]}${this.text(40, true)}`;
    return Buffer.byteLength(s) <= 16_384 ? s : s.slice(0, 1000);
  }

  /** A commit message with one defect, and the reason it must get. */
  badMessage(): { message: string; reason: Verdict } {
    const r = this.rnd();
    if (r < 0.3) {
      const n = this.int(6);
      return { message: Array.from({ length: n }, () => this.pick(WHITE_SPACE)).join(""), reason: "MESSAGE_BLANK" };
    }
    if (r < 0.6) {
      // A lone surrogate or U+0000 anywhere; also in a message too long, since validity is checked first.
      // (A lone half can pair up with a neighbour into a valid character; try again then.)
      for (;;) {
        const bad = this.pick(ODD_ILL_FORMED);
        const body = this.chance(0.2) ? this.huge(true) : this.validMessage();
        const at = this.int(body.length + 1);
        const message = body.slice(0, at) + bad + body.slice(at);
        if (!message.isWellFormed() || message.includes("\u0000")) return { message, reason: "MESSAGE_INVALID" };
      }
    }
    const long = this.pick([
      () => "a".repeat(16_385),
      () => "é".repeat(8193), // 16,386 bytes in 8,193 code points
      () => `${"😀".repeat(4096)}a`, // 16,385 bytes in 4,097 code points
      () => `${"€".repeat(5461)}ab`, // 16,385 bytes
      () => this.huge(true),
    ])();
    return { message: long, reason: "MESSAGE_TOO_LONG" };
  }

  /** A non-empty path that is neither absolute nor `~` nor `~/…`: refused by the strict decode. */
  relativePath(): string {
    for (;;) {
      const p = this.chance(0.3) ? this.pick(["notes", "./notes", "../x", "~user/x", "~x", "a/b/c", ".", ".."]) : this.text(10, true);
      if (p !== "" && !p.startsWith("/") && p !== "~" && !p.startsWith("~/")) return p;
    }
  }

  /** A path over 4,096 bytes, as given or only after `~/` expands. */
  longPath(home: string): string {
    return this.pick([
      () => `/${"a".repeat(4096)}`,
      () => `/${"é".repeat(2048)}`, // 4,097 bytes
      () => `/${"😀".repeat(1024)}`, // 4,097 bytes
      () => `~/${"b".repeat(4097 - home.length)}`, // within the bound as given, over it once expanded
      () => `/${this.huge(true)}`,
    ])();
  }

  /** Any non-string JSON value. */
  nonString(): unknown {
    for (;;) {
      const v = this.chance(0.1) ? this.deep() : this.json(2);
      if (typeof v !== "string" && v !== null) return v;
    }
  }
}

/** Arguments object with keys in a random order (decoding must not depend on it). */
function shuffled(gen: Gen, entries: Array<[string, unknown]>): Record<string, unknown> {
  for (let i = entries.length - 1; i > 0; i--) {
    const j = gen.int(i + 1);
    [entries[i], entries[j]] = [entries[j]!, entries[i]!];
  }
  const o: Record<string, unknown> = {};
  for (const [k, v] of entries) Object.defineProperty(o, k, { value: v, enumerable: true, writable: true, configurable: true });
  return o;
}

/** One case. The share of each category is fixed; within it everything is random. */
export function makeCase(gen: Gen, world: PathWorld, home: string): FuzzCase {
  const tool: ToolName = gen.chance(0.5) ? "notes_pull" : "notes_commit";
  const commitVerdict = (dir: string): Verdict => (world.pulled.has(dir) ? "OK" : "PULL_REQUIRED");
  const validEntries = (): { entries: Array<[string, unknown]>; dir: string } => {
    const v = gen.pick(world.valid);
    const entries: Array<[string, unknown]> = [];
    if (v.arg !== undefined) entries.push(["path", v.arg]);
    if (tool === "notes_commit") entries.push(["message", gen.validMessage()]);
    return { entries, dir: v.dir };
  };
  const r = gen.rnd();

  if (r < 0.3) {
    // Random JSON with known and unknown fields: anything but an exception or a foreign reason.
    const args = gen.chance(0.8) ? gen.object(0) : gen.json(0);
    return { tool, args, kind: "random", expect: ANY_VERDICT };
  }

  if (r < 0.55) {
    // One structural defect on an otherwise valid call: MALFORMED_INPUT, whatever else the input says.
    const { entries } = validEntries();
    const defects = ["unknown-field", "null-field", "path-type", "path-ill-formed", "path-too-long", "path-relative", "not-an-object"];
    if (tool === "notes_commit") defects.push("message-type", "message-missing");
    const defect = gen.pick(defects);
    const set = (k: string, v: unknown) => {
      const i = entries.findIndex(([key]) => key === k);
      if (i >= 0) entries[i] = [k, v];
      else entries.push([k, v]);
    };
    let args: unknown;
    switch (defect) {
      case "unknown-field": {
        let k = gen.key();
        while (k === "path" || (tool === "notes_commit" && k === "message")) k = gen.key();
        entries.push([k, gen.json(1)]);
        break;
      }
      case "null-field":
        set(tool === "notes_commit" && gen.chance(0.5) ? "message" : "path", null);
        break;
      case "path-type":
        set("path", gen.nonString());
        break;
      case "path-ill-formed":
        set("path", `/${gen.text(3, true)}${gen.pick(ODD_ILL_FORMED.filter((s) => s !== "\u0000"))}${gen.text(3, true)}`);
        break;
      case "path-too-long":
        set("path", gen.longPath(home));
        break;
      case "path-relative":
        set("path", gen.relativePath());
        break;
      case "message-type":
        set("message", gen.nonString());
        break;
      case "message-missing":
        entries.splice(
          entries.findIndex(([k]) => k === "message"),
          1,
        );
        break;
    }
    args = defect === "not-an-object" ? gen.pick([null, [], [shuffled(gen, entries)], "notes", 0, true, false, gen.huge(false)]) : shuffled(gen, entries);
    return { tool, args, kind: `malformed:${defect}`, expect: ["MALFORMED_INPUT"] };
  }

  if (r < 0.7 && tool === "notes_commit") {
    // One defect in the message, valid otherwise: that message reason, before any path or store work.
    const { entries } = validEntries();
    const bad = gen.badMessage();
    const i = entries.findIndex(([k]) => k === "message");
    entries[i] = ["message", bad.message];
    return { tool, args: shuffled(gen, entries), kind: `message:${bad.reason}`, expect: [bad.reason] };
  }

  if (r < 0.8) {
    // A well-formed path the workspace root refuses.
    const pullOnly = tool === "notes_pull" ? world.nestedMissing : [];
    const path = gen.pick([...world.outside, ...world.refusedExisting, ...pullOnly]);
    const entries: Array<[string, unknown]> = [["path", path]];
    if (tool === "notes_commit") entries.push(["message", gen.validMessage()]);
    return { tool, args: shuffled(gen, entries), kind: "outside", expect: ["PATH_OUTSIDE_ROOT"] };
  }

  // Valid: a pull is OK; a commit is OK where a pull came first, PULL_REQUIRED elsewhere.
  const { entries, dir } = validEntries();
  const args = entries.length === 0 && gen.chance(0.5) ? undefined : shuffled(gen, entries);
  return { tool, args, kind: "valid", expect: [tool === "notes_pull" ? "OK" : commitVerdict(dir)], dir };
}

/** A short, printable description of arguments that may be megabytes long or 1,000 levels deep. */
export function describeArgs(args: unknown): string {
  let text: string;
  try {
    text = JSON.stringify(args) ?? "undefined";
  } catch {
    text = String(args);
  }
  return text.length > 200 ? `${text.slice(0, 200)}… (${text.length} chars)` : text;
}
