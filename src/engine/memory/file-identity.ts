/**
 * The identity of a file on disk, by which a copy of it in the process
 * memory is known to still be the file's (docs/performance.md, "The
 * process memory").
 */
import { statSync } from "node:fs";

/**
 * A file's inode, size and times, or null when it is absent: a file
 * replaced (rename) or written to since changes it.
 */
export function fileIdentity(file: string): string | null {
  try {
    const st = statSync(file);
    return `${st.ino}:${st.size}:${st.mtimeMs}:${st.ctimeMs}`;
  } catch {
    return null;
  }
}
