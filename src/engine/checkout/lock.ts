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
 * - on this host, its process is stopped (SIGSTOP, a debugger, Ctrl-Z) and
 *   has not refreshed the lock for STALE_MS. A holder that runs keeps its
 *   lock however long it takes (a long merge holds the heartbeat's timer
 *   back): the caller waits until its own deadline and answers LOCAL_STATE;
 * - from anywhere (another host, another container sharing the private root
 *   through a volume, where process ids mean nothing; or where the system
 *   does not say whether a process is stopped): its holder stopped
 *   refreshing it. A holder touches the lock every few seconds while it
 *   holds it; one untouched for STALE_MS is dead;
 * - a holder line that cannot be read at all (left by an older version that
 *   created the file before writing it) once it is a moment old.
 *
 * A holder whose lock was taken over may still resume (a stopped process
 * continued, a container unfrozen). Each acquisition is its own file, known
 * by its inode and birth time, so the holder can tell its lock from its
 * successor's even when both name the same process: before every change to
 * the checkout's state or visible files (HeldLock.check), and before it
 * refreshes or removes the lock, it looks, and a lock that is no longer its
 * own stops it there with LOCAL_STATE — it changes nothing more, and never
 * removes its successor's lock.
 */
import { closeSync, fstatSync, linkSync, openSync, readFileSync, renameSync, rmSync, type Stats, statSync, unlinkSync, utimesSync, writeSync } from "node:fs";
import { basename, dirname, join } from "node:path";
import { hostname } from "node:os";
import { DomainError } from "../../contract/errors.ts";
import type { Clock, RandomSource } from "../../contract/clock.ts";
import { type Holder, holderName, parseHolder, type ProcessIdentity, processGone } from "../../contract/process-holder.ts";
import { namesIn } from "./atomic-file.ts";

export type { ProcessIdentity };

/** A holder silent this long is dead, wherever it ran (and, on this host, stopped). */
export const STALE_MS = 30_000;
/** How often a holder touches its lock: well within STALE_MS, even on a busy machine. */
const HEARTBEAT_MS = 5_000;
/** A holder line that does not parse is taken over once it is this old. */
const UNREADABLE_GRACE_MS = 2_000;
/** How long a holder's look at its lock holds good (HeldLock.check): far below STALE_MS. */
const CHECK_AGAIN_MS = 1_000;

export interface HeldLock {
  /** Refresh the lock's time if the last refresh is a while ago; cheap enough to call per file written. */
  heartbeat(): void;
  /** Throws LOCAL_STATE when the lock is no longer this holder's (taken over while it was stopped). */
  check(): void;
  /** Remove the lock, if it is still this holder's. */
  release(): void;
}

/** Whether the holder is provably gone; `age` is how long since the lock was last touched. */
function isStale(holder: Holder | null, ageMs: number, self: ProcessIdentity): boolean {
  if (holder === null) return ageMs > UNREADABLE_GRACE_MS;
  if (processGone(holder, self)) return true;
  if (ageMs <= STALE_MS) return false;
  // Silent for long: on this host, only a stopped process gives its lock up.
  const stopped = holder.host === hostname() ? self.isStopped?.(holder.pid) : undefined;
  return stopped ?? true;
}

/** One acquisition of a lock: the file it made, which no other acquisition's file can be. */
interface LockFile {
  dev: number;
  ino: number;
  birthtimeMs: number;
}

function lockFileOf(st: Stats): LockFile {
  return { dev: st.dev, ino: st.ino, birthtimeMs: st.birthtimeMs };
}

/** Whether `st` is the file `mine` names. Where there are no birth times (0), an inode reused at once passes: the holder line is then the last guard. */
function isFile(st: Stats, mine: LockFile): boolean {
  return st.dev === mine.dev && st.ino === mine.ino && st.birthtimeMs === mine.birthtimeMs;
}

/** Write `content` under a private name beside `file`, then link it to `file`: the file made, or null if `file` exists. */
function createWhole(file: string, content: string, randomId: RandomSource["randomId"]): LockFile | null {
  const tmp = `${file}-${randomId(8)}.new`;
  const fd = openSync(tmp, "wx", 0o600);
  let made: LockFile;
  try {
    writeSync(fd, content);
    made = lockFileOf(fstatSync(fd));
  } finally {
    closeSync(fd);
  }
  try {
    linkSync(tmp, file);
    return made;
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code === "EEXIST") return null;
    if (code !== "EPERM" && code !== "ENOTSUP" && code !== "EOPNOTSUPP" && code !== "ENOSYS") throw e;
    // A file system without hard links: an exclusive create, written at once.
    // A kill between the two leaves an empty lock, which UNREADABLE_GRACE_MS covers.
    try {
      const fd = openSync(file, "wx", 0o600);
      try {
        writeSync(fd, content);
        return lockFileOf(fstatSync(fd));
      } finally {
        closeSync(fd);
      }
    } catch (again) {
      if ((again as NodeJS.ErrnoException).code === "EEXIST") return null;
      throw again;
    }
  } finally {
    removeFile(tmp);
  }
}

/** Remove the file `file` if it is there: one unlink, where rmSync looks first. */
function removeFile(file: string): void {
  try {
    unlinkSync(file);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== "ENOENT") throw e;
  }
}

