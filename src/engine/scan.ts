/**
 * The scan: read the visible directory into a notebook tree and enforce the
 * notebook contract (decisions §4) — regular files of valid UTF-8 without
 * U+0000, under valid UTF-8 names without a `.git` segment. Every violation
 * is collected so the caller learns all offending files at once.
 */
import { type Dirent, lstatSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { DomainError, type ErrorFile } from "../contract/errors.ts";
import { decodeText } from "./text.ts";

/** What identifies one version of a file on disk without reading it (like git's index). */
export interface FileStamp {
  size: number;
  mtimeNs: bigint;
  ctimeNs: bigint;
  ino: bigint;
}

/** A scanned file: its blob id when the stat cache vouches for it, else its bytes. */
export type ScannedFile = { stamp: FileStamp; oid: string; bytes: null } | { stamp: FileStamp; oid: null; bytes: Uint8Array };

/** Notebook-relative slash path → scanned file, in path order. */
export type NotebookFiles = Map<string, ScannedFile>;

/** The blob id of an unchanged file, from the stat cache; null when it must be read. */
export type KnownFile = (path: string, stamp: FileStamp) => string | null;

/**
 * Files this engine writes next to their destination before an atomic
 * rename. A crash can leave one behind; it is never notebook content and is
 * removed by recovery (see materialize.ts).
 */
export const PARTIAL_FILE = /^\.slivingdoc-partial-[0-9a-f]{16}$/;

// ignoreBOM: a name may begin with U+FEFF, and that character is part of it.
const nameDecoder = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });

function isGitSegment(name: string): boolean {
  return name.toLowerCase() === ".git";
}

export function scanNotebook(root: string, known: KnownFile = () => null): NotebookFiles {
  const files: NotebookFiles = new Map();
  const invalid: ErrorFile[] = [];
  const bad = (path: string) => invalid.push({ path, reason: "INVALID_CONTENT", ranges: [] });

  const walk = (absDir: string, relDir: string) => {
    let entries: Dirent[];
    try {
      entries = readdirSync(absDir, { withFileTypes: true });
    } catch (cause) {
      throw new DomainError("LOCAL_STATE", "The notebook directory could not be read.", { cause });
    }
    if (entries.some((e) => e.name.includes("\uFFFD"))) {
      // Node-style APIs replace invalid UTF-8 in names; the raw bytes tell
      // a real U+FFFD from a name that is not UTF-8 at all.
      const valid = new Set<string>();
      for (const raw of readdirSync(absDir, { encoding: "buffer" })) {
        try {
          valid.add(nameDecoder.decode(raw));
        } catch {
          bad(relDir + Buffer.from(raw).toString("latin1").replace(/[^\x20-\x7e]/g, "?"));
        }
      }
      entries = entries.filter((e) => valid.has(e.name));
    }
    for (const entry of entries) {
      const name = entry.name;
      const rel = relDir + name;
      const abs = join(absDir, name);
      if (PARTIAL_FILE.test(name)) continue;
      if (isGitSegment(name)) {
        bad(rel);
        continue;
      }
      if (entry.isDirectory()) {
        walk(abs, `${rel}/`);
      } else if (entry.isFile()) {
        const st = lstatSync(abs, { bigint: true });
        const stamp: FileStamp = { size: Number(st.size), mtimeNs: st.mtimeNs, ctimeNs: st.ctimeNs, ino: st.ino };
        const oid = known(rel, stamp);
        if (oid !== null) {
          // Unchanged since a scan that read and validated it.
          files.set(rel, { stamp, oid, bytes: null });
          continue;
        }
        const bytes = readFileSync(abs);
        if (decodeText(bytes) === null) bad(rel);
        else files.set(rel, { stamp, oid: null, bytes: new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength) });
      } else {
        // Symlinks, sockets, FIFOs, devices: never notebook content.
        bad(rel);
      }
    }
  };

  try {
    if (!lstatSync(root).isDirectory()) {
      throw new DomainError("PATH_OUTSIDE_ROOT", "The notebook path is not a directory.");
    }
  } catch (e) {
    if (e instanceof DomainError) throw e;
    return files; // A directory that does not exist yet holds no files.
  }
  walk(root, "");
  if (invalid.length > 0) {
    invalid.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
    const names = invalid.map((f) => f.path).join(", ");
    throw new DomainError(
      "INVALID_CONTENT",
      `The notebook holds UTF-8 text files only; these are not: ${names}. Delete or replace them, then call again.`,
      { files: invalid },
    );
  }
  return new Map([...files].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
}
