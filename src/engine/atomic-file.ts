/**
 * Private state files are replaced atomically (write a temporary file,
 * fsync, rename), so a crash leaves the old or the new file, never a torn
 * one; and read as JSON, absent being no error.
 */
import { closeSync, fsync, fsyncSync, openSync, readFileSync, renameSync, writeSync } from "node:fs";
import { randomHex } from "../contract/random-hex.ts";

/** `durable: false` skips the fsync, for a file that is only a speed-up (a torn one does not parse). */
export function writeAtomic(file: string, data: string, durable = true): void {
  const tmp = `${file}.tmp-${randomHex(8)}`;
  const fd = openSync(tmp, "w", 0o600);
  try {
    writeSync(fd, data);
    if (durable) fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  renameSync(tmp, file);
}

/**
 * The same replacement, in place at once, and on disk by the time the
 * returned promise resolves: the flush runs in the background (another
 * thread), so that it overlaps with the caller's next step instead of
 * adding to it. For a file that must be in place before that step but
 * need only be on disk by the end of it (storage-protocol.md, "The
 * baseline invariant": the publication record and the conditional write).
 */
export function writeAtomicFlushing(file: string, data: string): Promise<void> {
  const tmp = `${file}.tmp-${randomHex(8)}`;
  const fd = openSync(tmp, "w", 0o600);
  try {
    writeSync(fd, data);
  } catch (e) {
    closeSync(fd);
    throw e;
  }
  // Queued to the thread pool now, before the caller's next step (which may
  // block this thread in a flush of its own).
  const flushed = new Promise<void>((resolve, reject) => fsync(fd, (e) => (e ? reject(e) : resolve())));
  renameSync(tmp, file);
  return flushed.finally(() => closeSync(fd));
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