/** Private names a process killed mid-way left beside the lock (see createWhole); `nowMs`: the wall clock's time. */
function removeLeftovers(file: string, nowMs: number): void {
  const dir = dirname(file);
  const prefix = `${basename(file)}-`;
  for (const name of namesIn(dir)) {
    if (!name.startsWith(prefix) || !(name.endsWith(".new") || name.includes(".stale-"))) continue;
    try {
      if (nowMs - statSync(join(dir, name)).mtimeMs > UNREADABLE_GRACE_MS) rmSync(join(dir, name), { force: true });
    } catch {
      /* gone already */
    }
  }
}

/** Whether the lock `file` may belong to an operation still running: it is there, and its holder is not provably gone. */
export function lockHeld(file: string, self: ProcessIdentity, clock: Pick<Clock, "now">): boolean {
  try {
    return !isStale(parseHolder(readFileSync(file, "utf8")), clock.now().getTime() - statSync(file).mtimeMs, self);
  } catch (e) {
    return (e as NodeJS.ErrnoException).code !== "ENOENT";
  }
}

/**
 * Take a judged-stale lock away: renamed aside first, so that of two
 * processes taking over one lock, one wins; and if what was renamed is not
 * the file judged (a successor made its own lock meanwhile), it goes back.
 */
function takeOver(file: string, judged: LockFile, self: ProcessIdentity, randomId: RandomSource["randomId"]): void {
  const aside = `${file}-${randomId(8)}.stale-${self.pid}`;
  try {
    renameSync(file, aside);
  } catch {
    return; // another process took it over first
  }
  try {
    if (!isFile(statSync(aside), judged)) {
      try {
        linkSync(aside, file);
      } catch {
        /* another lock is there already: that one decides */
      }
    }
  } finally {
    rmSync(aside, { force: true });
  }
}

/** The lock is no longer this call's: another call took the checkout over while this one was stopped. */
function lockLost(): DomainError {
  return new DomainError(
    "LOCAL_STATE",
    "This call was stopped for longer than a checkout's lock lasts, and another call took the checkout over; this one changed nothing more. Pull to see where the checkout stands, then call again.",
  );
}

/**
 * Take the lock `file` for `self`, waiting for its holder at most
 * `timeoutMs`; LOCAL_STATE when it is still held then. `clock`: the wall
 * clock that lock ages are judged by, the monotonic one, the waits and the
 * temporary names — the caller's (EngineDeps).
 */
export async function acquireLock(file: string, self: ProcessIdentity, timeoutMs: number, clock: Clock & RandomSource): Promise<HeldLock> {
  return holdLock(file, await takeLock(file, self, timeoutMs, clock), clock);
}

/**
 * Take the lock `file` only if nobody holds it now: null when it is held,
 * even by a holder that is gone (taking a lock over is a call's business,
 * with its repair of what the holder left), or when its directory is not
 * there. For work beside the calls that may just be skipped (fetch-ahead.ts).
 */
export function tryLock(file: string, self: ProcessIdentity, clock: Clock & RandomSource): HeldLock | null {
  let mine: LockFile | null;
  try {
    mine = createWhole(file, holderName(self), clock.randomId);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === "ENOENT") return null;
    throw e;
  }
  return mine === null ? null : holdLock(file, mine, clock);
}

/** Make the lock file, taking a stale lock over and waiting out a live one: the file made. */
async function takeLock(file: string, self: ProcessIdentity, timeoutMs: number, clock: Clock & RandomSource): Promise<LockFile> {
  const me = holderName(self);
  const deadline = clock.now().getTime() + timeoutMs;
  let cleaned = false;
  for (;;) {
    const mine = createWhole(file, me, clock.randomId);
    if (mine !== null) return mine;
    let holder: Holder | null;
    let st: Stats;
    try {
      holder = parseHolder(readFileSync(file, "utf8"));
      st = statSync(file);
    } catch {
      continue; // Released between our attempt and the read: try again.
    }
    if (isStale(holder, clock.now().getTime() - st.mtimeMs, self)) {
      takeOver(file, lockFileOf(st), self, clock.randomId);
      if (!cleaned) removeLeftovers(file, clock.now().getTime());
      cleaned = true;
      continue;
    }
    if (clock.now().getTime() > deadline) {
      throw new DomainError("LOCAL_STATE", "Another pull or commit is still running on this checkout; call again when it ends.");
    }
    await clock.sleep(20 + clock.random() * 30);
  }
}

/** The lock this acquisition made (`held`), kept fresh while it lasts and looked at before each change. */
function holdLock(file: string, held: LockFile, clock: Clock): HeldLock {
  /** Whether the lock file is still the one this acquisition made. */
  const ours = () => {
    try {
      return isFile(statSync(file), held);
    } catch {
      return false;
    }
  };
  // A look per change would cost a stat per file of a cold pull. A lock is
  // only taken over after STALE_MS of silence, so a holder that looked less
  // than a second ago still held it; one stopped meanwhile finds the
  // monotonic clock moved on by the time it stood still, and looks again.
  let lookedAt = clock.monotonic();
  let touched = clock.now().getTime();
  const heartbeat = () => {
    const now = clock.now().getTime();
    if (now - touched < HEARTBEAT_MS) return;
    touched = now;
    // Never the successor's: its time says whether it is alive.
    if (!ours()) return;
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
    check: () => {
      if (clock.monotonic() - lookedAt < CHECK_AGAIN_MS) return;
      if (!ours()) throw lockLost();
      lookedAt = clock.monotonic();
    },
    release: () => {
      clearInterval(timer);
      if (ours()) removeFile(file);
    },
  };
}
