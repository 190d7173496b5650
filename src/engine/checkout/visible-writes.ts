/**
 * Writing visible files one at a time, journaled, and without overwriting
 * what someone else writes meanwhile: the writes of a call
 * (materialize.ts) and those of the recovery of a call that died
 * (recovery.ts) both go through here, each step recorded in the journal's
 * progress before it is taken and again once it was.
 *
 * The directory is shared: an editor, a script logging into a file, or a
 * second agent may write a file while a call is rewriting it. A file is
 * only ever replaced while it still holds the content the call computed
 * from (`before`, as scanned). It is linked to a second name, its bytes
 * are read there and compared, it is checked once more an instant before
 * the new content is renamed over it, and the second name then shows
 * whether anything was written to it in that instant: appended bytes are
 * appended to the new file too, and any other change puts the written file
 * back (replaceIfUnchanged). A file that no longer holds what was scanned
 * is merged again with what it holds now, as the caller says (`remerge`:
 * the new content is the local side), and tried again; or, when that keeps
 * failing or the caller says so, left as it is for the next call, its
 * baseline chosen so that the next merge takes the writes for local edits
 * (materialize.ts, `skippedBase`). A writer that opened the old file just
 * before the rename (`echo line >> FILE` opens, then writes) may write into
 * it after the rename, into a file that no longer has a name: the call keeps
 * it open and reads it again before it answers (replaced-files.ts), and what was
 * appended to it goes into the new file as a local edit. What is written
 * after that last look is lost (docs/failures.md).
 *
 * A file that did not exist before is written in place, which spares a
 * rename per file on a cold pull: it is created exclusively (so it cannot
 * be someone else's file, and one that appeared since the scan is left
 * alone), and a crash can leave it only half written — a prefix of its new
 * content, which recovery recognises as ours and removes.
 *
 * Temporary files live beside their destination, as the rename needs, under
 * names (`.slivingdoc-partial-…`) that the journal records before they are
 * made: recovery removes exactly those, and the scan refuses the pattern by
 * name, so a user's file is never taken for one of ours.
 */
import { closeSync, linkSync, lstatSync, mkdirSync, openSync, readFileSync, renameSync, rmdirSync, rmSync, type Stats } from "node:fs";
import { basename, dirname, join } from "node:path";
import type { FileClock, RandomSource } from "../../contract/clock.ts";
import type { JournalProgressLog } from "./state.ts";
import type { ObjectCache } from "../git/object-cache.ts";
import { blobId } from "../git/objects.ts";
import { droppedBytes } from "../memory/garbage.ts";
import { type FileStamp, stampOf } from "./scan.ts";
import { racyWindow } from "./stat-cache.ts";
import { appendTo, errno, holdAside, lstatOrNull, NO_HARD_LINKS, writeNew } from "./file-writes.ts";
import type { ReplacedFiles } from "./replaced-files.ts";

/** A visible file a call rewrites, as the journal records it: its blob before and after (null: absent). */
export interface FileWrite {
  path: string;
  before: string | null;
  after: string | null;
}

/** A visible file this call wrote (or removed: `stamp` null), stamped right after, for the stat cache. */
export interface WrittenFile {
  path: string;
  after: string | null;
  stamp: FileStamp | null;
  /** When the stamp was taken. */
  takenMs: number;
}

/** One file to bring from what it holds (`expected`, null: absent) to `target`. */
export interface Change {
  path: string;
  expected: string | null;
  target: string | null;
}

/**
 * The moments of replacing a file: its content checked, the gate passed
 * (the next instant is the rename), and the rename done.
 */
export type ReplaceMoment = "checked" | "gated" | "renamed";

/** A call's writing of visible files: where, on which side of the journal, and its records. */
export interface Writer {
  root: string;
  git: ObjectCache;
  side: "after" | "before";
  progress: JournalProgressLog;
  /** Directories made (or known to exist) this call: one mkdir per directory, not per file. */
  made: Set<string>;
  /** At each moment of replacing a file (replaceIfUnchanged): where tests write to it. */
  onReplace?: (path: string, moment: ReplaceMoment) => void;
  /** The clock that file times are compared with. */
  now: () => number;
  /** Names temporary files. */
  randomId: RandomSource["randomId"];
  /** Before each file: LOCAL_STATE once the checkout's lock is no longer this call's (CheckoutState.checkLock). */
  checkLock: () => void;
  /** Where the files replaced stay open until the call answers; without it, each is let go right after its rename. */
  replaced?: ReplacedFiles;
}

