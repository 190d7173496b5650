/**
 * Whether one absolute path is at or below another: pure path logic (no
 * file system), for every containment check — workspace roots, the private
 * root, nested checkouts. Only ".." itself or "../…" leads out of `root`; a
 * name that merely begins with ".." ("..x") is inside.
 */
import { isAbsolute, relative, sep } from "node:path";

export function isAtOrBelow(root: string, path: string): boolean {
  const rel = relative(root, path);
  return rel === "" || (rel !== ".." && !rel.startsWith(`..${sep}`) && !isAbsolute(rel));
}
