/**
 * A unified diff as C git prints it (`git diff --no-renames
 * --no-indent-heuristic`, default prefixes a/ and b/, three lines of
 * context): the `diff --git` header, `new file mode` / `deleted file mode`,
 * the `index` line with seven-digit blob ids, `---`/`+++`, and hunks whose
 * headers carry git's default function name (the nearest line above that
 * starts with a letter, `_` or `$`, cut to 80 bytes). The line diff is the
 * port of git's xdiff (../xdiff/diff.ts), so hunks agree with git's.
 * test/e2e/history.test.ts compares this with C git's output.
 */
import { diffScript, splitLines } from "../xdiff/diff.ts";

const CONTEXT = 3;
const NULL_ID = "0000000";

const C_ESCAPES: Record<string, string> = { "\x07": "\\a", "\b": "\\b", "\t": "\\t", "\n": "\\n", "\v": "\\v", "\f": "\\f", "\r": "\\r", '"': '\\"', "\\": "\\\\" };

/** A prefixed name as git writes it with core.quotePath=false: in C quotes when it holds a control character, `"` or `\\`. */
function gitName(prefix: string, path: string): string {
  const name = prefix + path;
  if (!/[\u0000-\u001f\u007f"\\]/.test(name)) return name;
  let out = "";
  for (const ch of name) {
    const code = ch.charCodeAt(0);
    if (C_ESCAPES[ch] !== undefined) out += C_ESCAPES[ch];
    else if (code < 0x20 || code === 0x7f) out += `\\${code.toString(8).padStart(3, "0")}`;
    else out += ch;
  }
  return `"${out}"`;
}

function label(prefix: string, path: string): string {
  // git ends a name holding a space with a tab in the ---/+++ lines.
  const name = gitName(prefix, path);
  return `${name}${name.includes(" ") ? "\t" : ""}`;
}

/** A file's lines as git emits them, one per record, with the no-newline mark where the last has none. */
function line(mark: string, rec: string): string {
  return rec.endsWith("\n") ? `${mark}${rec}` : `${mark}${rec}\n\\ No newline at end of file\n`;
}

/** git's default funcname: a line starting with a letter, `_` or `$`, its first 80 bytes, trailing white space dropped. */
function funcName(rec: string): string | null {
  const c = rec.charCodeAt(0);
  if (!((c >= 65 && c <= 90) || (c >= 97 && c <= 122) || rec[0] === "_" || rec[0] === "$")) return null;
  let bytes = Buffer.from(rec, "utf8");
  if (bytes.length > 80) {
    bytes = bytes.subarray(0, 80);
    // Not cut inside a character (git would cut the bytes; names that long are rare).
    while (bytes.length > 0 && (bytes[bytes.length - 1]! & 0xc0) === 0x80) bytes = bytes.subarray(0, bytes.length - 1);
    if (bytes.length > 0 && bytes[bytes.length - 1]! >= 0xc0) bytes = bytes.subarray(0, bytes.length - 1);
  }
  return bytes.toString("utf8").replace(/[ \t\n\v\f\r]+$/, "");
}

function range(start: number, count: number): string {
  return count === 1 ? `${start}` : `${count === 0 ? start - 1 : start},${count}`;
}

/** The hunks between two texts (git's xdl_emit_diff with three lines of context). */
export function hunks(a: string, b: string): string {
  const recs1 = splitLines(a);
  const recs2 = splitLines(b);
  const { script } = diffScript(recs1, recs2);
  const out: string[] = [];
  let funcLine = "";
  let funcPrev = -1;
  for (let i = 0; i < script.length; ) {
    // Changes closer than twice the context share a hunk.
    let j = i;
    while (j + 1 < script.length && script[j + 1]!.i1 - (script[j]!.i1 + script[j]!.chg1) <= 2 * CONTEXT) j++;
    const first = script[i]!;
    const last = script[j]!;
    const s1 = Math.max(first.i1 - CONTEXT, 0);
    const s2 = Math.max(first.i2 - CONTEXT, 0);
    const after = Math.min(CONTEXT, recs1.length - (last.i1 + last.chg1), recs2.length - (last.i2 + last.chg2));
    const e1 = last.i1 + last.chg1 + after;
    const e2 = last.i2 + last.chg2 + after;
    for (let l = s1 - 1; l > funcPrev && l >= 0; l--) {
      const name = funcName(recs1[l]!);
      if (name !== null) {
        funcLine = name;
        break;
      }
    }
    funcPrev = s1 - 1;
    out.push(`@@ -${range(s1 + 1, e1 - s1)} +${range(s2 + 1, e2 - s2)} @@${funcLine === "" ? "" : ` ${funcLine}`}\n`);
    let p1 = s1;
    let p2 = s2;
    for (let k = i; k <= j; k++) {
      const ch = script[k]!;
      for (; p1 < ch.i1; p1++, p2++) out.push(line(" ", recs1[p1]!));
      for (let n = 0; n < ch.chg1; n++) out.push(line("-", recs1[p1++]!));
      for (let n = 0; n < ch.chg2; n++) out.push(line("+", recs2[p2++]!));
    }
    for (; p1 < e1; p1++, p2++) out.push(line(" ", recs1[p1]!));
    i = j + 1;
  }
  return out.join("");
}

export interface FilePatchInput {
  path: string;
  /** Blob ids (null: absent on that side) and texts. */
  before: string | null;
  after: string | null;
  a: string;
  b: string;
}

/** One file's part of a patch, headers included. */
export function filePatch(f: FilePatchInput): string {
  const head = [`diff --git ${gitName("a/", f.path)} ${gitName("b/", f.path)}\n`];
  const short = (oid: string | null) => (oid === null ? NULL_ID : oid.slice(0, 7));
  if (f.before === null) head.push("new file mode 100644\n", `index ${short(null)}..${short(f.after)}\n`);
  else if (f.after === null) head.push("deleted file mode 100644\n", `index ${short(f.before)}..${short(null)}\n`);
  else head.push(`index ${short(f.before)}..${short(f.after)} 100644\n`);
  const body = hunks(f.a, f.b);
  // An empty file added or removed has no hunks and no ---/+++ lines.
  if (body === "") return head.join("");
  head.push(`--- ${f.before === null ? "/dev/null" : label("a/", f.path)}\n`, `+++ ${f.after === null ? "/dev/null" : label("b/", f.path)}\n`);
  return head.join("") + body;
}