/** A writer's clock and names, from the call's (EngineDeps). */
export function writerClock(clock: FileClock): Pick<Writer, "now" | "randomId"> {
  return { now: () => clock.now().getTime(), randomId: clock.randomId };
}

function other(side: "after" | "before"): "after" | "before" {
  return side === "after" ? "before" : "after";
}

/** A fresh temporary name beside `path`, recorded in the journal before anything is made under it. */
function scratchFile(w: Writer, path: string): string {
  const name = `.slivingdoc-partial-${w.randomId(8)}`;
  w.progress.scratch(join(dirname(path), name));
  return join(w.root, dirname(path), name);
}

/** The directories above `path` exist (made if needed); false when something else is in the way — a file written there since the scan. */
function ensureParent(w: Writer, path: string): boolean {
  const dir = dirname(join(w.root, path));
  if (w.made.has(dir)) return true;
  try {
    // Synchronous calls: a cold pull writes thousands, and thousands of small awaited ones cost more than the work.
    mkdirSync(dir, { recursive: true });
  } catch (e) {
    if (errno(e) === "EEXIST" || errno(e) === "ENOTDIR") return false;
    throw e;
  }
  w.made.add(dir);
  return true;
}


/** What is at `file` now, for the stat cache. */
function stamped(w: Writer, c: Change, file: string): WrittenFile {
  let stamp: FileStamp | null = null;
  if (c.target !== null) {
    try {
      stamp = stampOf(lstatSync(file));
    } catch {
      /* gone again already: the next scan reads what is there */
    }
  }
  return { path: c.path, after: c.target, stamp, takenMs: w.now() };
}

/**
 * Replace or remove the file at `c.path`, which holds `c.expected`: false,
 * leaving it as it is, when it no longer does (see the top of this file).
 *
 * The file is held under a second name (the same file), read there and
 * compared; then, a moment before the rename, a gate: nothing was written
 * while it was read, and the path still names it. A write in the instant
 * between the gate and the rename is found after it (afterRename). The old
 * file is held open too, for a writer that opened it before the rename and
 * writes after that look (ReplacedFiles).
 */
function replaceIfUnchanged(w: Writer, c: Change, bytes: Uint8Array | null): boolean {
  const file = join(w.root, c.path);
  const tmp = bytes === null ? null : scratchFile(w, c.path);
  const aside = scratchFile(w, c.path);
  let old: number | null = null;
  try {
    if (tmp !== null && bytes !== null && !writeNew(tmp, bytes)) throw new Error("a fresh temporary name was taken");
    const held = holdAside(file, aside);
    // Removed since the scan: for a removal that is the same; for a rewrite, an edit to keep.
    if (held === "gone") return tmp === null;
    if (held === "other") return false;
    if (held === "linked") old = openSync(aside, "r");
    // Without hard links the comparison is made at the path itself, a moment before the rename (docs/failures.md).
    const subject = held === "linked" ? aside : file;
    const seen = lstatSync(subject);
    const checked = readFileSync(subject);
    if (blobId(checked) !== c.expected) return false;
    w.onReplace?.(c.path, "checked");
    const gate = lstatSync(subject);
    if (gate.size !== seen.size || gate.mtimeMs !== seen.mtimeMs) return false;
    if (held === "linked" && lstatOrNull(file)?.ino !== gate.ino) return false;
    w.onReplace?.(c.path, "gated");
    swap(w, c, file, tmp);
    if (old !== null) {
      w.onReplace?.(c.path, "renamed");
      const kept = afterRename(w, c, { file, aside, tmp, gate, checked, fd: old });
      old = null; // afterRename closed it, or handed it on
      if (!kept) return false;
    }
    if (tmp === null) {
      // The second name goes first: the directory must be empty to go too.
      rmSync(aside, { force: true });
      removeEmptyParents(w.root, c.path);
    }
    return true;
  } finally {
    if (old !== null) closeSync(old);
    if (tmp !== null) rmSync(tmp, { force: true });
    rmSync(aside, { force: true });
  }
}

