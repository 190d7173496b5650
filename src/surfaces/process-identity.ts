/**
 * Who a process is, as the engine's checkout locks need to know it: whether
 * a process id is alive, and when it started (so a reused id is told apart).
 */
import { readFileSync } from "node:fs";
import { holderGone, holderName } from "../contract/process-holder.ts";

/**
 * Whether `pid` names a running process. A zombie — dead, but not yet
 * reaped by a parent that is hung or careless (an agent host killed
 * mid-call, a container whose first process reaps nothing) — still answers
 * signal 0, yet will never release a lock: Linux's /proc says which it is.
 */
export function isProcessAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== "EPERM") return false;
  }
  return processState(pid) !== "Z";
}

/**
 * The fields of /proc/PID/stat after the command name, from field 3 (the
 * state letter) on; null where there is no /proc or no such process.
 */
function procStat(pid: number): string[] | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "latin1");
    // The command name (field 2) is in parentheses and may hold spaces.
    return stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  } catch {
    return null;
  }
}

/** The state letter of /proc/PID/stat (field 3): "Z" for a zombie; null where there is no /proc. */
function processState(pid: number): string | null {
  return procStat(pid)?.[0] || null;
}

/**
 * Whether process `pid` is stopped — by SIGSTOP, a terminal's Ctrl-Z or a
 * debugger (Linux's /proc states "T" and "t") — and so cannot act until it
 * is continued; undefined where there is no /proc to say.
 */
export function isProcessStopped(pid: number): boolean | undefined {
  const state = processState(pid);
  return state === null ? undefined : state === "T" || state === "t";
}

/**
 * When process `pid` started, as Linux tells it (field 22 of
 * /proc/PID/stat, in clock ticks since boot): with the id, it names one
 * process, so a lock held by a process whose id was reused is known stale.
 * Null elsewhere, where the id alone has to do.
 */
export function processStartTime(pid: number): string | null {
  return procStat(pid)?.[19] ?? null;
}

/**
 * This process as the embedded store's writer queue names it ("pid host
 * start"), and how to tell that a writer it names is gone — its process
 * died, or its id now belongs to a process that started at another time —
 * so a writer killed in its turn holds no one up (store/sqlite-queue.ts).
 */
export function queueIdentity(): { holder: string; isGone(holder: string): boolean } {
  // Named and judged as a checkout's lock names and judges its holder (contract/process-holder.ts).
  const self = { pid: process.pid, isAlive: isProcessAlive, startTime: processStartTime };
  return { holder: holderName(self), isGone: (holder) => holderGone(holder, self) };
}
