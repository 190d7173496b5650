/**
 * Git's wildmatch (wildmatch.c), the glob every .gitignore and
 * .gitattributes pattern is matched with: `*`, `**`, `?`, `[...]` with
 * ranges, `[!...]`/`[^...]` and `[[:class:]]`, and backslash escapes.
 * Case-sensitive, as git is where the file system is (core.ignorecase off).
 *
 * Pattern and text are byte strings — one character per byte of their
 * UTF-8 (`toBytes`) — because git compares bytes: a class or `?` meets one
 * byte of a multi-byte character, never the character.
 */

/** With WM_PATHNAME, `*`, `?` and classes never match a `/`, and only `**` between slashes crosses them. */
export const WM_PATHNAME = 1;

const MATCH = 0;
const NOMATCH = 1;
const ABORT_ALL = -1;
const ABORT_TO_STARSTAR = -2;

const SLASH = 0x2f;
const STAR = 0x2a;
const BACKSLASH = 0x5c;

/** The UTF-8 of `text`, one character per byte. */
export function toBytes(text: string): string {
  // Almost every name is ASCII, whose bytes are its characters.
  return /^[\x00-\x7f]*$/.test(text) ? text : Buffer.from(text, "utf8").toString("latin1");
}

/** Byte `i` of `s`, or 0 past its end (C's terminating NUL). */
function at(s: string, i: number): number {
  return i < s.length ? s.charCodeAt(i) : 0;
}

function isGlobSpecial(c: number): boolean {
  return c === STAR || c === 0x3f || c === 0x5b || c === BACKSLASH;
}

export function wildmatch(pattern: string, text: string, flags = 0): boolean {
  return dowild(pattern, 0, text, 0, (flags & WM_PATHNAME) !== 0) === MATCH;
}

function dowild(p: string, pi: number, t: string, ti: number, pathname: boolean): number {
  const start = pi;
  for (; at(p, pi) !== 0; ti++, pi++) {
    let pc = at(p, pi);
    const tc = at(t, ti);
    if (tc === 0 && pc !== STAR) return ABORT_ALL;
    if (pc === BACKSLASH) {
      // A literal next character; a trailing backslash matches nothing.
      pc = at(p, ++pi);
      if (tc !== pc) return NOMATCH;
    } else if (pc === 0x3f) {
      if (pathname && tc === SLASH) return NOMATCH;
    } else if (pc === STAR) {
      const star = matchStar(p, pi, t, ti, pathname, start);
      if (typeof star === "number") return star;
      [pi, ti] = star;
    } else if (pc === 0x5b) {
      const cls = matchClass(p, pi, tc);
      if (cls === ABORT_ALL) return ABORT_ALL;
      if (!cls.matched || (pathname && tc === SLASH)) return NOMATCH;
      pi = cls.end;
    } else if (tc !== pc) {
      return NOMATCH;
    }
  }
  return at(t, ti) !== 0 ? NOMATCH : MATCH;
}

/**
 * A run of stars at `pi`: the result of the whole match, or where the
 * matching goes on (a single star before a slash skips to the next slash of
 * the text, which the caller's loop then consumes with the pattern's).
 */
function matchStar(p: string, pi: number, t: string, ti: number, pathname: boolean, start: number): number | [number, number] {
  let matchSlash: boolean;
  if (at(p, ++pi) === STAR) {
    const before = pi - 2;
    while (at(p, ++pi) === STAR) {}
    const next = at(p, pi);
    if (!pathname) matchSlash = true;
    else if ((before < start || at(p, before) === SLASH) && (next === 0 || next === SLASH || (next === BACKSLASH && at(p, pi + 1) === SLASH))) {
      // `**/` may match no directory at all: "a/**/b" matches "a/b".
      if (next === SLASH && dowild(p, pi + 1, t, ti, pathname) === MATCH) return MATCH;
      matchSlash = true;
    } else matchSlash = false;
  } else matchSlash = !pathname;
  const next = at(p, pi);
  if (next === 0) {
    // A trailing "**" matches everything, a trailing "*" only what has no more slashes.
    return !matchSlash && t.indexOf("/", ti) >= 0 ? NOMATCH : MATCH;
  }
  if (!matchSlash && next === SLASH) {
    const slash = t.indexOf("/", ti);
    return slash < 0 ? NOMATCH : [pi, slash];
  }
  return starLoop(p, pi, t, ti, matchSlash, pathname);
}