/** The old file, just replaced: its two names, the new content's temporary one (null: removed), the gate's look at it, what it held then, and a descriptor of it. */
interface Replaced {
  file: string;
  aside: string;
  tmp: string | null;
  gate: Stats;
  checked: Uint8Array;
  fd: number;
}

/**
 * Right after the rename, a look at the old file for a write in the instant
 * before it: when it only appended to the file (a script logging into it),
 * the appended bytes are appended to the new content too; anything else,
 * and the written file goes back as it was left (false). Appending rather
 * than putting back keeps a write made to the new file in the instant after
 * the rename, which putting back would lose. The old file's descriptor is
 * closed, or, while the old file has no name, kept for the look before the
 * call answers (ReplacedFiles).
 */
function afterRename(w: Writer, c: Change, r: Replaced): boolean {
  let fd: number | null = r.fd;
  try {
    const late = writtenAfter(w, r.aside, r.gate, r.checked);
    if (late === "other") {
      putBack(w, c, r.aside, r.file);
      return false;
    }
    if (late !== null) {
      keepLateAppend(w, c, r.aside, r.file, late);
      // A removal put the old file back at its name: nothing left without one.
      if (r.tmp === null) return false;
    }
    const known = late === null ? r.checked : Buffer.concat([r.checked, late]);
    const prefix = late === null ? c.expected! : blobId(known);
    if (w.replaced) {
      w.replaced.keep({ file: r.file, fd, size: known.length, prefix, removed: r.tmp === null });
      fd = null;
    }
    return true;
  } finally {
    if (fd !== null) closeSync(fd);
  }
}

/** The replacement itself: the new content renamed over the file, or the file removed; journaled. */
function swap(w: Writer, c: Change, file: string, tmp: string | null): void {
  if (tmp === null) {
    w.progress.log({ path: c.path, side: w.side });
    rmSync(file, { force: true });
  } else {
    w.progress.log({ path: c.path, side: w.side, tmp: basename(tmp) });
    renameSync(tmp, file);
  }
  w.progress.log({ path: c.path, side: w.side, done: true });
}

/**
 * What was written to the old file, held at `aside`, since the gate's look
 * (`gate`, when it held `checked`): null for nothing; the bytes it gained
 * when it only grew by them; "other" for any other change.
 */
function writtenAfter(w: Writer, aside: string, gate: Stats, checked: Uint8Array): Uint8Array | null | "other" {
  const now = lstatSync(aside);
  if (now.size === gate.size && now.mtimeMs === gate.mtimeMs) {
    // Same size and time: unchanged, unless the time is so recent that a
    // second write in the same clock tick would have left it as it was.
    if (now.mtimeMs < w.now() - racyWindow(stampOf(now))) return null;
    return Buffer.from(readFileSync(aside)).equals(checked) ? null : "other";
  }
  const content = readFileSync(aside);
  if (content.length <= checked.length || !Buffer.from(content.buffer, content.byteOffset, checked.length).equals(checked)) return "other";
  return content.subarray(checked.length);
}

/** Put the written file back as it was left, the new content dropped (a change other than an append, in the instant before the rename). */
function putBack(w: Writer, c: Change, aside: string, file: string): void {
  w.progress.log({ path: c.path, side: other(w.side), tmp: basename(aside) });
  renameSync(aside, file);
  w.progress.log({ path: c.path, side: other(w.side), done: true });
}

/**
 * Bytes appended to the old file in the instant before the rename: appended
 * to what is at the path now, as the writer meant them. For a removal, the
 * appended file comes back whole (a new one made at the path meanwhile gets
 * it appended), for the caller to merge again as an edit of a file the other
 * side deleted.
 */
function keepLateAppend(w: Writer, c: Change, aside: string, file: string, late: Uint8Array): void {
  if (c.target === null) {
    try {
      linkSync(aside, file);
      return;
    } catch (e) {
      if (errno(e) !== "EEXIST") throw e;
    }
    late = readFileSync(aside);
  }
  appendTo(file, late);
}


/**
 * Create the file at `c.path`, absent when the call looked: false when
 * something is there now. In place for a call's own writes (see the top of
 * this file); whole, through a temporary file linked into place, for
 * recovery's, which no journal describes as partial.
 */
