/**
 * Generated .gitignore / .gitattributes files and paths for the
 * differential tests against C git: small alphabets, so that patterns and
 * paths meet often, and every construct git's pattern rules treat apart.
 */
import fc from "fast-check";

/** Names that paths are made of: the patterns' pieces below meet them often. */
export const NAMES = ["a", "b", "ab", "a.md", "b.md", "x.txt", ".h", "a b", "é.md", "[a]", "log", "a~"];
export const DIRS = ["", "a", "b", "a/b", "log", "a/a", "b/log"];

/** One glob piece, some of which are literal names. */
const piece = fc.constantFrom(
  "a",
  "b",
  "ab",
  "md",
  ".md",
  "log",
  "*",
  "**",
  "?",
  "[ab]",
  "[!a]",
  "[^b]",
  "[a-c]",
  "[[:alpha:]]",
  "[[:punct:]]",
  "[]a]",
  "\\*",
  "\\a",
  ".",
  "é",
  "\\ ",
  "~",
  "[",
);

/** A segment close to the names paths are made of, so that it often matches one. */
const nearName = fc.oneof(
  fc.constantFrom(...NAMES),
  fc.constantFrom("*", "**", "*.md", "a*", "*b", "?", "??", "[ab]", "[!a]*", "*.*", ".*", "*~", "\\[a]", "a\\ b", "[[:alpha:]]*"),
  fc.tuple(fc.constantFrom(...NAMES), fc.nat(4)).map(([n, i]) => (i < n.length ? `${n.slice(0, i)}?${n.slice(i + 1)}` : `${n}*`)),
);

/** A pattern: pieces joined within segments, segments by slashes, with leading and trailing slashes at times. */
export const pattern = fc
  .tuple(
    fc.oneof({ weight: 3, arbitrary: fc.constant(1) }, { weight: 2, arbitrary: fc.integer({ min: 2, max: 3 }) }).chain((n) =>
      fc.array(fc.oneof({ weight: 3, arbitrary: nearName.map((s) => [s]) }, { weight: 1, arbitrary: fc.array(piece, { minLength: 1, maxLength: 3 }) }), {
        minLength: n,
        maxLength: n,
      }),
    ),
    fc.constantFrom("", "", "", "", "/", "**/"),
    fc.constantFrom("", "", "", "", "", "/", "/**"),
  )
  .map(([segments, lead, trail]) => lead + segments.map((s) => s.join("")).join("/") + trail);

/** A path of one to three segments, made of the names above. */
export const path = fc
  .array(fc.oneof({ weight: 2, arbitrary: fc.constantFrom("a", "b", "a.md") }, { weight: 3, arbitrary: fc.constantFrom(...NAMES) }), { minLength: 1, maxLength: 3 })
  .map((s) => s.join("/"));