/** The star matches more and more of the text, until the rest of the pattern matches the rest. */
function starLoop(p: string, pi: number, t: string, ti: number, matchSlash: boolean, pathname: boolean): number {
  let tc = at(t, ti);
  while (tc !== 0) {
    const pc = at(p, pi);
    if (!isGlobSpecial(pc)) {
      // A literal after the star: what comes before it belongs to the star.
      while ((tc = at(t, ti)) !== 0 && (matchSlash || tc !== SLASH)) {
        if (tc === pc) break;
        ti++;
      }
      if (tc !== pc) return NOMATCH;
    }
    const matched = dowild(p, pi, t, ti, pathname);
    if (matched !== NOMATCH) {
      if (!matchSlash || matched !== ABORT_TO_STARSTAR) return matched;
    } else if (!matchSlash && tc === SLASH) return ABORT_TO_STARSTAR;
    tc = at(t, ++ti);
  }
  return ABORT_ALL;
}

/** The POSIX classes, in the C locale (git's own ctype: ASCII only). */
const CLASSES: Record<string, (c: number) => boolean> = {
  alnum: (c) => isDigit(c) || isAlpha(c),
  alpha: (c) => isAlpha(c),
  blank: (c) => c === 0x20 || c === 0x09,
  cntrl: (c) => c < 0x20 || c === 0x7f,
  digit: (c) => isDigit(c),
  graph: (c) => c > 0x20 && c < 0x7f,
  lower: (c) => c >= 0x61 && c <= 0x7a,
  print: (c) => c >= 0x20 && c < 0x7f,
  punct: (c) => c > 0x20 && c < 0x7f && !isDigit(c) && !isAlpha(c),
  space: (c) => c === 0x20 || c === 0x09 || c === 0x0a || c === 0x0d,
  upper: (c) => c >= 0x41 && c <= 0x5a,
  xdigit: (c) => isDigit(c) || (c >= 0x41 && c <= 0x46) || (c >= 0x61 && c <= 0x66),
};

function isDigit(c: number): boolean {
  return c >= 0x30 && c <= 0x39;
}

function isAlpha(c: number): boolean {
  return (c >= 0x41 && c <= 0x5a) || (c >= 0x61 && c <= 0x7a);
}

/**
 * The bracket expression at `pi` against the text byte `tc`: whether it
 * matched, and the index of its closing `]`; ABORT_ALL when it is never
 * closed or names no known class. The first character after `[` (or
 * `[!`) is a member even when it is `]`.
 */
function matchClass(p: string, pi: number, tc: number): { matched: boolean; end: number } | typeof ABORT_ALL {
  let pc = at(p, ++pi);
  if (pc === 0x5e) pc = 0x21; // "^" negates as "!" does
  const negated = pc === 0x21;
  if (negated) pc = at(p, ++pi);
  let prev = 0;
  let matched = false;
  do {
    if (pc === 0) return ABORT_ALL;
    if (pc === BACKSLASH) {
      pc = at(p, ++pi);
      if (pc === 0) return ABORT_ALL;
      if (tc === pc) matched = true;
    } else if (pc === 0x2d && prev !== 0 && at(p, pi + 1) !== 0 && at(p, pi + 1) !== 0x5d) {
      pc = at(p, ++pi);
      if (pc === BACKSLASH) {
        pc = at(p, ++pi);
        if (pc === 0) return ABORT_ALL;
      }
      if (tc <= pc && tc >= prev) matched = true;
      pc = 0; // a range's end starts no new range
    } else if (pc === 0x5b && at(p, pi + 1) === 0x3a) {
      const named = namedClass(p, pi, tc);
      if (named === ABORT_ALL) return ABORT_ALL;
      pi = named.end;
      if (named.matched) matched = true;
      pc = named.literal ? 0x5b : 0;
    } else if (tc === pc) matched = true;
    prev = pc;
    pc = at(p, ++pi);
  } while (pc !== 0x5d);
  return { matched: matched !== negated, end: pi };
}

/**
 * `[:name:]` at `pi` inside a bracket expression. Without its closing
 * `:]` the `[` is an ordinary member (`literal`), and matching goes on
 * right after it.
 */
function namedClass(p: string, pi: number, tc: number): { matched: boolean; end: number; literal: boolean } | typeof ABORT_ALL {
  const s = pi + 2;
  let q = s;
  while (at(p, q) !== 0 && at(p, q) !== 0x5d) q++;
  if (at(p, q) === 0) return ABORT_ALL;
  if (q - s - 1 < 0 || at(p, q - 1) !== 0x3a) return { matched: tc === 0x5b, end: pi, literal: true };
  const test = CLASSES[p.slice(s, q - 1)];
  if (test === undefined || !Object.hasOwn(CLASSES, p.slice(s, q - 1))) return ABORT_ALL;
  return { matched: test(tc), end: q, literal: false };
}
