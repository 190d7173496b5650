/**
 * The file system's steps that writing visible files is made of
 * (visible-writes.ts, replaced-files.ts): create a file only where none is,
 * append, give a file a second name, and look without following a link.
 */
import { closeSync, linkSync, lstatSync, openSync, type Stats, writeSync } from "node:fs";

export function errno(e: unknown): string | undefined {
  return (e as NodeJS.ErrnoException).code;
}

/** Create `file` with `bytes`, or return false when something already exists there. */
export function writeNew(file: string, bytes: Uint8Array): boolean {
  let fd: number;
  try {
    fd = openSync(file, "wx");
  } catch (e) {
    if (errno(e) === "EEXIST") return false;
    throw e;
  }
  try {
    for (let done = 0; done < bytes.length; ) done += writeSync(fd, bytes, done, bytes.length - done);
  } finally {
    closeSync(fd);
  }
  return true;
}

export function appendTo(file: string, bytes: Uint8Array): void {
  const fd = openSync(file, "a");
  try {
    for (let done = 0; done < bytes.length; ) done += writeSync(fd, bytes, done, bytes.length - done);
  } finally {
    closeSync(fd);
  }
}

/** File systems without hard links answer link() with these. */
export const NO_HARD_LINKS = new Set(["EPERM", "ENOTSUP", "EOPNOTSUPP", "ENOSYS"]);

/**
 * Give the file at `file` the second name `aside`: the same file, which
 * writers by its name keep writing into. "gone" when nothing is there;
 * "other" when it is no longer a regular file; "unlinked" on a file system
 * without hard links, where the file can only be compared where it is.
 */
export function holdAside(file: string, aside: string): "linked" | "unlinked" | "gone" | "other" {
  let st: Stats;
  try {
    st = lstatSync(file);
  } catch (e) {
    if (errno(e) === "ENOENT" || errno(e) === "ENOTDIR") return "gone";
    throw e;
  }
  if (!st.isFile()) return "other";
  try {
    linkSync(file, aside);
    return "linked";
  } catch (e) {
    if (errno(e) === "ENOENT") return "gone";
    if (NO_HARD_LINKS.has(errno(e) ?? "")) return "unlinked";
    throw e;
  }
}

/** What is at `file` (not following a link), or null when nothing is. */
export function lstatOrNull(file: string): Stats | null {
  try {
    return lstatSync(file);
  } catch {
    return null;
  }
}
