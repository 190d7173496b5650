/**
 * What text leaving the process must not carry (mcp-tools.md, "No error text
 * or data contains…"; docs/logging.md). The scrubber replaces the values the
 * product knows to be secret or internal, not whatever is shaped like them: a
 * caller's notebook may hold `packs/x.md`, a directory `probe/` or a file
 * named with 40 hex digits, and such names are the caller's own data, which
 * an error's text repeats as it is, as its `files` do.
 *
 * Every text (results, start-up diagnostics, log records) loses credentials
 * (`scrubCredentials`): the process's own, known at run time, wherever they
 * appear; and the two kinds whose shape cannot be anything else — AWS access
 * key ids and URL user information — as the defence for credentials the
 * process does not hold itself (a profile's, one a store error quotes). A
 * name that merely contains such a shape is rare enough, and a credential
 * leaked costly enough, that these two stay patterns.
 *
 * Text for the caller (`scrubText`: an error's message, a start-up
 * diagnostic) also loses the private root, as a path, and the values the
 * product makes — store keys and object ids — in the exact form the product
 * writes them and only where one stands as a value of its own: a pack key
 * `packs/<64 hex>.pack`, a proposal key, a probe key `probe/<16 hex>/…`
 * (each after any key prefix), a 40- or 64-hex id. Part of a longer name
 * (`<40 hex>.md`, `/home/me/packs/x.md`) is none of these, and neither is
 * the text of a value the caller gave (an error's files, the other values
 * of the caller's it names — DomainError's `named`, a refusal's — and the
 * path sets), whatever it looks like. Log records keep store keys, ids and local paths:
 * the operator needs them.
 */

/** What the process knows must not leave it. */
export interface Confidential {
  /** Credentials the process holds: replaced wherever they appear, even inside a longer string. */
  credentials?: readonly string[];
  /** The private root (and any other private path): replaced where it is a path or leads one. */
  privatePaths?: readonly string[];
  /** The caller's own values in the text (file paths, path-set entries): never taken for an internal value. */
  callerValues?: readonly string[];
}

const CREDENTIAL_SHAPES: Array<[RegExp, string]> = [
  // URL user information: scheme://user:password@host
  [/([a-z][a-z0-9+.-]*:\/\/)[^/\s@]+@/gi, "$1<redacted>@"],
  // AWS access key ids (long-term AKIA, temporary ASIA, and the other prefixes of unique ids).
  [/\b(?:AKIA|ASIA|AGPA|AIDA|AROA|ANPA|ANVA|AIPA)[A-Z0-9]{16,}\b/g, "<access-key-id>"],
];

// A value of its own: after the start, white space, an opening quote or bracket,
// a separator or `=`; before the end, white space, a closing quote or bracket, a
// separator, or a full stop (or ! ?) that ends the sentence. Never inside a name.
const CLOSING = String.raw`\s"'\x60)\]}>,;:`;
const BEFORE = String.raw`(?<=^|[\s"'\x60(\[{<,;:=])`;
const AFTER = `(?=$|[${CLOSING}]|[.!?](?:$|[${CLOSING}]))`;
// A private path ends where a name ends, or goes on below it.
const PATH_END = String.raw`(?=$|[/\\]|[${CLOSING}]|[.!?](?:$|[${CLOSING}]))`;
// A key prefix of the store (S3's `team/notes/`): relative segments.
const KEY_PREFIX = String.raw`(?:[^\s/"'\x60()\[\]{}<>,;:=]+/)*`;

/** The product's store keys and object ids (docs/storage-protocol.md), in the forms it writes, and what replaces each. */
const INTERNAL_VALUES: Array<[string, string]> = [
  [`${KEY_PREFIX}packs/[0-9a-f]{64}\\.pack`, "<pack>"],
  [`${KEY_PREFIX}proposals/[0-9a-f]{32}`, "<proposal>"],
  [`${KEY_PREFIX}probe/[0-9a-f]{16}(?:/[a-z]+)?`, "<probe>"],
  // Git object ids (SHA-1) and SHA-256 digests.
  ["[0-9a-f]{64}|[0-9a-f]{40}", "<id>"],
];
const INTERNAL = new RegExp(`${BEFORE}(?:${INTERNAL_VALUES.map(([form]) => `(${form})`).join("|")})${AFTER}`, "gi");

/** Longest first, so that a value is replaced before a shorter one inside it. */
const longestFirst = (values: readonly string[] | undefined, min: number) =>
  [...(values ?? [])].filter((v) => v.length >= min).sort((a, b) => b.length - a.length);

/** Credentials only: the text of every record and message (see above). */
export function scrubCredentials(text: string, credentials: readonly string[] = []): string {
  let out = text;
  for (const credential of longestFirst(credentials, 4)) out = out.split(credential).join("<redacted>");
  for (const [pattern, replacement] of CREDENTIAL_SHAPES) out = out.replace(pattern, replacement);
  return out;
}

/** Text for the caller: credentials, private paths, store keys and object ids (see above). */
export function scrubText(text: string, confidential: Confidential = {}): string {
  let out = scrubCredentials(text, confidential.credentials);
  for (const path of longestFirst(confidential.privatePaths, 2)) {
    // The path itself, or one below it: neither `/state/slivingdoc-old` nor `/mnt/state/slivingdoc` is.
    out = out.replace(new RegExp(`${BEFORE}${escapeRegExp(path)}${PATH_END}`, "g"), "<private>");
  }
  const callers = spans(out, confidential.callerValues ?? []);
  return out.replace(INTERNAL, (match: string, ...groups: unknown[]) => {
    const offset = groups[INTERNAL_VALUES.length] as number;
    if (callers.some(([from, to]) => offset < to && offset + match.length > from)) return match;
    return INTERNAL_VALUES[groups.findIndex((g) => g !== undefined)]![1];
  });
}

/** Where each of `values` occurs in `text`, as [from, to) offsets. */
function spans(text: string, values: readonly string[]): Array<[number, number]> {
  const found: Array<[number, number]> = [];
  for (const value of values) {
    if (value === "") continue;
    for (let at = text.indexOf(value); at !== -1; at = text.indexOf(value, at + 1)) found.push([at, at + value.length]);
  }
  return found;
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}
