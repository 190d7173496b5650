/**
 * One operation per checkout at a time, across processes and hosts.
 *
 * The lock is a file naming its holder: process id, host, and the process's
 * start time where the system tells it. It is made whole before it exists —
 * written under a private name, then hard-linked to `lock`, which fails if a
 * lock is already there — so a process killed at any instant leaves either
 * no lock or a complete one, never an empty file that nobody can judge.
 *
 * A lock is taken over when its holder is provably gone:
 * - on this host, its process no longer runs, or a process with that id
 *   runs but started at another time (the id was reused);
 * - from anywhere (another host, another container sharing the private root
 *   through a volume, where process ids mean nothing): its holder stopped
 *   refreshing it. A holder touches the lock every few seconds while it
 *   holds it; one untouched for STALE_MS is dead;
 * - a holder line that cannot be read at all (left by an older version that
 *   created the file before writing it) once it is a moment old.
 */
import { closeSync, linkSync, openSync, readdirSync, readFileSync, renameSync, rmSync, statSync, utimesSync, writeSync } from "node:fs";
import { basename, dirname, join } from "node:path";
import { DomainError } from "../contract/errors.ts";
import { type Holder, holderName, parseHolder, type ProcessIdentity, processGone } from "../contract/process-holder.ts";
import { randomHex } from "../contract/random-hex.ts";

export type { ProcessIdentity };

/** A holder silent this long is dead, wherever it ran. */
export const STALE_MS = 30_000;
/** How often a holder touches its lock: well within STALE_MS, even on a busy machine. */
const HEARTBEAT_MS = 5_000;
/** A holder line that does not parse is taken over once it is this old. */
const UNREADABLE_GRACE_MS = 2_000;

export interface HeldLock {
  /** Refresh the lock's time if the last refresh is a while ago; cheap enough to call per file written. */
  heartbeat(): void;
  release(): void;
}

/** Whether the holder is provably gone; `age` is how long since the lock was last touched. */
function isStale(holder: Holder | null, ageMs: number, self: ProcessIdentity): boolean {
  if (holder === null) return ageMs > UNREADABLE_GRACE_MS;
  return ageMs > STALE_MS || processGone(holder, self);
}

/** Write `content` under a private name beside `file`, then link it to `file`: false if `file` exists. */
function createWhole(file: string, content: string): boolean {
  const tmp = `${file}-${randomHex(8)}.new`;
  const fd = openSync(tmp, "wx", 0o600);
  try {
    writeSync(fd, content);
  } finally {
    closeSync(fd);
  }
  try {
    linkSync(tmp, file);
    return true;
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code === "EEXIST") return false;
    if (code !== "EPERM" && code !== "ENOTSUP" && code !== "EOPNOTSUPP" && code !== "ENOSYS") throw e;
    // A file system without hard links: an exclusive create, written at once.
    // A kill between the two leaves an empty lock, which UNREADABLE_GRACE_MS covers.
    try {
      const fd = openSync(file, "wx", 0o600);
      writeSync(fd, content);
      closeSync(fd);
      return true;
    } catch (again) {
      if ((again as NodeJS.ErrnoException).code === "EEXIST") return false;
      throw again;
    }
  } finally {
    rmSync(tmp, { force: true });
  }
}

/** Private names a process killed mid-way left beside the lock (see createWhole). */
function removeLeftovers(file: string): void {
  const dir = dirname(file);
  const prefix = `${basename(file)}-`;
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return;
  }
  const now = Date.now();
  for (const name of names) {
    if (!name.startsWith(prefix) || !(name.endsWith(".new") || name.includes(".stale-"))) continue;
    try {
      if (now - statSync(join(dir, name)).mtimeMs > UNREADABLE_GRACE_MS) rmSync(join(dir, name), { force: true });
    } catch {
      /* gone already */
    }
  }
}

/** Whether the lock `file` may belong to an operation still running: it is there, and its holder is not provably gone. */
export function lockHeld(file: string, self: ProcessIdentity): boolean {
  try {
    return !isStale(parseHolder(readFileSync(file, "utf8")), Date.now() - statSync(file).mtimeMs, self);
  } catch (e) {
    return (e as NodeJS.ErrnoException).code !== "ENOENT";
  }
}

export async function acquireLock(file: string, self: ProcessIdentity, timeoutMs: number): Promise<HeldLock> {
  const me = holderName(self);
  const deadline = Date.now() + timeoutMs;
  let cleaned = false;
  for (;;) {
    if (createWhole(file, me)) break;
    let holder: Holder | null;
    let ageMs: number;
    try {
      holder = parseHolder(readFileSync(file, "utf8"));
      ageMs = Date.now() - statSync(file).mtimeMs;
    } catch {
      continue; // Released between our attempt and the read: try again.
    }
    if (isStale(holder, ageMs, self)) {
      // Rename first, so that of two processes taking over one lock, one wins.
      const aside = `${file}-${randomHex(8)}.stale-${self.pid}`;
      try {
        renameSync(file, aside);
        rmSync(aside, { force: true });
      } catch {
        /* another process took it over first */
      }
      if (!cleaned) removeLeftovers(file);
      cleaned = true;
      continue;
    }
    if (Date.now() > deadline) {
      throw new DomainError("LOCAL_STATE", "Another pull or commit is still running on this checkout; call again when it ends.");
    }
    await Bun.sleep(20 + Math.random() * 30);
  }
  let touched = Date.now();
  const heartbeat = () => {
    const now = Date.now();
    if (now - touched < HEARTBEAT_MS) return;
    touched = now;
    try {
      utimesSync(file, now / 1000, now / 1000);
    } catch {
      /* taken over after all, or the state removed: the operation's own writes will say so */
    }
  };
  // Also on a timer, for long waits on the store; the engine calls heartbeat
  // itself between files, since long synchronous stretches hold timers back.
  const timer = setInterval(heartbeat, HEARTBEAT_MS);
  timer.unref?.();
  return {
    heartbeat,
    release: () => {
      clearInterval(timer);
      rmSync(file, { force: true });
    },
  };
}
