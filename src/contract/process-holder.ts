/**
 * How a process names itself where others must later judge whether it is
 * gone — a checkout's lock (engine/checkout/lock.ts) and a ticket in the
 * embedded store's writer queue (store/sqlite-queue.ts): "pid host start",
 * with its start time where the system tells it ("-" where not). On this
 * host, a holder is provably gone when its process no longer runs, or a
 * process with that id runs but started at another time (the id was
 * reused). From another host nothing can be proved here.
 */
import { hostname } from "node:os";

export interface ProcessIdentity {
  pid: number;
  /** Whether a process with this id still runs on this host. */
  isAlive(pid: number): boolean;
  /** When the process with this id started, as the system tells it; null where it cannot. */
  startTime?(pid: number): string | null;
  /** Whether the process with this id is stopped (SIGSTOP, a debugger); undefined where the system does not say. */
  isStopped?(pid: number): boolean | undefined;
}

export interface Holder {
  pid: number;
  host: string;
  start: string | null;
}

/** How `self` names itself: "pid host start". */
export function holderName(self: ProcessIdentity): string {
  return `${self.pid} ${hostname()} ${self.startTime?.(self.pid) ?? "-"}`;
}

/** A holder name read back; null when it does not parse. Older versions wrote "pid host". */
export function parseHolder(text: string): Holder | null {
  const parts = text.trim().split(" ");
  if (parts.length < 2 || parts.length > 3 || !/^\d+$/.test(parts[0]!) || parts[1] === "") return null;
  const start = parts[2] === undefined || parts[2] === "-" ? null : parts[2];
  return { pid: Number(parts[0]), host: parts[1]!, start };
}

/** Whether the process `holder` names is provably gone, as `self` can tell. */
export function processGone(holder: Holder, self: ProcessIdentity): boolean {
  if (holder.host !== hostname()) return false;
  if (!self.isAlive(holder.pid)) return true;
  const start = self.startTime?.(holder.pid) ?? null;
  return holder.start !== null && start !== null && start !== holder.start;
}

/** The same for a holder name; false when it does not parse. */
export function holderGone(name: string, self: ProcessIdentity): boolean {
  const holder = parseHolder(name);
  return holder !== null && processGone(holder, self);
}
