/**
 * Private state files are replaced atomically (write a temporary file,
 * fsync, rename, fsync the directory), so a crash leaves the old or the new file, never a torn
 * one; and read as JSON, absent being no error. And the names in a
 * private directory, none when it cannot be listed.
 */
import { closeSync, fsyncSync, openSync, readdirSync, readFileSync, renameSync, writeSync } from "node:fs";
import { dirname } from "node:path";
import type { RandomSource } from "../../contract/clock.ts";

/**
 * `randomId` names the temporary file; `durable: false` skips the fsyncs,
 * for a file that is only a speed-up (a torn one does not parse). A durable
 * write flushes the file before the rename, and the directory after it:
 * the rename is a change of the directory, and until the directory is
 * flushed a power loss can take it back — the old state file, or none,
 * after a call that answered (git and SQLite flush the directory so too).
 */
export function writeAtomic(file: string, data: string, randomId: RandomSource["randomId"], durable = true): void {
  const tmp = `${file}.tmp-${randomId(8)}`;
  const fd = openSync(tmp, "w", 0o600);
  try {
    writeSync(fd, data);
    if (durable) fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  renameSync(tmp, file);
  if (durable) fsyncDirectory(dirname(file));
}

/**
 * What a system that cannot open or flush a directory answers (Windows
 * opens none; some network and FUSE file systems flush none): nothing more
 * can be done there, and the rename stands as the system keeps it.
 */
const NO_DIRECTORY_FSYNC = new Set(["EINVAL", "ENOTSUP", "EOPNOTSUPP", "EISDIR", "EBADF", "EPERM", "EACCES"]);

function cannotFlushDirectory(e: unknown): boolean {
  return NO_DIRECTORY_FSYNC.has((e as NodeJS.ErrnoException).code ?? "");
}

/** Flush the directory `dir`'s entries to disk. */
export function fsyncDirectory(dir: string): void {
  let fd: number;
  try {
    fd = openSync(dir, "r");
  } catch (e) {
    if (cannotFlushDirectory(e)) return;
    throw e;
  }
  try {
    fsyncSync(fd);
  } catch (e) {
    if (!cannotFlushDirectory(e)) throw e;
  } finally {
    closeSync(fd);
  }
}

/** The parsed file, or undefined when it is absent. */
export function readJson(file: string): unknown | undefined {
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw e;
  }
  return JSON.parse(text);
}

/** The names in `dir`; none when it cannot be listed (absent, or removed meanwhile): the private state's directories come and go. */
export function namesIn(dir: string): string[] {
  try {
    return readdirSync(dir);
  } catch {
    return [];
  }
}
