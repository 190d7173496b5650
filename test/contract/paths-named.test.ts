/**
 * A comment or a doc that names a file of src/ or test/ names one that
 * exists: a pointer left behind by a move sends the next reader to nothing.
 * The comments of every file under src/ and test/ are read (by TypeScript's
 * own scanner, so a string or a regular expression is never taken for one),
 * and the whole text of the docs (docs/, the README and each part's README
 * under src/). A name is a run of path characters holding a slash and
 * ending in a file's extension, or a directory's name ending in a slash
 * with at least two parts (`merge/xdiff/`); one that is part of a URL is
 * not ours. It is found where it is written from: from the naming file's
 * folder or one above it, from the repository's root, or from the folders
 * the code and the docs name files from without saying so (src/,
 * src/engine/, src/surfaces/). A name with `*` is a pattern, found when
 * some file matches it.
 */
import { expect, test } from "bun:test";
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, relative } from "node:path";
import ts from "typescript";

const root = join(import.meta.dir, "../..");

function walk(dir: string): string[] {
  return readdirSync(dir).flatMap((n) => {
    const p = join(dir, n);
    return statSync(p).isDirectory() ? walk(p) : [relative(root, p)];
  });
}

/** The folders a name written without its start is read from, besides the naming file's own and those above it. */
const IMPLIED = ["src", "src/engine", "src/surfaces"];

const K = ts.SyntaxKind;

/** Tokens after which a slash divides; after any other, it starts a regular expression. */
const VALUE_ENDS = new Set([
  K.Identifier,
  K.PrivateIdentifier,
  K.NumericLiteral,
  K.BigIntLiteral,
  K.StringLiteral,
  K.NoSubstitutionTemplateLiteral,
  K.TemplateTail,
  K.RegularExpressionLiteral,
  K.CloseParenToken,
  K.CloseBracketToken,
  K.CloseBraceToken,
  K.ThisKeyword,
  K.SuperKeyword,
  K.TrueKeyword,
  K.FalseKeyword,
  K.NullKeyword,
  K.PlusPlusToken,
  K.MinusMinusToken,
  K.ExclamationToken,
]);

/**
 * The comments of a TypeScript file, each with the line it starts on, as
 * TypeScript's scanner reads them: a slash where a value is expected is
 * rescanned as a regular expression, and the brace that closes a
 * template's `${` as the template's rest, so neither is taken for a
 * comment. (Scanning, not parsing: a parse of every file costs seconds.)
 */
function commentsOf(text: string): Array<{ line: number; text: string }> {
  const scanner = ts.createScanner(ts.ScriptTarget.Latest, false, ts.LanguageVariant.Standard, text);
  // Lines counted as the scan goes: up to `at`, `line` lines began.
  let at = 0;
  let line = 1;
  const braces: boolean[] = [];
  const found: Array<{ line: number; text: string }> = [];
  let previous: ts.SyntaxKind = K.Unknown;
  for (let kind = scanner.scan(); kind !== K.EndOfFileToken; kind = scanner.scan()) {
    if ((kind === K.SlashToken || kind === K.SlashEqualsToken) && !VALUE_ENDS.has(previous)) kind = scanner.reScanSlashToken();
    else if (kind === K.TemplateHead || kind === K.OpenBraceToken) braces.push(kind === K.TemplateHead);
    else if (kind === K.CloseBraceToken && braces.pop() === true) {
      kind = scanner.reScanTemplateToken(false);
      if (kind === K.TemplateMiddle) braces.push(true);
    }
    if (kind === K.SingleLineCommentTrivia || kind === K.MultiLineCommentTrivia) {
      for (const start = scanner.getTokenStart(); at < start; at++) if (text.charCodeAt(at) === 10) line++;
      found.push({ line, text: scanner.getTokenText() });
    } else if (kind !== K.WhitespaceTrivia && kind !== K.NewLineTrivia) previous = kind;
  }
  return found;
}

const NAME = /(?<![\w./:@~-])(?:\.{1,2}\/)*[\w*-][\w.*-]*(?:\/[\w*-][\w.*-]*)*\/?/g;
const FILE = /\/.*\.(?:ts|md|js|json|sh)$/;

