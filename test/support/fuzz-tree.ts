/**
 * Seeded generators of notebook trees for test/engine/fuzz-trees.test.ts:
 * names and contents the notebook must carry byte for byte, and entries it
 * must refuse by name. The expected refusal list is computed here from what
 * was created, independently of the scanner.
 */
import { mkdirSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import type { Rng } from "./fuzz-input.ts";
import { Choices } from "./seeded.ts";

export class TreeGen extends Choices {

  /** One path segment that is a valid notebook name: valid UTF-8, not `.git`, at most 255 bytes. */
  segment(): string {
    const r = this.rnd();
    if (r < 0.05) {
      // Exactly 255 bytes, in one-, two- and four-byte characters.
      return this.pick(["a".repeat(255), `${"é".repeat(127)}a`, `${"😀".repeat(63)}abc`, `${"中".repeat(85)}`]);
    }
    if (r < 0.1) return this.pick([".notes", ".hidden.md", "..double", "...", ".gitignore", ".github", "x.git", ".git2", ".gitx"]);
    if (r < 0.2) return this.pick(["caf\u00e9.md", "cafe\u0301.md"]); // NFC and NFD: two names
    const pieces = [
      "notes",
      "plan",
      "a",
      "B",
      "with space",
      " lead",
      "trail ",
      "😀",
      "👩‍👩‍👧‍👦",
      "\u202e",
      "\u200f",
      "\ufeff",
      "e\u0301",
      "\u00e9",
      "ñ",
      "中文",
      "עברית",
      "نص",
      "\ufffd",
      "#",
      "%20",
      "*",
      "?",
      "[x]",
      "\\",
      "~",
      "-",
      "'",
      '"',
      "\t",
      "\n",
      "\r",
      "\u00a0",
      "\u0001",
      "\u007f",
      ".md",
      ".txt",
    ];
    let s = "";
    const n = 1 + this.int(4);
    for (let i = 0; i < n; i++) s += this.pick(pieces);
    if (s === "." || s === ".." || s.toLowerCase() === ".git" || s.startsWith(".slivingdoc-partial-")) s = `n${s}`;
    return s;
  }

  /** A relative path of 1 to `maxDepth` segments. */
  path(maxDepth: number): string {
    const depth = this.chance(0.1) ? 10 + this.int(maxDepth - 9) : 1 + this.int(3);
    return Array.from({ length: depth }, () => this.segment()).join("/");
  }

  /** Valid UTF-8 text without U+0000 and without complete conflict-marker blocks. */
  content(): Uint8Array {
    const r = this.rnd();
    if (r < 0.08) return new Uint8Array(0);
    const eol = this.pick(["\n", "\r\n", "\r", "mixed"]);
    const lines: string[] = [];
    const n = this.int(30);
    for (let i = 0; i < n; i++) lines.push(this.line());
    if (this.chance(0.15)) lines.push(this.longLine());
    let text = "";
    for (const [i, l] of lines.entries()) {
      const end = eol === "mixed" ? this.pick(["\n", "\r\n", "\r"]) : eol;
      text += l + (i === lines.length - 1 && this.chance(0.3) ? "" : end); // sometimes no final newline
    }
    if (this.chance(0.15)) text = `\ufeff${text}`; // a BOM, kept as bytes
    return new TextEncoder().encode(text);
  }

  line(): string {
    const pieces = [
      "word",
      " ",
      "  ",
      "\t",
      "é",
      "e\u0301",
      "😀",
      "👩‍👩‍👧‍👦",
      "中文",
      "עברית",
      "\u202e",
      "\u200f",
      "\ufeff",
      "\u2028",
      "\u2029",
      "\u0085",
      "\ufffd",
      "\uffff",
      "\u{10ffff}",
      "\u0001",
      "\u001b[0m",
      "\u007f",
      "=======",
      "<<<<<<",
      "- [ ] todo",
      "# heading",
      "\\",
    ];
    let s = "";
    const n = this.int(8);
    for (let i = 0; i < n; i++) s += this.pick(pieces);
    return s;
  }

  /** One line of about 100 KB. */
  longLine(): string {
    const unit = this.pick(["x", "é", "😀", "ab ", "中"]);
    return unit.repeat(Math.ceil(100_000 / Buffer.byteLength(unit)));
  }

  /** Content that is not UTF-8 text: a U+0000, or an invalid byte sequence somewhere. */
  badContent(): Uint8Array {
    const good = Buffer.from(this.content());
    const bad = this.pick([
      [0x00],
      [0xff],
      [0xfe],
      [0xc3, 0x28], // a lead byte without its continuation
      [0x80], // a lone continuation byte
      [0xc0, 0xaf], // an overlong "/"
      [0xed, 0xa0, 0x80], // an encoded surrogate
      [0xf4, 0x90, 0x80, 0x80], // beyond U+10FFFF
      [0xe2, 0x82], // truncated
      [0xf0, 0x9f, 0x98], // truncated emoji
      [0x63, 0x61, 0x66, 0xe9], // "café" in Latin-1
    ]);
    const at = this.int(good.length + 1);
    // Insert at a character boundary, so only the inserted bytes are wrong.
    let cut = at;
    while (cut < good.length && (good[cut]! & 0xc0) === 0x80) cut++;
    return Buffer.concat([good.subarray(0, cut), Buffer.from(bad), good.subarray(cut)]);
  }
}

/** An entry the notebook must refuse, as created on disk, and the path the refusal must name. */
export interface InvalidEntry {
  kind: string;
  /** Absolute path on disk (a Buffer for a name that is not UTF-8). */
  disk: string | Buffer;
  /** The notebook path the refusal names. */
  reported: string;
}

/**
 * Create one invalid entry under `root` at the relative directory `dir`
 * ("" or "a/b/"), named `name` (ignored for the kinds that make their own).
 */
export function createInvalid(gen: TreeGen, root: string, dir: string, name: string, kind: string): InvalidEntry {
  const abs = join(root, dir, name);
  mkdirSync(join(root, dir), { recursive: true });
  switch (kind) {
    case "binary":
      writeFileSync(abs, Buffer.concat([Buffer.from("PNG\r\n"), Buffer.from([0, 0, 0, 13]), Buffer.from(gen.content())]));
      return { kind, disk: abs, reported: dir + name };
    case "bad-utf8":
      writeFileSync(abs, gen.badContent());
      return { kind, disk: abs, reported: dir + name };
    case "symlink-file":
      symlinkSync("../../../../../../etc/hostname", abs);
      return { kind, disk: abs, reported: dir + name };
    case "symlink-dir":
      symlinkSync("/tmp", abs);
      return { kind, disk: abs, reported: dir + name };
    case "symlink-dangling":
      symlinkSync("no-such-target", abs);
      return { kind, disk: abs, reported: dir + name };
    case "fifo": {
      const made = Bun.spawnSync(["mkfifo", abs]);
      if (made.exitCode !== 0) throw new Error(`mkfifo failed: ${made.stderr.toString()}`);
      return { kind, disk: abs, reported: dir + name };
    }
    case "git-dir": {
      // A repository's metadata, whatever is inside it (even invalid files): named once, by its directory.
      const gitName = gen.pick([".git", ".GIT", ".Git"]);
      const g = join(root, dir, gitName);
      mkdirSync(join(g, "objects"), { recursive: true });
      writeFileSync(join(g, "HEAD"), "ref: refs/heads/main\n");
      writeFileSync(join(g, "index"), Buffer.from([0x44, 0x49, 0x52, 0x43, 0, 0, 0, 2]));
      return { kind, disk: g, reported: dir + gitName };
    }
    case "git-file":
      writeFileSync(join(root, dir, ".git"), "gitdir: ../elsewhere/.git\n");
      return { kind, disk: join(root, dir, ".git"), reported: `${dir}.git` };
    case "bad-name-file":
    case "bad-name-dir": {
      // A name that is not UTF-8; the refusal shows its bytes as Latin-1 with
      // everything outside printable ASCII as "?".
      const raw = Buffer.concat([Buffer.from(`bad${gen.int(1000)}-`), Buffer.from(gen.pick([[0xff], [0xc3, 0x28], [0xe9, 0x74, 0xe9], [0x80, 0x80], [0xed, 0xa0, 0x80]]))]);
      const disk = Buffer.concat([Buffer.from(`${join(root, dir)}/`), raw]);
      if (kind === "bad-name-file") writeFileSync(disk, "text inside\n");
      else {
        mkdirSync(disk);
        writeFileSync(Buffer.concat([disk, Buffer.from("/inner.md")]), "inner\n");
      }
      return { kind, disk, reported: dir + raw.toString("latin1").replace(/[^\x20-\x7e]/g, "?") };
    }
  }
  throw new Error(`unknown kind ${kind}`);
}

export const INVALID_KINDS = [
  "binary",
  "bad-utf8",
  "symlink-file",
  "symlink-dir",
  "symlink-dangling",
  "fifo",
  "git-dir",
  "git-file",
  "bad-name-file",
  "bad-name-dir",
] as const;

export function removeEntry(disk: string | Buffer): void {
  rmSync(disk, { recursive: true, force: true });
}

/**
 * Every regular file under `root` with its bytes, by notebook path, read
 * with names as the file system gives them (no normalisation). Anything that
 * is neither a file nor a directory is an error here: the engine never
 * writes one.
 */
export function readTree(root: string): Map<string, Buffer> {
  const files = new Map<string, Buffer>();
  const walk = (abs: string, rel: string) => {
    for (const e of readdirSync(abs, { withFileTypes: true })) {
      if (e.isDirectory()) walk(join(abs, e.name), `${rel}${e.name}/`);
      else if (e.isFile()) files.set(rel + e.name, readFileSync(join(abs, e.name)));
      else throw new Error(`unexpected entry ${rel}${e.name}`);
    }
  };
  walk(root, "");
  return files;
}

/** Directories under `root` holding nothing at all (directories exist only through their files). */
export function emptyDirectories(root: string): string[] {
  const empty: string[] = [];
  const walk = (abs: string, rel: string) => {
    const entries = readdirSync(abs, { withFileTypes: true });
    if (entries.length === 0 && rel !== "") empty.push(rel);
    for (const e of entries) if (e.isDirectory()) walk(join(abs, e.name), `${rel}${e.name}/`);
  };
  walk(root, "");
  return empty;
}

export function writeFile(root: string, path: string, bytes: Uint8Array): void {
  const file = join(root, path);
  mkdirSync(dirname(file), { recursive: true });
  writeFileSync(file, bytes);
}
