/**
 * What a commit of a checkout would publish, read without changing anything
 * (`slivingdoc status` and `slivingdoc diff`, docs/history.md): the files
 * that differ from the baseline, the marker blocks in them, the ones under
 * protected paths, and how far the baseline is behind the accepted state.
 *
 * Reading, not operating. Unlike an operation's open checkout
 * (with-checkout.ts), this
 * - takes the checkout's lock only while it reads the state and scans the
 *   visible files — the moments a pull or commit could change under it —
 *   and releases it before it diffs, reads blobs or asks the store;
 * - repairs nothing: an interrupted pull or commit (a journal, or a
 *   publication whose outcome is not settled) is reported as `interrupted`,
 *   and the next pull or commit repairs it first, as always;
 * - writes nothing: no baseline, no stat cache (a file whose stamp the
 *   cache does not vouch for is read again next time), no blob into the
 *   object cache (local files are hashed in memory). Like every call, it
 *   may move a checkout's state whole (settleState), never change it;
 * - asks the store for `current`, for the behind count, and only after the
 *   rest is known: when the store cannot be reached the count is null and
 *   `behindUnknown` says why (docs/history.md). When the store is past the
 *   baseline's generation, also for the accepted packs the checkout's cache
 *   lacks, into a throwaway cache, to refuse a history that does not pass
 *   through the baseline as pull refuses it.
 */
import { existsSync, mkdirSync, mkdtempSync, realpathSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DomainError, type LineRange } from "../contract/errors.ts";
import type { Baseline } from "./checkout/state-files.ts";
import { isProtected } from "../contract/path-sets.ts";
import { NO_PATH_SETS } from "../contract/results.ts";
import { fetchPacks, PackMissing, readManifest } from "./publish/accepted-state.ts";
import type { Manifest } from "./publish/manifest.ts";
import { acquireLock } from "./checkout/lock.ts";
import { checkoutStateDir, hasSetAside } from "./checkout/registry.ts";
import { readJournalProgress, settleState } from "./checkout/state.ts";
import { directoryIdentity } from "./checkout/directory-identity.ts";
import { lockWaitMs, lostState, pullRequired, refuseNesting } from "./checkout/session.ts";
import { privateStateMissing } from "./checkout/session-baseline.ts";
import type { EngineDeps } from "./engine.ts";
import { type FlatTree, ObjectCache } from "./git/object-cache.ts";
import { blobId, MissingObjectError } from "./git/objects.ts";
import { type FileStamp, refuseNonDirectory, scanNotebook } from "./checkout/scan.ts";
import { HeldPaths } from "./checkout/ignored.ts";
import { StatCache } from "./checkout/stat-cache.ts";
import { decodeText } from "./merge/text.ts";
import { type ChangeStatus, diffFlatTrees } from "./merge/tree-diff.ts";
import { diffStat, findMarkerBlocks } from "./merge/xdiff/index.ts";
import { commitBack, historyWentBackwards, refuseWentBackwards } from "./publish/went-backwards.ts";

export type Change = ChangeStatus;

/** One file a commit would publish, with its two sides' texts ("" when absent). */
export interface LocalChange {
  path: string;
  change: Change;
  insertions: number;
  deletions: number;
  /** Blob ids of the baseline's and the local version (null when absent): for the patch's index line only. */
  before: string | null;
  after: string | null;
  beforeText: string;
  afterText: string;
}

export interface LocalChanges {
  /** The checkout's real path. */
  path: string;
  /** The baseline's generation. */
  generation: number;
  /** The accepted generation, and how many publications the baseline lacks; null when the store could not be read. */
  accepted: number | null;
  behind: number | null;
  /** Why `behind` is null. */
  behindUnknown: string | null;
  /** Sorted by path. */
  changes: LocalChange[];
  /** Changed files holding complete marker blocks (a commit refuses them: UNRESOLVED_MARKERS). */
  markers: Array<{ path: string; ranges: LineRange[] }>;
  /** Changed files under protected paths (a commit refuses and resets them: READ_ONLY_PATH). */
  readOnly: string[];
  /** What the ignore rules leave out (never published), in path order: files, and directories with a trailing slash. */
  ignored: string[];
  /** An interrupted pull or commit that the next pull or commit repairs first. */
  interrupted: boolean;
}

const NOTHING_READ = ". Nothing was read from the store.";

function unreadable(cause: unknown): DomainError {
  if (cause instanceof DomainError) return cause;
  return new DomainError("LOCAL_STATE", "The private state of this checkout could not be read.", { cause });
}

