/**
 * Names and text on their way to a terminal (docs/cli.md, "Names in human
 * output"). A file name is the user's data: `evil\e[31m.md` would colour the
 * terminal, a BEL ring it, a newline forge a line of output. Human output
 * therefore quotes names the way git does with `core.quotePath=false`: a
 * name that holds a control character, `"` or `\` is printed in double
 * quotes with C escapes (`\a \b \t \n \v \f \r \" \\`, octal bytes for the
 * other controls), and any other name — UTF-8 included — as it is, so that
 * non-ASCII names stay readable. Unlike git, the C1 controls (U+0080–U+009F)
 * are escaped too, since some terminals act on them, and so are the
 * characters that do not print but change what is shown: Unicode's format
 * characters (category Cf: the bidi controls U+202A–U+202E and
 * U+2066–U+2069, the marks U+200E and U+200F, zero-width characters) and
 * the line and paragraph separators U+2028 and U+2029. An override turns
 * `evil\u202Etxt.md` into what reads as `evildm.txt`, and an invisible
 * character makes two names look the same; escaped as octal bytes like the
 * C1 controls (`\342\200\256`), each shows where it is. `--json` is never
 * quoted.
 */

const NAMED: Record<string, string> = {
  "\x07": "\\a",
  "\b": "\\b",
  "\t": "\\t",
  "\n": "\\n",
  "\v": "\\v",
  "\f": "\\f",
  "\r": "\\r",
  '"': '\\"',
  "\\": "\\\\",
};

/** C0 controls, DEL and the C1 controls (what a terminal may act on), format characters and U+2028/U+2029 (what it shows wrongly). */
const CONTROL = /[\u0000-\u001f\u007f-\u009f\p{Cf}\u2028\u2029]/u;
const CONTROL_ALL = /[\u0000-\u001f\u007f-\u009f\p{Cf}\u2028\u2029]/gu;
const NEEDS_QUOTES = /[\u0000-\u001f\u007f-\u009f\p{Cf}\u2028\u2029"\\]/u;
const QUOTED_ALL = /[\u0000-\u001f\u007f-\u009f\p{Cf}\u2028\u2029"\\]/gu;

/** Octal escapes of a character's UTF-8 bytes, as git writes them (`\033`, `\302\233`). */
function octal(ch: string): string {
  return Array.from(Buffer.from(ch, "utf8"), (b) => `\\${b.toString(8).padStart(3, "0")}`).join("");
}

function escape(ch: string): string {
  return NAMED[ch] ?? octal(ch);
}

/** A path as git prints it with core.quotePath=false (plus C1 controls and invisible characters, see above). */
export function quotePath(path: string): string {
  if (!NEEDS_QUOTES.test(path)) return path;
  return `"${path.replace(QUOTED_ALL, escape)}"`;
}

/**
 * Free text that may embed a name (a message, a detail, a cause, an agent's
 * name): its control and invisible characters escaped so it stays one
 * harmless line that shows what it holds. Quotes and backslashes are left
 * alone; the names themselves are listed quoted.
 */
export function escapeControls(text: string): string {
  if (!CONTROL.test(text)) return text;
  return text.replace(CONTROL_ALL, escape);
}