function createIfAbsent(w: Writer, c: Change, bytes: Uint8Array): boolean {
  if (!ensureParent(w, c.path)) return false;
  const file = join(w.root, c.path);
  if (w.side === "after") {
    w.progress.log({ path: c.path, side: w.side });
    const made = writeNew(file, bytes);
    w.progress.log({ path: c.path, side: w.side, done: made });
    return made;
  }
  const tmp = scratchFile(w, c.path);
  try {
    if (!writeNew(tmp, bytes)) throw new Error("a fresh temporary name was taken");
    w.progress.log({ path: c.path, side: w.side, tmp: basename(tmp) });
    try {
      linkSync(tmp, file);
    } catch (e) {
      if (errno(e) === "EEXIST") return false;
      if (!NO_HARD_LINKS.has(errno(e) ?? "")) throw e;
      // No hard links: only a rename, after a look that nothing is there.
      if (lstatOrNull(file) !== null) return false;
      renameSync(tmp, file);
    }
    w.progress.log({ path: c.path, side: w.side, done: true });
    return true;
  } finally {
    rmSync(tmp, { force: true });
  }
}

function removeEmptyParents(root: string, path: string): void {
  // Directories exist only through their files
  // (docs/decisions/0005-the-notebook-contract.md).
  for (let dir = dirname(path); dir !== "." && dir !== ""; dir = dirname(dir)) {
    try {
      rmdirSync(join(root, dir));
    } catch {
      break; // Not empty, or already gone.
    }
  }
}

/**
 * What a file found written to since it was scanned becomes: merged again,
 * with its content now (null: absent) as the local side, into a new target
 * (null: absent) — or null to leave it as it is, for the next call.
 */
export type Remerge = (path: string, now: Uint8Array | null) => Promise<{ target: string | null } | null>;

/** How many times one file is merged again while someone keeps writing it, before it is left for the next call. */
const REMERGES = 5;

/** Bring one file to `c.target`, whose content is `bytes`; false when it no longer holds `c.expected`. */
function applyOne(w: Writer, c: Change, bytes: Uint8Array | null): boolean {
  if (bytes === null) return c.expected === null || replaceIfUnchanged(w, c, null);
  if (c.expected === null) return createIfAbsent(w, c, bytes);
  return ensureParent(w, c.path) && replaceIfUnchanged(w, c, bytes);
}

/**
 * Bring each file to its target, removals first so a file can give way to a
 * directory of the same name. A file that no longer holds what was expected
 * — someone wrote it since the scan — is merged again with what it holds
 * now (`remerge`) and tried again, up to REMERGES times; without `remerge`,
 * or after that, it is left as it is. The files written (with the content
 * they were given), and the paths left.
 */
export async function apply(
  w: Writer,
  changes: Change[],
  hooks: { afterWrite?: () => Promise<void> | void; written?: (oid: string, bytes: Uint8Array) => void; remerge?: Remerge } = {},
): Promise<{ written: WrittenFile[]; left: string[] }> {
  const done: WrittenFile[] = [];
  const left: string[] = [];
  const removals = changes.filter((c) => c.target === null);
  for (const first of [...removals, ...changes.filter((c) => c.target !== null)]) {
    let c = first;
    for (let tries = 0; ; tries++) {
      const bytes = c.target === null ? null : await w.git.readBlob(c.target);
      w.checkLock();
      if (applyOne(w, c, bytes)) {
        done.push(stamped(w, c, join(w.root, c.path)));
        if (c.target !== null && bytes !== null) hooks.written?.(c.target, bytes);
        // The blob read to write the file (and its compressed entry), dead now.
        if (bytes !== null) droppedBytes(bytes.byteLength);
        break;
      }
      const now = current(w.root, c.path);
      // Something else than a file there now (a directory, a link): not ours to merge.
      const again = now === undefined || tries >= REMERGES || !hooks.remerge ? null : await hooks.remerge(c.path, now);
      if (again === null || now === undefined) {
        left.push(c.path);
        break;
      }
      c = { path: c.path, expected: now === null ? null : blobId(now), target: again.target };
    }
    await hooks.afterWrite?.();
  }
  return { written: done, left };
}

/** What is on disk at `path` now: null if nothing, undefined if not a regular file. */
export function current(root: string, path: string): Uint8Array | null | undefined {
  const file = join(root, path);
  try {
    const st = lstatSync(file);
    if (!st.isFile()) return undefined; // Something else now: not ours to touch.
  } catch {
    return null;
  }
  return readFileSync(file);
}