/** What readUnderLock read of a checkout. */
export interface CheckoutRead {
  stateDir: string;
  baseline: Baseline;
  /** The baseline's files (blob ids by path). */
  baselineFiles: FlatTree;
  /** The visible files' blob ids, and the bytes of those read (by blob id). */
  local: FlatTree;
  contents: Map<string, Uint8Array>;
  /** Each visible file's stamp as the scan saw it. */
  stamps: Map<string, FileStamp>;
  interrupted: boolean;
  ignored: string[];
}

/**
 * The baseline, the visible files (blob ids, and the bytes read) and whether
 * an operation was interrupted, read under the lock, once the state at the
 * checkout's path is the state of the directory there (settleState).
 * `underLock` runs on what was read before the lock is released: for what
 * must happen before another call could change the checkout.
 */
export async function readUnderLock<T = undefined>(deps: EngineDeps, dir: string, underLock?: (read: CheckoutRead) => T): Promise<CheckoutRead & { kept?: T }> {
  const stateDir = checkoutStateDir(deps.privateRoot, deps.storeId, dir);
  const directory = directoryIdentity(dir, deps.directoryStat !== undefined ? { stat: deps.directoryStat } : {});
  if (!existsSync(join(stateDir, "state.json")) && !hasSetAside(deps.privateRoot, deps.storeId, stateDir, directory)) {
    throw pullRequired(null, NOTHING_READ);
  }
  let lock;
  try {
    mkdirSync(stateDir, { recursive: true, mode: 0o700 });
    lock = await acquireLock(join(stateDir, "lock"), deps.self, lockWaitMs(deps), deps);
  } catch (cause) {
    throw unreadable(cause);
  }
  try {
    let settled;
    try {
      settled = settleState({ privateRoot: deps.privateRoot, storeId: deps.storeId, dir, stateDir, directory }, deps);
    } catch (cause) {
      throw unreadable(cause);
    }
    const state = settled.state;
    if (state === null) throw pullRequired(lostState(settled), NOTHING_READ);
    const interrupted = existsSync(join(stateDir, "journal.json")) || state.publishing !== undefined;
    // Read the stat cache without keeping it: this call never writes it back.
    const cache = StatCache.load(join(stateDir, "stat-cache.json"));
    // Temporary files an interrupted call left are recorded in its journal: not the user's files.
    const ours = interrupted ? readJournalProgress(stateDir).scratch : new Set<string>();
    const baselineFiles = await baselineTreeFiles(deps, stateDir, state.baseline);
    const { files: scanned, ignored } = scanNotebook(dir, { known: cache.known, ours, held: new HeldPaths(baselineFiles) });
    const local: FlatTree = new Map();
    const contents = new Map<string, Uint8Array>();
    const stamps = new Map<string, FileStamp>();
    for (const [path, file] of scanned) {
      stamps.set(path, file.stamp);
      if (file.oid !== null) {
        local.set(path, file.oid);
        continue;
      }
      const oid = blobId(file.bytes);
      local.set(path, oid);
      contents.set(oid, file.bytes);
    }
    const read: CheckoutRead = { stateDir, baseline: state.baseline, baselineFiles, local, contents, stamps, interrupted, ignored };
    return underLock === undefined ? read : { ...read, kept: underLock(read) };
  } finally {
    lock.release();
  }
}

export interface LocalChangesInput {
  /** The checkout's directory. */
  path: string;
}

export async function readLocalChanges(deps: EngineDeps, input: LocalChangesInput): Promise<LocalChanges> {
  refuseNesting(deps, input.path);
  refuseNonDirectory(input.path);
  let dir: string;
  try {
    dir = realpathSync(input.path);
  } catch {
    throw pullRequired(null, NOTHING_READ);
  }
  refuseNesting(deps, dir);
  const { stateDir, baseline, local, contents, interrupted, ignored } = await readUnderLock(deps, dir);
  const found = await changesAgainst(deps, join(stateDir, "git"), baseline, local, contents);
  // Last, and only to count: a store that cannot be reached leaves the rest as it is.
  const { accepted, behindUnknown } = await acceptedNow(deps, stateDir, baseline);
  return {
    path: dir,
    generation: baseline.generation,
    accepted,
    behind: accepted === null ? null : Math.max(0, accepted - baseline.generation),
    behindUnknown,
    ...found,
    ignored,
    interrupted,
  };
}

/** The baseline's files, read from the checkout's object cache (the files no ignore rule hides). */
async function baselineTreeFiles(deps: EngineDeps, stateDir: string, baseline: Baseline): Promise<FlatTree> {
  if (baseline.tree === null) return new Map();
  const git = await ObjectCache.open(join(stateDir, "git"), deps.memory.objects, deps.randomId);
  try {
    return (await git.readFlatTree(baseline.tree)).files;
  } catch (cause) {
    if (cause instanceof MissingObjectError) throw privateStateMissing(cause);
    throw cause;
  } finally {
    git.close();
  }
}

