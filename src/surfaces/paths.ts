/**
 * Resolving a caller's notebook path (mcp-tools.md "Inputs",
 * docs/decisions/0004-checkouts-and-the-private-root.md): `~/` expands to the
 * home directory, `..` and symlinks are resolved, and the result must be at
 * or below the workspace root when one is set.
 */
import { realpathSync } from "node:fs";
import { basename, dirname, isAbsolute, join, resolve } from "node:path";
import { DomainError } from "../contract/errors.ts";
import { isAtOrBelow } from "../contract/path-containment.ts";
import { PATH_MAX_BYTES } from "../contract/tool-input.ts";

/** The longest file name Linux, macOS and Windows file systems hold. */
const NAME_MAX_BYTES = 255;

export interface PathContext {
  /** What an omitted or empty path means. */
  defaultDir: string;
  /** Where relative paths start. */
  cwd: string;
  home: string;
  /** Real path of the workspace root, or null for no bound. */
  workspaceRoot: string | null;
}

/** realpath of the longest existing ancestor, with the rest appended: the target may not exist yet. */
export function realpathLoose(path: string): string {
  const missing: string[] = [];
  let current = path;
  for (;;) {
    try {
      return join(realpathSync(current), ...missing.reverse());
    } catch {
      const parent = dirname(current);
      if (parent === current) return path;
      missing.push(basename(current));
      current = parent;
    }
  }
}

/** The caller's path with `~/` expanded (absent or "": the default directory). */
function expandHome(input: string | undefined, ctx: PathContext): string {
  const path = input === undefined || input === "" ? ctx.defaultDir : input;
  if (path === "~") return ctx.home;
  return path.startsWith("~/") ? join(ctx.home, path.slice(2)) : path;
}

/**
 * The caller's path made absolute as it was named, no symlink resolved: what
 * a check of the named entry itself looks at (`export` refuses a symlink,
 * which resolveNotebookPath would follow).
 */
export function namedPath(input: string | undefined, ctx: PathContext): string {
  return resolve(ctx.cwd, expandHome(input, ctx));
}

export function resolveNotebookPath(input: string | undefined, ctx: PathContext, requireAbsolute = false): string {
  const path = expandHome(input, ctx);
  // A path the host cannot hold is a malformed request, not a storage failure.
  if (path.includes("\u0000")) throw new DomainError("MALFORMED_INPUT", "path must not contain U+0000.");
  if (path.split("/").some((segment) => Buffer.byteLength(segment, "utf8") > NAME_MAX_BYTES)) {
    throw new DomainError("MALFORMED_INPUT", `path has a name over ${NAME_MAX_BYTES} bytes, which no common file system holds.`);
  }
  if (requireAbsolute) {
    // mcp-tools.md: `~/` expands before the absolute-path and byte checks.
    if (!isAbsolute(path)) throw new DomainError("MALFORMED_INPUT", "path must be absolute, or begin with ~/.");
    if (Buffer.byteLength(path, "utf8") > PATH_MAX_BYTES) throw new DomainError("MALFORMED_INPUT", "path is over 4,096 bytes.");
  }
  const resolved = realpathLoose(resolve(ctx.cwd, path));
  if (ctx.workspaceRoot !== null && !isAtOrBelow(ctx.workspaceRoot, resolved)) {
    throw new DomainError(
      "PATH_OUTSIDE_ROOT",
      `The path is not at or below the workspace root ${ctx.workspaceRoot}; address a directory there, or omit path.`,
    );
  }
  return resolved;
}
