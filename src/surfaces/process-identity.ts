/**
 * Who a process is, as the engine's checkout locks need to know it: whether
 * a process id is alive, and when it started (so a reused id is told apart).
 */
import { readFileSync } from "node:fs";

export function isProcessAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === "EPERM";
  }
}

/**
 * When process `pid` started, as Linux tells it (field 22 of
 * /proc/PID/stat, in clock ticks since boot): with the id, it names one
 * process, so a lock held by a process whose id was reused is known stale.
 * Null elsewhere, where the id alone has to do.
 */
export function processStartTime(pid: number): string | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "latin1");
    // The command name (field 2) is in parentheses and may hold spaces.
    return stat.slice(stat.lastIndexOf(")") + 2).split(" ")[19] ?? null;
  } catch {
    return null;
  }
}
