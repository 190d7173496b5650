/**
 * A file-system watcher on a checkout (as git's fsmonitor): a server that
 * answers many calls on one checkout learns from the kernel which paths
 * changed since its last scan, so a warm call lstat's those and trusts what
 * it saw for the rest (watched-scan.ts). It is only ever a narrowing:
 *
 * - it watches only where no event can be missed: Linux (inotify, through
 *   the runtime's recursive `fs.watch`), on a local file system (ext2/3/4,
 *   xfs, btrfs, tmpfs) with nothing else mounted below the checkout. A
 *   network file system, FUSE, 9p, virtiofs or overlay, and every other
 *   platform, is scanned in full as before;
 * - before each call a cookie file is written at the checkout's root and
 *   its event awaited: the kernel queues events in order, so every change
 *   made before the call has then been heard;
 * - the runtime (Bun) adds the watches of the whole tree before `fs.watch`
 *   returns, and a new directory's as it handles its creation event, so
 *   before any later cookie is heard; a new directory also makes the next
 *   call scan in full (watched-scan.ts), which reads what was written in it
 *   before its watch;
 * - whenever events may have been lost, the next call scans in full: the
 *   first call (nothing heard yet), the watcher's error (a queue overflow,
 *   a watch limit reached), an event without a name, too many events, a
 *   cookie that does not come back, the root replaced.
 */
import { lstatSync, readFileSync, rmSync, statfsSync, watch, writeFileSync, type FSWatcher } from "node:fs";
import type { Clock, RandomSource } from "../../contract/clock.ts";
import type { IgnoreRules } from "../patterns/ignore.ts";
import { RecentMap } from "../memory/recent-map.ts";
import { isWatchCookie, type NotebookFiles, WATCH_COOKIE_PREFIX } from "./scan.ts";

/** What the last scan found, and what it depended on (kept and used by watched-scan.ts). */
export interface WatchedView {
  /** Every file with its blob id (never its bytes), in path order. */
  files: NotebookFiles;
  ignored: string[];
  /** Each directory entered ("" or "a/b/") with the ignore rules in force in it. */
  rules: Map<string, IgnoreRules | null>;
  /** Every question asked of the held paths ("1dir" holdsBelow, "0path" has) and its answer. */
  held: Map<string, boolean>;
  maxFileBytes: number;
}

/** What a cookie's round trip takes: a name for it, and a bound on the wait. */
export type CookieClock = Pick<Clock, "sleep"> & Pick<RandomSource, "randomId">;

/** statfs f_type of the local file systems whose every change inotify reports. */
const LOCAL_FILE_SYSTEMS = new Set([
  0xef53, // ext2, ext3, ext4
  0x58465342, // xfs
  0x9123683e, // btrfs
  0x01021994, // tmpfs
]);

/** Beyond this many changed paths between two calls, a full scan costs less than narrowing. */
export const MOST_CHANGED_PATHS = 4_096;

/** How long a cookie's event may take before the watcher is not trusted for this call. */
const COOKIE_WAIT_MS = 2_000;

/** Whether every change below `dir` reaches an inotify watch (see the module's comment). */
export function watchable(dir: string): boolean {
  try {
    if (!LOCAL_FILE_SYSTEMS.has(statfsSync(dir).type)) return false;
  } catch {
    return false;
  }
  return !mountedBelow(dir);
}

/**
 * Whether a file system is mounted at or below `dir` (its changes are
 * another file system's); true when that cannot be told — and so on every
 * system without Linux's /proc/self/mountinfo, where this watcher is not
 * tested.
 */
function mountedBelow(dir: string): boolean {
  let text: string;
  try {
    text = readFileSync("/proc/self/mountinfo", "utf8");
  } catch {
    return true;
  }
  for (const line of text.split("\n")) {
    const field = line.split(" ")[4];
    if (field === undefined) continue;
    // Mount points escape space, tab, newline and backslash as octal.
    const point = field.replace(/\\([0-7]{3})/g, (_, octal: string) => String.fromCharCode(parseInt(octal, 8)));
    if (point.startsWith(`${dir}/`)) return true;
  }
  return false;
}

/** The root's identity: a checkout moved away and another put in its place is another directory. */
function rootIdentity(dir: string): string | null {
  try {
    const st = lstatSync(dir);
    return st.isDirectory() ? `${st.dev}:${st.ino}` : null;
  } catch {
    return null;
  }
}

export class CheckoutWatcher {
  /** Paths (relative, slash-separated) named by events since the last call took them. */
  private changed = new Set<string>();
  /** Events may have been missed since the last call: it must scan in full. The first call does. */
  private lost = true;
  private broken = false;
  private readonly cookies = new Map<string, () => void>();
  /** What the last scan found, kept by watched-scan.ts; null until a full scan. */
  view: WatchedView | null = null;

