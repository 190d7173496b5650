/**
 * A scan narrowed by a watcher (watcher.ts): after the cookie's round trip,
 * only the paths the events named are lstat'ed (and read when the stat
 * cache cannot vouch for them); every other file is as the last scan found
 * it. The result is the full scan's, always: whatever the narrowing cannot
 * decide as the full scan would — a directory that came, went or was
 * moved, a `.gitignore` changed, a file that breaks the notebook contract,
 * a held path answered differently, a file the stat cache no longer
 * records as the view does — is answered by a full scan, as is every call
 * after events may have been lost.
 */
import { lstatSync } from "node:fs";
import type { IgnoreRules } from "../patterns/ignore.ts";
import { IGNORE_FILE } from "../patterns/ignore.ts";
import { isDirectoryMark } from "./directory-identity.ts";
import { HeldPaths } from "./ignored.ts";
import { isIgnored, isWatchCookie, PARTIAL_FILE, type Scan, scanFile, type ScanOptions, type Scanned, scanNotebook, startScan, type NotebookFiles } from "./scan.ts";
import type { CheckoutWatcher, CookieClock, WatchedView } from "./watcher.ts";

export interface WatchedScanOptions extends ScanOptions {
  held: HeldPaths;
  /** Every file read must get its blob id: the view keeps ids, never bytes. */
  absorb: NonNullable<ScanOptions["absorb"]>;
  maxFileBytes: number;
  /** The blob id the stat cache records for a path: the view vouches only for what it also records (that blob is stored). */
  recorded?: (path: string) => string | null;
}

/** Scan `watcher.dir`: narrowed to the changed paths when the watcher heard everything, else in full. */
export async function scanWatched(watcher: CheckoutWatcher, options: WatchedScanOptions, clock: CookieClock): Promise<Scanned & { narrowed: boolean }> {
  const synced = await watcher.sync(clock);
  const changed = watcher.take();
  const view = watcher.view;
  // A scan that throws (a refused file) leaves no view behind: the next call scans in full.
  watcher.view = null;
  const usable = synced && changed !== null && view !== null && viewHolds(view, changed, options);
  const narrowed = usable ? narrowScan(watcher.dir, view, changed, options) : null;
  if (narrowed !== null) {
    watcher.view = narrowed.view;
    return { ...narrowed.scanned, narrowed: true };
  }
  const full = fullScan(watcher.dir, options);
  watcher.view = full.view;
  return { ...full.scanned, narrowed: false };
}

/** Whether the view still stands for the files no event named: same limit, same held answers, and the stat cache records the same blobs. */
function viewHolds(view: WatchedView, changed: Set<string>, options: WatchedScanOptions): boolean {
  if (view.maxFileBytes !== options.maxFileBytes) return false;
  for (const [question, answer] of view.held) {
    const path = question.slice(1);
    if ((question[0] === "1" ? options.held.holdsBelow(path) : options.held.has(path)) !== answer) return false;
  }
  const recorded = options.recorded;
  if (recorded === undefined) return true;
  for (const [path, file] of view.files) if (!changed.has(path) && recorded(path) !== file.oid) return false;
  return true;
}

/** The held paths, with each question the scan asks and its answer written down (WatchedView.held). */
class HeldRecorder extends HeldPaths {
  constructor(
    private readonly inner: HeldPaths,
    readonly answers: Map<string, boolean>,
  ) {
    super();
  }

  override has(path: string): boolean {
    const answer = this.inner.has(path);
    this.answers.set(`0${path}`, answer);
    return answer;
  }

  override holdsBelow(dir: string): boolean {
    const answer = this.inner.holdsBelow(dir);
    this.answers.set(`1${dir}`, answer);
    return answer;
  }
}

function fullScan(dir: string, options: WatchedScanOptions): { scanned: Scanned; view: WatchedView } {
  const rules = new Map<string, IgnoreRules | null>();
  const held = new HeldRecorder(options.held, new Map());
  const scanned = scanNotebook(dir, { ...options, held, onDirectory: (relDir, r) => rules.set(relDir, r) });
  const view = { files: idsOnly(scanned.files), ignored: scanned.ignored, rules, held: held.answers, maxFileBytes: options.maxFileBytes };
  return { scanned, view };
}