/**
 * Whether a name points into src/ or test/: it starts there, or at one of
 * their folders (`engine/`, `checkout/`, `cli/`, `e2e/`…), or is a module
 * named from the file itself (starting with `./` or `../`, ending in
 * `.ts`). A notebook's paths in the examples (`shared/plan.md`,
 * `agents/alice/`) start nowhere of ours.
 */
function ours(name: string): boolean {
  const bare = name.replace(/^(?:\.{1,2}\/)+/, "");
  if (bare !== name) return name.endsWith(".ts");
  const first = bare.slice(0, bare.indexOf("/"));
  return first === "src" || first === "test" || FOLDERS.has(first);
}

/** The names of files or folders of src/ or test/ in `text`: a file's with its extension, a folder's ending in a slash, with two parts at least. */
function namesIn(text: string): string[] {
  return [...text.matchAll(NAME)]
    .map((m) => m[0].replace(/\.+$/, ""))
    .filter((name) => FILE.test(name) || (name.endsWith("/") && name.slice(0, -1).includes("/")))
    .filter(ours);
}

/** Whether `name`, written in `file`, names something that exists. */
function exists(name: string, file: string): boolean {
  const bases = [...IMPLIED, ""];
  for (let dir = dirname(file); dir !== "." && dir !== ""; dir = dirname(dir)) bases.push(dir);
  if (!name.includes("*")) return bases.some((base) => existsSync(join(root, base, name)));
  const pattern = new RegExp(`^${name.replace(/[.+?^${}()|[\]\\]/g, "\\$&").replace(/\*/g, "[^/]*")}$`);
  return bases.some((base) => everything.some((f) => pattern.test(relative(join(root, base), join(root, f)))));
}

const everything = [...walk(join(root, "src")), ...walk(join(root, "test")), ...walk(join(root, "docs"))];
/** The names of the folders under src/ and test/. */
const FOLDERS = new Set(everything.filter((f) => !f.startsWith("docs/")).flatMap((f) => dirname(f).split("/")));
const code = everything.filter((f) => (f.startsWith("src/") || f.startsWith("test/")) && f.endsWith(".ts"));
const docs = [...everything.filter((f) => f.endsWith(".md")), "README.md"];

/** Each name in `file` that names nothing, as "file:line name". */
function missingIn(file: string): string[] {
  const text = readFileSync(join(root, file), "utf8");
  const parts = file.endsWith(".ts") ? commentsOf(text) : text.split("\n").map((line, i) => ({ line: i + 1, text: line }));
  return parts.flatMap((part) =>
    part.text.split("\n").flatMap((line, i) =>
      namesIn(line)
        .filter((name) => !exists(name, file))
        .map((name) => `${file}:${part.line + i} ${name}`),
    ),
  );
}

test("every src/ or test/ path a comment or a doc names exists", () => {
  expect([...code, ...docs].flatMap(missingIn)).toEqual([]);
});

test("the check sees a stale name, and only in a comment", () => {
  expect(namesIn("see src/engine/xdiff/unified.ts, engine/xdiff/ and test/e2e/*.test.ts.")).toEqual([
    "src/engine/xdiff/unified.ts",
    "engine/xdiff/",
    "test/e2e/*.test.ts",
  ]);
  expect(namesIn("https://example.com/src/a.ts and and/or")).toEqual([]);
  const text = [
    'const s = "src/nothing.ts"; // names src/none.ts',
    "/** and checkout/gone.ts */",
    "const r = x.split(/\\/\\/ src\\/x.ts/);",
    "const t = `${a.map((b) => { return b; })} // src/in-template.ts ${c}`; /* engine/after.ts */",
  ].join("\n");
  expect(commentsOf(text).map((c) => `${c.line} ${namesIn(c.text).join(" ")}`)).toEqual(["1 src/none.ts", "2 checkout/gone.ts", "4 engine/after.ts"]);
  expect(exists("checkout/state.ts", "docs/design.md")).toBe(true);
  expect(exists("engine/xdiff/", "src/engine/git/x.ts")).toBe(false);
  expect(exists("test/e2e/*.test.ts", "docs/design.md")).toBe(true);
});