  private constructor(
    readonly dir: string,
    private readonly identity: string,
    private readonly watcher: FSWatcher,
  ) {
    watcher.on("change", (_event, name) => this.heard(name));
    // Whatever the runtime reports as the watch's error (an overflow of the
    // kernel's queue, a watch limit reached while adding a new directory's):
    // changes from now on may go unheard, so this watcher is done.
    watcher.on("error", () => this.close());
    watcher.unref();
  }

  /**
   * A watcher on `dir`; null while there is no directory there yet, and
   * "refused" where changes could go unheard or the watch cannot be set up.
   */
  static start(dir: string): CheckoutWatcher | null | "refused" {
    const identity = rootIdentity(dir);
    if (identity === null) return null;
    if (!watchable(dir)) return "refused";
    try {
      return new CheckoutWatcher(dir, identity, watch(dir, { recursive: true }));
    } catch {
      return "refused"; // ENOSPC (the watch limit), EMFILE...: scanned in full as before.
    }
  }

  /** Whether this watcher still hears every change of the very directory it was set on. */
  get alive(): boolean {
    return !this.broken && rootIdentity(this.dir) === this.identity;
  }

  private heard(name: string | Buffer | null): void {
    if (typeof name !== "string" || name === "" || name === ".") {
      // A change the runtime could not name: what changed is unknown. Bun
      // reports a kernel queue overflow this way (seen with
      // /proc/sys/fs/inotify/max_queued_events lowered to 16: the events lost
      // came back as events without a name), not as an error.
      this.markLost();
      return;
    }
    if (isWatchCookie(name)) {
      this.cookies.get(name)?.();
      return;
    }
    if (this.lost) return;
    this.changed.add(name);
    if (this.changed.size > MOST_CHANGED_PATHS) this.markLost();
  }

  /** Events may have been missed: the next call scans in full (also a test's simulated overflow). */
  markLost(): void {
    this.lost = true;
    this.changed = new Set();
  }

  /**
   * Write a cookie at the root and wait for its event: every change made
   * before now has then been heard. False when it does not come back (the
   * call then scans in full).
   */
  async sync(clock: CookieClock): Promise<boolean> {
    if (!this.alive) return false;
    const name = `${WATCH_COOKIE_PREFIX}${clock.randomId(8)}`;
    const heard = new Promise<boolean>((resolve) => this.cookies.set(name, () => resolve(true)));
    try {
      writeFileSync(`${this.dir}/${name}`, "");
      rmSync(`${this.dir}/${name}`, { force: true });
    } catch {
      this.cookies.delete(name);
      return false;
    }
    const ok = await Promise.race([heard, clock.sleep(COOKIE_WAIT_MS).then(() => false)]);
    this.cookies.delete(name);
    return ok && this.alive;
  }

  /** The paths changed since the last call, or null when events may have been lost; either way, listening starts afresh. */
  take(): Set<string> | null {
    const changed = this.lost ? null : this.changed;
    this.lost = false;
    this.changed = new Set();
    return changed;
  }

  close(): void {
    this.broken = true;
    this.markLost();
    this.view = null;
    try {
      this.watcher.close();
    } catch {
      /* already closed */
    }
  }
}

/**
 * The watchers of a server's checkouts (engine/process-memory.ts), by
 * checkout directory; the least recently used beyond the bound are closed.
 */
export class WatcherMemory {
  private readonly watchers: RecentMap<string, CheckoutWatcher>;
  /** Checkouts this process does not watch (see CheckoutWatcher.start): one entry per checkout served. */
  private readonly refused = new Set<string>();

  constructor(bound: number) {
    this.watchers = new RecentMap(bound, (_dir, old) => {
      old.close();
      return true;
    });
  }

  /** The watcher on `dir`, started when there is none (or the last one stopped hearing); null where it cannot watch. */
  for(dir: string): CheckoutWatcher | null {
    if (this.refused.has(dir)) return null;
    const known = this.watchers.get(dir);
    if (known?.alive) {
      this.watchers.set(dir, known);
      return known;
    }
    known?.close();
    this.watchers.delete(dir);
    const started = CheckoutWatcher.start(dir);
    if (started === null) return null;
    // Not tried again by this process: a watch limit reached would otherwise cost a failed recursive watch per call.
    if (started === "refused") {
      this.refused.add(dir);
      return null;
    }
    this.watchers.set(dir, started);
    return started;
  }

  close(): void {
    for (const [, watcher] of this.watchers.entries()) watcher.close();
  }
}