/** The files as the view keeps them: each with its id and no mark of having been read (the next call did not read it). */
function idsOnly(files: NotebookFiles, only?: Iterable<string>): NotebookFiles {
  const kept = new Map(files);
  for (const path of only ?? files.keys()) {
    const file = kept.get(path);
    if (file !== undefined && "read" in file) kept.set(path, { stamp: file.stamp, oid: file.oid, bytes: null });
  }
  return kept;
}

/** The scan of the changed paths over the view, or null when only a full scan can answer as a full scan would. */
function narrowScan(dir: string, view: WatchedView, changed: Set<string>, options: WatchedScanOptions): { scanned: Scanned; view: WatchedView } | null {
  if (changed.size === 0) return { scanned: { files: view.files, ignored: view.ignored.slice() }, view };
  const held = new HeldRecorder(options.held, new Map(view.held));
  const scan = startScan({ ...options, held });
  const files = new Map(view.files);
  const ignored = new Set(view.ignored);
  let added = false;
  for (const path of changed) {
    const outcome = rescan(dir, view, path, { scan, files, ignored });
    if (outcome === "full") return null;
    added ||= outcome === "added";
  }
  if (scan.invalid.length > 0) return null;
  const scanned = { files: added ? new Map([...files].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) : files, ignored: [...ignored].sort() };
  return { scanned, view: { ...view, files: idsOnly(scanned.files, changed), ignored: scanned.ignored, held: held.answers } };
}

interface Narrowing {
  scan: Scan;
  files: NotebookFiles;
  ignored: Set<string>;
}

/**
 * One path an event named, lstat'ed again and put where the full scan
 * would: "added" when it is new to the result (the order must be made
 * again), "same" otherwise, "full" when only a full scan can tell.
 */
function rescan(dir: string, view: WatchedView, path: string, n: Narrowing): "added" | "same" | "full" {
  const slash = path.lastIndexOf("/");
  const name = path.slice(slash + 1);
  const relDir = path.slice(0, slash + 1);
  if (relDir === "" && (isDirectoryMark(name) || isWatchCookie(name))) return "same";
  // A rule file changes what is ignored; `.git` and a name that is not ours are refused by the full scan.
  if (name === IGNORE_FILE || PARTIAL_FILE.test(name) || path.split("/").some((s) => s.toLowerCase() === ".git")) return "full";
  // A directory that was there came, went, was replaced or moved: its files are unknown.
  if (view.rules.has(`${path}/`) || n.ignored.has(`${path}/`)) return "full";
  if (underIgnoredDirectory(n.ignored, relDir)) return "same";
  const rules = view.rules.get(relDir);
  if (rules === undefined) return "full"; // in a directory the last scan did not enter: a new one
  let st;
  try {
    st = lstatSync(`${dir}/${path}`);
  } catch (e) {
    const code = (e as { code?: unknown } | null)?.code;
    if (code !== "ENOENT" && code !== "ENOTDIR") return "full";
    n.files.delete(path);
    n.ignored.delete(path);
    return "same";
  }
  if (!st.isFile()) return "full"; // a new directory, or what the full scan refuses
  if (isIgnored(n.scan, rules, path, name, false)) {
    n.files.delete(path);
    n.ignored.add(path);
    return "same"; // the ignored entries are sorted anew anyway
  }
  scanFile(n.scan, `${dir}/${path}`, path, st);
  const file = n.scan.files.get(path);
  if (file === undefined) return "full"; // refused, or gone since the lstat
  n.ignored.delete(path);
  // A path already there keeps its place in the map; a new one is put in order after.
  const had = n.files.has(path);
  n.files.set(path, file);
  return had ? "same" : "added";
}

/** Whether `relDir` ("a/b/") is, or is below, a directory the last scan ignored and did not enter. */
function underIgnoredDirectory(ignored: Set<string>, relDir: string): boolean {
  for (let i = relDir.indexOf("/"); i >= 0; i = relDir.indexOf("/", i + 1)) if (ignored.has(relDir.slice(0, i + 1))) return true;
  return false;
}
