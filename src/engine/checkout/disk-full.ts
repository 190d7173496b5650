/**
 * A full disk (ENOSPC) or a spent quota (EDQUOT) while a call writes: the
 * tokens stay those of the table — STORAGE_FAILURE · LOCAL_STATE when
 * nothing visible had changed, RECOVERY_FAILURE with its report once the
 * visible files had begun to change — but the message says that space ran
 * out, and where: in the notebook directory or in slivingdoc's private
 * state, which are often on different devices. It names the place by its
 * role, never by its path (the private root is private). Pulling again
 * into the same full disk fails the same way, so the message says to free
 * space first.
 */
import { existsSync, statfsSync, statSync } from "node:fs";
import { dirname } from "node:path";
import { DomainError } from "../../contract/errors.ts";

/** Whether `e`, or a cause under it, is a write that found no space left. */
export function isDiskFull(e: unknown): boolean {
  for (let cause = e, depth = 0; cause !== undefined && cause !== null && depth < 8; depth++) {
    const code = (cause as NodeJS.ErrnoException).code;
    if (code === "ENOSPC" || code === "EDQUOT") return true;
    cause = (cause as { cause?: unknown }).cause;
  }
  return false;
}

/** The two places a call writes to, by role. */
export interface WritePlaces {
  /** The notebook directory. */
  notebook: string;
  /** The checkout's private state (under the private root). */
  privateState: string;
}

/** Below this much free space, a device counts as full. */
const FULL_BYTES = 1 << 20;

interface Place {
  role: string;
  dev: number;
  free: number;
}

/** `path`'s device and free bytes, from its nearest existing directory; null when it cannot be told. */
function place(role: string, path: string): Place | null {
  let at = path;
  while (!existsSync(at) && dirname(at) !== at) at = dirname(at);
  try {
    const fs = statfsSync(at);
    return { role, dev: statSync(at).dev, free: fs.bavail * fs.bsize };
  } catch {
    return null;
  }
}

/**
 * Where space ran out, in words: the device holding the notebook directory,
 * the private state, or both (one device). The full one is the one with
 * (almost) nothing free; when neither is (space freed since, or a write
 * larger than what is free), the one with less.
 */
export function whereFull(places: WritePlaces): string {
  const found = [place("the notebook directory", places.notebook), place("slivingdoc's private state (--private-root)", places.privateState)].filter(
    (p): p is Place => p !== null,
  );
  if (found.length === 0) return "the device slivingdoc writes to";
  if (found.length === 2 && found[0]!.dev === found[1]!.dev) return `the device that holds both ${found[0]!.role} and ${found[1]!.role}`;
  const full = found.filter((p) => p.free < FULL_BYTES);
  const pick = full.length > 0 ? full : [found.reduce((a, b) => (b.free < a.free ? b : a))];
  return `the device that holds ${pick.map((p) => p.role).join(" and ")}`;
}

/** LOCAL_STATE for a full disk met before any visible file changed: nothing was changed. */
export function diskFullBeforeChange(cause: unknown, places: WritePlaces): DomainError {
  return new DomainError("LOCAL_STATE", `No space is left on ${whereFull(places)}; no file was changed. Free some space there, then call again.`, { cause });
}

/** What a RECOVERY_FAILURE's message says when the visible files' writing ran out of space. */
export function diskFullWhileWriting(places: WritePlaces, resynchronized: boolean): string {
  const where = whereFull(places);
  return resynchronized
    ? `No space was left on ${where} while the notebook files were written; they were put back as they were before this call. Free some space there before you pull again: a pull into the same full disk fails the same way.`
    : `No space was left on ${where} while the notebook files were written, and putting them back failed too. Free some space there; the next call retries the repair.`;
}
