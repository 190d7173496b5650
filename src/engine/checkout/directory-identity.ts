/**
 * The identity of a directory: device, inode and birth time — or, where the
 * file system records no birth time, device, inode and a mark slivingdoc
 * wrote into it (docs/decisions/0021-a-directory-known-without-birth-time.md).
 * A checkout is the directory itself, not its path
 * (docs/storage-protocol.md, "The baseline invariant"): its private state
 * records this identity, so a directory removed and made again at the same
 * path is known for a new one, and one moved to another path is still known
 * for itself.
 */
import { linkSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { RandomSource } from "../../contract/clock.ts";

/**
 * What a directory's identity is read from: the file system's stat by
 * default. A birth time of 0 means the file system records none (tmpfs on
 * older kernels, some network file systems); tests give one that reports
 * none, to take that path on any machine.
 */
export type DirectoryStat = (dir: string) => { dev: number; ino: number; birthtimeMs: number };

const SYSTEM_STAT: DirectoryStat = (dir) => statSync(dir);

/**
 * The mark: a file in the checkout's directory, holding a random id, that
 * only slivingdoc writes and the scan never sees (checkout/scan.ts). Written
 * only where there is no birth time, and only by a call that holds the
 * checkout's lock.
 */
export const DIRECTORY_MARK = ".slivingdoc-directory";

const MARK_ID = /^[0-9a-f]{32}\n$/;

/** Whether `name`, at a checkout's root, is its mark or a mark being written: left out of every scan. */
export function isDirectoryMark(name: string): boolean {
  return name === DIRECTORY_MARK || /^\.slivingdoc-directory\.tmp-[0-9a-f]{16}$/.test(name);
}

export interface IdentityOptions {
  stat?: DirectoryStat;
  /** Names a new mark, and so makes one where none is (only under the checkout's lock); without it the identity is only read. */
  mark?: RandomSource["randomId"];
}

/**
 * The inode alone is not enough — a directory removed and made again often
 * gets the same inode number at once — and the birth time tells them apart
 * where the file system records one (ext4, XFS, Btrfs, APFS, NTFS, tmpfs).
 * Where it does not, the mark does: a directory made again has none. An
 * unmarked directory without birth time is `dev:ino:0`, as every identity
 * without one was before the mark; no other directory can be told from it.
 */
export function directoryIdentity(dir: string, options: IdentityOptions = {}): string {
  const st = (options.stat ?? SYSTEM_STAT)(dir);
  if (st.birthtimeMs !== 0) return `${st.dev}:${st.ino}:${st.birthtimeMs}`;
  const id = readMark(dir) ?? (options.mark === undefined ? null : makeMark(dir, options.mark));
  return `${st.dev}:${st.ino}:${id === null ? "0" : `m${id}`}`;
}

/** The id the directory's mark holds; null when there is none, or it is not one slivingdoc wrote. */
function readMark(dir: string): string | null {
  try {
    const text = readFileSync(join(dir, DIRECTORY_MARK), "utf8");
    return MARK_ID.test(text) ? text.slice(0, 32) : null;
  } catch {
    return null;
  }
}

/**
 * Mark the directory: written whole under a temporary name, then linked to
 * the mark's name, which fails if another call (the same directory through
 * another store) marked it first — then that mark is the one. A mark that
 * does not read as one is replaced. Null when the directory cannot be
 * written: it stays unmarked, known as before the mark.
 */
function makeMark(dir: string, randomId: RandomSource["randomId"]): string | null {
  const id = randomId(16);
  const tmp = join(dir, `${DIRECTORY_MARK}.tmp-${randomId(8)}`);
  try {
    writeFileSync(tmp, `${id}\n`, { flag: "wx", mode: 0o644 });
    try {
      linkSync(tmp, join(dir, DIRECTORY_MARK));
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== "EEXIST") throw e;
      const theirs = readMark(dir);
      if (theirs !== null) return theirs;
      renameSync(tmp, join(dir, DIRECTORY_MARK));
    }
    return id;
  } catch {
    return null;
  } finally {
    rmSync(tmp, { force: true });
  }
}

/**
 * Whether `identity` is one no other directory can have: with a birth time,
 * or a mark. Without either, a directory made after another was removed
 * may get its device and inode, and be taken for it.
 */
export function isUnique(identity: string): boolean {
  return !identity.endsWith(":0");
}

/**
 * Whether the directory now known as `current` is the one a state recorded
 * as `recorded`: the same identity — or, for a state recorded before the
 * mark (`dev:ino:0`), the same device and inode, as it was then.
 */
export function sameDirectory(recorded: string, current: string): boolean {
  if (recorded === current) return true;
  if (!recorded.endsWith(":0")) return false;
  const prefix = recorded.slice(0, -1);
  return current.startsWith(prefix) && current.slice(prefix.length).startsWith("m");
}
