/**
 * Names and text on their way to a terminal (docs/cli.md, "Names in human
 * output"). A file name is the user's data: `evil\e[31m.md` would colour the
 * terminal, a BEL ring it, a newline forge a line of output. Human output
 * therefore quotes names the way git does with `core.quotePath=false`: a
 * name that holds a control character, `"` or `\` is printed in double
 * quotes with C escapes (`\a \b \t \n \v \f \r \" \\`, octal bytes for the
 * other controls), and any other name — UTF-8 included — as it is, so that
 * non-ASCII names stay readable. Unlike git, the C1 controls (U+0080–U+009F)
 * are escaped too: some terminals act on them. `--json` is never quoted.
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

/** C0 controls, DEL and the C1 controls: what a terminal may act on. */
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/;
const CONTROL_ALL = /[\u0000-\u001f\u007f-\u009f]/g;
const NEEDS_QUOTES = /[\u0000-\u001f\u007f-\u009f"\\]/;
const QUOTED_ALL = /[\u0000-\u001f\u007f-\u009f"\\]/g;

/** Octal escapes of a character's UTF-8 bytes, as git writes them (`\033`, `\302\233`). */
function octal(ch: string): string {
  return Array.from(Buffer.from(ch, "utf8"), (b) => `\\${b.toString(8).padStart(3, "0")}`).join("");
}

function escape(ch: string): string {
  return NAMED[ch] ?? octal(ch);
}

/** A path as git prints it with core.quotePath=false (plus C1 controls, see above). */
export function quotePath(path: string): string {
  if (!NEEDS_QUOTES.test(path)) return path;
  return `"${path.replace(QUOTED_ALL, escape)}"`;
}

/**
 * Free text that may embed a name (a message, a detail, a cause): its
 * control characters escaped so it stays one harmless line. Quotes and
 * backslashes are left alone; the names themselves are listed quoted.
 */
export function escapeControls(text: string): string {
  if (!CONTROL.test(text)) return text;
  return text.replace(CONTROL_ALL, escape);
}