/**
 * The files that differ between the baseline and `local` (`contents`: the
 * bytes of those read this call, by blob id; the rest are in the object
 * cache at `gitdir`), the marker blocks in them, and those under protected
 * paths.
 */
async function changesAgainst(
  deps: EngineDeps,
  gitdir: string,
  baseline: Baseline,
  local: FlatTree,
  contents: Map<string, Uint8Array>,
): Promise<Pick<LocalChanges, "changes" | "markers" | "readOnly">> {
  const git = await ObjectCache.open(gitdir, deps.memory.objects, deps.randomId);
  const changes: LocalChange[] = [];
  const markers: LocalChanges["markers"] = [];
  const readOnly: string[] = [];
  try {
    let base: FlatTree;
    try {
      base = baseline.tree === null ? new Map() : (await git.readFlatTree(baseline.tree)).files;
    } catch (cause) {
      if (cause instanceof MissingObjectError) throw privateStateMissing(cause);
      throw cause;
    }
    const text = async (oid: string | null): Promise<string> => {
      if (oid === null) return "";
      try {
        return decodeText(contents.get(oid) ?? (await git.readBlob(oid))) ?? "";
      } catch (cause) {
        if (cause instanceof MissingObjectError) throw privateStateMissing(cause);
        throw cause;
      }
    };
    const sets = deps.pathSets ?? NO_PATH_SETS;
    for (const { path: p, status: change, before, after } of diffFlatTrees(base, local)) {
      const beforeText = await text(before);
      const afterText = await text(after);
      const { insertions, deletions } = diffStat(beforeText, afterText);
      changes.push({ path: p, change, insertions, deletions, before, after, beforeText, afterText });
      if (after !== null) {
        const ranges = findMarkerBlocks(afterText);
        if (ranges.length > 0) markers.push({ path: p, ranges });
      }
      if (isProtected(p, sets)) readOnly.push(p);
    }
  } finally {
    git.close();
  }
  return { changes, markers, readOnly };
}

/** The accepted generation, or null with the reason when the store cannot be reached; refused when the store went backwards from `baseline`. */
async function acceptedNow(deps: EngineDeps, stateDir: string, baseline: Baseline): Promise<{ accepted: number | null; behindUnknown: string | null }> {
  try {
    const { manifest } = await readManifest(deps.store);
    // What a commit would publish, and how far behind, would be false against a store that went backwards: refused, as pull and commit refuse it.
    refuseWentBackwards(baseline, manifest);
    const backwards = historyWentBackwards(baseline, manifest, await commitAtBaseline(deps, stateDir, baseline, manifest));
    if (backwards !== null) throw backwards;
    return { accepted: manifest?.generation ?? 0, behindUnknown: null };
  } catch (e) {
    // An untrusted manifest is an operator's matter, reported as such; a store out of reach is not an error here.
    if (e instanceof DomainError && e.reason !== "MANIFEST_READ" && e.reason !== "PACK_DOWNLOAD") throw e;
    return { accepted: null, behindUnknown: "the store could not be reached" };
  }
}

/**
 * The commit the store's history holds at the baseline's generation, found
 * as pull finds it (storeWentBackwards): walked back from the accepted head
 * through the checkout's object cache and the accepted packs it lacks — a
 * store past that generation whose history does not pass through the
 * baseline is refused by status as by pull. Those packs go into a
 * throwaway cache: status writes nothing into the checkout's. Null when the
 * store is not past the baseline's generation, or cannot be told: a pack
 * gone meanwhile (compacted away under a newer `current`).
 */
async function commitAtBaseline(deps: EngineDeps, stateDir: string, baseline: Baseline, manifest: Manifest | null): Promise<string | null> {
  if (baseline.generation === 0 || manifest === null || manifest.generation <= baseline.generation) return null;
  const scratch = mkdtempSync(join(tmpdir(), "slivingdoc-status-"));
  const open: ObjectCache[] = [];
  try {
    const own = await ObjectCache.open(join(stateDir, "git"), deps.memory.objects, deps.randomId);
    open.push(own);
    const fetched = await ObjectCache.open(join(scratch, "git"), deps.memory.objects, deps.randomId);
    open.push(fetched);
    await fetchPacks(deps.store, fetched, manifest.packs.filter((p) => !own.hasPack(p.sha256)), "the accepted state");
    const both = { find: async (oid: string) => (await own.find(oid)) ?? (await fetched.find(oid)) };
    return await commitBack(both, manifest.head, manifest.generation - baseline.generation);
  } catch (e) {
    if (e instanceof PackMissing) return null;
    throw e;
  } finally {
    for (const git of open) git.close();
    rmSync(scratch, { recursive: true, force: true });
  }
}
