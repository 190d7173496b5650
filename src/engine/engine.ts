/**
 * What every operation needs, injected (no globals): the store, where the
 * private state lives, who we are, time and chance, and the hooks tests and
 * logs use.
 */
import type { DirectoryStat } from "./checkout/directory-identity.ts";
import { mkdirSync, realpathSync } from "node:fs";
import { resolve } from "node:path";
import { DEFAULT_AGENT } from "../contract/agent.ts";
import type { Clock, RandomSource } from "../contract/clock.ts";
import { DomainError, type ErrorFile } from "../contract/errors.ts";
import { ENGINE_DETAILS } from "../contract/tokens.ts";
import { isAtOrBelow } from "../contract/path-containment.ts";
import type { CompactionPolicy } from "./publish/compact.ts";
import { NO_PATH_SETS, type OperationOutcome, type PathSets } from "../contract/results.ts";
import type { Deadline } from "../store/deadline.ts";
import type { ObjectStore } from "../store/object-store.ts";
import { blobId } from "./git/objects.ts";
import { registeredCheckouts } from "./checkout/registry.ts";
import { type Baseline, CheckoutState, type Damage, type ProcessIdentity } from "./checkout/state.ts";
import type { FlatTree, ObjectCache } from "./git/object-cache.ts";
import { MissingObjectError } from "./git/objects.ts";
import { diskFullBeforeChange, isDiskFull } from "./checkout/disk-full.ts";
import type { ReplaceMoment } from "./checkout/visible-writes.ts";
import { materialize, type RecoveryContext } from "./checkout/materialize.ts";
import { recoverInterrupted } from "./checkout/recovery.ts";
import { type Remerge, ReplacedFiles, type WrittenFile } from "./checkout/visible-writes.ts";
import { settlePublication } from "./publish/publication.ts";
import type { ProcessMemory } from "./process-memory.ts";
import { MAX_FILE_BYTES, refuseNonDirectory, scanNotebook, tooBigAdvice } from "./checkout/scan.ts";
import { HeldPaths } from "./checkout/ignored.ts";
import { lineCount } from "./merge/diffstat.ts";
import { StatCache } from "./checkout/stat-cache.ts";
import { mergeTrees, sameTree, type TreeMerge } from "./merge/tree-merge.ts";
import type { MergePolicy } from "./merge/policy.ts";
import { policyOfTree } from "./merge/tree-policy.ts";

/**
 * Every engine operation takes these, then its input: `op(deps, input)`.
 * Time and chance (`now`, `monotonic`, `sleep`, `random`, `randomId`:
 * contract/clock.ts) are the surfaces' to make (surfaces/engine-deps.ts);
 * the engine reads no clock or random source of its own.
 */
export interface EngineDeps extends Clock, RandomSource {
  store: ObjectStore;
  /** A secret-free identity of the store location, e.g. "sqlite:/path/store.db". */
  storeId: string;
  privateRoot: string;
  self: ProcessIdentity;
  /**
   * The process memory (process-memory.ts): one per process, shared by
   * all its calls; a fresh one is a fresh world.
   */
  memory: ProcessMemory;
  /** How many times a commit that lost the race re-merges and tries again. */
  commitRetries: number;
  /** The paths this process may not change (none by default). */
  pathSets?: PathSets;
  /**
   * The call deadline (docs/glossary.md): the wait for the checkout's lock
   * and a commit's retries end by it. The surfaces bound `store` by it too
   * (store/deadline.ts boundedStore), so every store request does.
   */
  deadline?: Deadline;
  /** How long an operation waits for another one on the same checkout, at most: by default until the deadline, or 30 s without one. */
  lockTimeoutMs?: number;
  /**
   * How a checkout's directory is stat'ed for its identity
   * (checkout/directory-identity.ts): the file system's by default; tests
   * give one that reports no birth time, as some file systems do.
   */
  directoryStat?: DirectoryStat;
  /**
   * Whether a commit from a checkout at the state this process last saw may
   * publish without reading `current` first (commit.ts). Default true; fault
   * tests aimed at that read turn it off.
   */
  guessCurrent?: boolean;
  /**
   * The most a notebook file may hold, in bytes (checkout/scan.ts,
   * MAX_FILE_BYTES, by default). Tests lower it to play a version that
   * took bigger files than this one.
   */
  maxFileBytes?: number;
  /** When a commit compacts the pack list (compact.ts); false never does (tests of compaction itself). */
  compaction?: Partial<CompactionPolicy> | false;
  /**
   * Who publishes: the name each commit records as its author and committer
   * (contract/agent.ts), read when a commit is built — `serve` knows its
   * client only after the handshake. Default "slivingdoc".
   */
  agent?: () => string;
  /**
   * Called as each named stage begins (scan, fetch, merge, pack, upload,
   * publish, materialize, baseline, …): stage timings in the logs, and the
   * points where fault tests stop the process.
   */
  onStage?: (stage: string) => Promise<void> | void;
  /** Progress of long work that writes no visible files (an export of a long history): `done` of `total`. */
  progress?: (what: string, done: number, total: number) => void;
  /** After each visible file is written or removed: the point where crash tests stop the process mid-way. */
  afterWrite?: () => Promise<void> | void;
  /**
   * Right before a visible file, just checked to hold what the call scanned,
   * is replaced or removed (checkout/visible-writes.ts) — or the whole checkout, path
   * ".", is thrown away (discard-unchanged.ts): where tests write to it, as a second
   * writer in the same directory would.
   */
  onReplace?: (path: string, moment: ReplaceMoment) => void;
}

// Sixteen writers on one notebook exhausted 10 retries (docs/performance.md, S6);
// with jittered backoff capped at 1 s, 30 rarely costs more than a few seconds.
export const DEFAULT_COMMIT_RETRIES = 30;

/**
 * Checkouts never publish one another's files
 * (docs/decisions/0004-checkouts-and-the-private-root.md): a directory inside
 * another checkout, or containing one, is refused. So is one that overlaps
 * the private state.
 */
export function refuseNesting(deps: Pick<EngineDeps, "privateRoot" | "memory" | "self" | "now" | "randomId">, dir: string): void {
  const privateRoot = deps.privateRoot;
  if (isAtOrBelow(dir, privateRoot) || isAtOrBelow(privateRoot, dir)) {
    throw new DomainError("PATH_OUTSIDE_ROOT", "The notebook directory overlaps slivingdoc's private state; use another directory.");
  }
  for (const other of registeredCheckouts(deps, { self: deps.self, opening: dir })) {
    if (other === dir) continue; // the checkout itself
    if (isAtOrBelow(other, dir)) {
      throw new DomainError(
        "PATH_OUTSIDE_ROOT",
        `This directory is inside another checkout (${other}); pull or commit that checkout, or use a directory outside it.`,
      );
    }
    if (isAtOrBelow(dir, other)) {
      throw new DomainError(
        "PATH_OUTSIDE_ROOT",
        `This directory contains another checkout (${other}); address that checkout or a directory beside it.`,
      );
    }
  }
}

/** One operation's open checkout: its state, lock and object cache, and what the call learned of its files. */
export interface OpenCheckout {
  deps: Required<Omit<EngineDeps, "onStage" | "afterWrite" | "progress" | "deadline" | "lockTimeoutMs" | "onReplace" | "directoryStat">> &
    Pick<EngineDeps, "deadline" | "lockTimeoutMs" | "onReplace" | "directoryStat" | "progress"> & {
    onStage: (stage: string) => Promise<void> | void;
    afterWrite: () => Promise<void> | void;
  };
  dir: string;
  state: CheckoutState;
  git: ObjectCache;
  /** The visible files, as blob ids (the blobs are in the object cache). */
  local: FlatTree;
  /** Contents of visible files read this call (up to SCAN_KEEPS_BYTES of them), by blob id, so merging reads them from memory. */
  localContents: Map<string, Uint8Array>;
  /** The stat cache as of the scan; materialize adds the files it writes. */
  statCache: StatCache;
  /** The files no ignore rule hides in this call's scans: the baseline's, and on a pull the accepted state's too (null: not read yet). */
  held: HeldPaths | null;
  /** What the last scan left out by the ignore rules (checkout/scan.ts). */
  ignored: string[];
  /** Line counts of the blobs materialize wrote, by id, for the diffstat. */
  lineCounts: Map<string, number>;
  /** The old files materialize replaced, held open until the checkout is closed: what is appended to them meanwhile goes into the new ones. */
  replaced: ReplacedFiles;
  baseline: Baseline | null;
  /** Why `baseline` is null, when the directory was pulled before (pullRequired). */
  lost: LostState | null;
}

/**
 * How a checkout that was pulled came to have no baseline: its directory is
 * not the one its private state was made for (removed and made again: a
 * new checkout), or that state is damaged (`cause`: why, for the log).
 */
export type LostState = { why: "replaced" } | { why: "damaged"; cause: unknown };

/** Why a checkout has no baseline, from what settling its state found (checkout/state.ts, settleState). */
export function lostState(found: { replaced: boolean; damage: Damage | null }): LostState | null {
  if (found.damage !== null) return { why: "damaged", cause: found.damage.cause };
  return found.replaced ? { why: "replaced" } : null;
}

/**
 * PULL_REQUIRED for a checkout without a baseline, saying why (`lost`, null
 * for never pulled); `then`: the rest of the sentence, what to do after the
 * pull and what was left untouched.
 */
export function pullRequired(lost: LostState | null, then: string): DomainError {
  if (lost?.why === "damaged") {
    return new DomainError(
      "PULL_REQUIRED",
      `The private state of this checkout is damaged, so what its files last agreed with is unknown. A pull rebuilds it and keeps every file, merged against the retained generation they match best, with conflict blocks where both sides changed one: call pull for it once${then}`,
      { cause: lost.cause },
    );
  }
  const why = lost?.why === "replaced" ? "This directory is not the one that was pulled here (it was removed or replaced)" : "This directory was never pulled";
  return new DomainError("PULL_REQUIRED", `${why}; call pull for it once${then}`);
}

function withDefaults(deps: EngineDeps): OpenCheckout["deps"] {
  return {
    pathSets: NO_PATH_SETS,
    maxFileBytes: MAX_FILE_BYTES,
    compaction: {},
    guessCurrent: true,
    agent: () => DEFAULT_AGENT,
    ...deps,
    onStage: deps.onStage ?? (() => {}),
    afterWrite: deps.afterWrite ?? (() => {}),
    ...(deps.progress !== undefined ? { progress: deps.progress } : {}),
  };
}

/** Without a deadline, how long an operation waits for another one on the same checkout. */
const LOCK_WAIT_MS = 30_000;

/** How long this call waits for its checkout's lock: until its deadline, and no longer than `lockTimeoutMs`. */
export function lockWaitMs(deps: Pick<EngineDeps, "deadline" | "lockTimeoutMs">): number {
  const bound = deps.lockTimeoutMs ?? (deps.deadline === undefined ? LOCK_WAIT_MS : Infinity);
  return Math.min(bound, deps.deadline?.remaining() ?? Infinity);
}

/** Whether the call's deadline has passed: no more retries, no more waiting. */
export function deadlinePassed(deps: Pick<EngineDeps, "deadline">): boolean {
  return deps.deadline !== undefined && deps.deadline.remaining() === 0;
}

/** A wait of `ms` that ends by the deadline at the latest. */
export function sleepWithin(deps: Pick<OpenCheckout["deps"], "deadline" | "sleep">, ms: number): Promise<void> {
  return deps.sleep(Math.min(ms, deps.deadline?.remaining() ?? Infinity));
}

/**
 * Open a checkout for one operation: resolve it, take its lock, repair an
 * interrupted earlier operation, and scan the visible files. The caller must
 * `closeCheckout` it. `attach`: the operation attaches the checkout to the
 * store as it is (pull.ts), so a publication recorded against a store that
 * went backwards is settled as not landed rather than refused.
 */
export async function openCheckout(deps: EngineDeps, path: string, create: boolean, options: { attach?: boolean } = {}): Promise<OpenCheckout> {
  const full = withDefaults(deps);
  const dir = checkoutDir(full, path, create);
  const state = await CheckoutState.open({
    privateRoot: full.privateRoot,
    storeId: full.storeId,
    dir,
    self: full.self,
    lockTimeoutMs: lockWaitMs(full),
    ...(full.directoryStat !== undefined ? { directoryStat: full.directoryStat } : {}),
    memory: full.memory,
    clock: full,
  });
  keepLockFresh(full, state);
  try {
    const { baseline, lost } = await repairInterrupted(full, state, create, options.attach === true);
    return {
      deps: full,
      dir,
      state,
      git: state.git,
      local: new Map(),
      localContents: new Map(),
      statCache: StatCache.empty(),
      held: null,
      ignored: [],
      lineCounts: new Map(),
      replaced: new ReplacedFiles(),
      baseline,
      lost,
    };
  } catch (e) {
    state.release();
    throw e;
  }
}

/**
 * The real path of the checkout at `path` (made first when `create`), once
 * it is known to nest in no other checkout: PATH_OUTSIDE_ROOT when it does,
 * PULL_REQUIRED when it does not exist.
 */
function checkoutDir(deps: OpenCheckout["deps"], path: string, create: boolean): string {
  // Refuse a nested checkout before creating anything for it.
  const requested = resolve(path);
  refuseNesting(deps, requested);
  refuseNonDirectory(path);
  if (create) {
    try {
      mkdirSync(path, { recursive: true }); // synchronous: see ObjectCache.open
    } catch (cause) {
      if (isDiskFull(cause)) throw diskFullBeforeChange(cause, { notebook: requested, privateState: deps.privateRoot });
      throw new DomainError("LOCAL_STATE", "The notebook directory could not be created.", { cause });
    }
  }
  let dir: string;
  try {
    dir = realpathSync(path);
  } catch (cause) {
    throw new DomainError("PULL_REQUIRED", "This directory does not exist and was never pulled; call pull for it once, then commit.", {
      cause,
    });
  }
  // Again only when symlinks made the real path another one: each check reads every checkout's state.
  if (dir !== requested) refuseNesting(deps, dir);
  return dir;
}

/** Long operations keep the lock fresh as they go (checkout/lock.ts): at each stage and after each file written. */
function keepLockFresh(deps: OpenCheckout["deps"], state: CheckoutState): void {
  const { onStage, afterWrite } = deps;
  deps.onStage = (stage) => {
    state.heartbeat();
    return onStage(stage);
  };
  deps.afterWrite = () => {
    state.heartbeat();
    return afterWrite();
  };
}

/**
 * Repair what an interrupted earlier operation left in the checkout: its
 * visible files (materialize.ts), then its publication (publication.ts).
 * The baseline the checkout is then at, or why it has none.
 */
async function repairInterrupted(
  deps: OpenCheckout["deps"],
  state: CheckoutState,
  create: boolean,
  attach: boolean,
): Promise<{ baseline: Baseline | null; lost: LostState | null }> {
  // A pull rebuilds a damaged state; anything else asks for that pull (pullRequired).
  const damage = state.damage;
  if (damage !== null && create) state.forgetDamaged();
  const recovered = await recoverInterrupted(state, deps.afterWrite, deps);
  // A commit that died after its publication, before its baseline moved
  // (publication.ts); its journal stays until then, so a kill in between
  // finds the same repair to make.
  await settlePublication(state, deps.store, deps.randomId, recovered?.overrides ?? [], attach);
  recovered?.finish();
  const baseline = state.readBaseline();
  return { baseline, lost: baseline !== null ? null : lostState({ replaced: state.replaced, damage }) };
}

/**
 * Scan the visible files into the checkout, and keep their blobs as the
 * snapshot recovery needs. The stat cache spares reading files unchanged
 * since the last scan; `useCache: false` reads everything (a repair).
 * `held`: the files no ignore rule hides, once the call knows more of them
 * than the baseline's (a pull, the accepted state's).
 */
export async function scanLocal(checkout: OpenCheckout, useCache = true, held?: HeldPaths): Promise<void> {
  await checkout.deps.onStage("scan");
  checkout.held = held ?? checkout.held ?? new HeldPaths(await baselineOrNothing(checkout));
  const takenMs = checkout.deps.now().getTime();
  const cache = useCache ? checkout.state.loadStatCache() : StatCache.empty();
  const contents = new Map<string, Uint8Array>();
  let kept = 0;
  // Each file read is stored as it is read (a file that still hashes to its
  // recorded blob already is), and its bytes kept for the merge and the
  // marker check only up to a bound: the rest are read back from the object
  // cache, so a notebook is never in memory all at once.
  const absorb = (path: string, bytes: Uint8Array): string => {
    const oid = blobId(bytes);
    if (oid !== cache.recorded(path)) checkout.git.writeBlobNow(bytes, oid);
    if (kept + bytes.byteLength <= SCAN_KEEPS_BYTES && !contents.has(oid)) {
      contents.set(oid, bytes);
      kept += bytes.byteLength;
    }
    return oid;
  };
  const { files: scanned, ignored } = scanNotebook(checkout.dir, { known: cache.known, held: checkout.held, maxFileBytes: checkout.deps.maxFileBytes, absorb });
  checkout.deps.progress?.("files scanned", scanned.size, scanned.size);
  checkout.ignored = ignored;
  const local: FlatTree = new Map();
  // Read again: files the cache could not vouch for. Changed: files whose
  // stamp or content differs from what the cache records, or that came or
  // went — what the cache must learn.
  let reread = false;
  let changed = Math.abs(cache.size - scanned.size);
  for (const [path, file] of scanned) {
    // Every file has its id: from the stat cache, or from `absorb` (`read`).
    const oid = file.oid!;
    local.set(path, oid);
    if (!("read" in file)) continue;
    reread = true;
    if (!cache.records(path, file.stamp, oid)) changed++;
  }
  checkout.local = local;
  checkout.localContents = contents;
  checkout.statCache = cache;
  // Nothing new: the cache, in memory and on disk, already says all of this.
  if (!reread && changed === 0) return;
  cache.recordScan(scanned, local, takenMs);
  rememberOrSave(checkout, changed);
}

/**
 * Files the accepted state would bring (new or changed since the baseline)
 * that are over the most a notebook file may hold, which another tool or
 * version published: refused by name before any is read or written, so
 * nothing here changes (checkout/scan.ts refuses such a file of one's own).
 */
export async function refuseOversizeAccepted(checkout: OpenCheckout, baseline: FlatTree, accepted: FlatTree): Promise<void> {
  const limit = checkout.deps.maxFileBytes;
  const files: ErrorFile[] = [];
  for (const [path, oid] of accepted) {
    if (baseline.get(path) === oid) continue;
    if (await checkout.git.blobOver(oid, limit)) files.push({ path, reason: "INVALID_CONTENT", ranges: [] });
  }
  if (files.length === 0) return;
  const names = files.map((f) => f.path).join(", ");
  throw new DomainError("INVALID_CONTENT", `The notebook holds files this checkout cannot take. ${tooBigAdvice(names, limit)} Nothing here was changed.`, { files });
}

/** The bytes of files read by one scan kept in memory (localContents), beyond which they are read back from the object cache. */
export const SCAN_KEEPS_BYTES = 16 << 20;

/** An operation's outcome with how many entries its scan ignored, when any. */
export function withIgnoredCount(outcome: OperationOutcome, checkout: OpenCheckout): OperationOutcome {
  return checkout.ignored.length === 0 ? outcome : { ...outcome, ignored: checkout.ignored.length };
}

/**
 * A few changed entries (a warm call: the files just edited or pulled, or
 * racily clean ones re-stamped) go into the process's copy of the stat
 * cache only: rewriting the file for the whole notebook on every call cost
 * more than another process reading those files again. More are written at
 * once; the rest when the process ends (flushProcessMemory). The file on
 * disk is right either way — an older one only trusts fewer entries.
 */
function rememberOrSave(checkout: OpenCheckout, changed: number): void {
  if (changed <= FEW_CHANGES) checkout.state.rememberStatCache(checkout.statCache);
  else checkout.state.saveStatCache(checkout.statCache);
}

const FEW_CHANGES = 32;

/**
 * Make the visible directory `to` and move the baseline to `target`
 * (materialize.ts), then remember the written files in the stat cache so the
 * next scan need not read or store them again. A file written to since the
 * scan is merged again by `remerge`, or left as it is: its baseline is then
 * `leftBase`'s. Returns the files written, with the content they got, and
 * the paths left.
 */
export async function materializeInto(
  checkout: OpenCheckout,
  to: FlatTree,
  target: Baseline,
  recovery: RecoveryContext,
  leftBase: (path: string) => string | null,
  remerge?: Remerge,
): Promise<{ written: WrittenFile[]; left: string[] }> {
  const b = checkout.baseline;
  // Already there (a call that found nothing to do): no file to write, no state to replace.
  if (b && b.generation === target.generation && b.head === target.head && b.tree === target.tree && sameTree(checkout.local, to)) return { written: [], left: [] };
  const written = (oid: string, bytes: Uint8Array) => checkout.lineCounts.set(oid, lineCount(bytes));
  const done = await materialize(checkout.state, checkout.local, to, target, { ...checkout.deps, written, replaced: checkout.replaced, ...(remerge ? { remerge } : {}) }, recovery, leftBase);
  checkout.baseline = done.baseline;
  if (done.written.length > 0) {
    checkout.statCache.recordWrites(done.written);
    try {
      rememberOrSave(checkout, done.written.length);
    } catch {
      /* only a speed-up: the next scan reads those files instead */
    }
  }
  return done;
}

/**
 * Bring the visible files to `merge.result` and the baseline to `target`,
 * whose files are `targetFiles`. A file written to since the scan (by an
 * editor, a script, another agent in the same directory) is not replaced
 * (checkout/visible-writes.ts): it is merged again at once, its new content as the
 * local side, against the same target and the same baseline — `firstBase`,
 * the version of it the target already holds: the baseline the merge used
 * when the target holds none of the checkout's edits (a pull), the scanned
 * files when it publishes them (a commit). Where that keeps failing, or
 * where the merge conflicts and `conflicts` is "leave", the file is left as
 * it is, with that baseline, for the next call's merge.
 *
 * `prepare` turns local files into the merge's local side (pull's protected
 * paths). "leave": a commit that landed answers OK, and must not have
 * written markers. Returns the merge the files now hold: the conflicts of
 * the files written, and files left as they were first scanned.
 */
export async function bringFiles(
  checkout: OpenCheckout,
  merge: TreeMerge,
  target: Baseline,
  targetFiles: FlatTree,
  recovery: RecoveryContext,
  firstBase: FlatTree,
  options: { prepare?: (local: FlatTree) => FlatTree; conflicts: "write" | "leave" },
): Promise<TreeMerge> {
  const { git } = checkout;
  const scanned = checkout.local;
  const conflicts = new Map(merge.conflicts.map((c) => [c.path, c]));
  const one = (path: string, oid: string | null | undefined): FlatTree => (oid == null ? new Map() : new Map([[path, oid]]));
  // The policy of the whole target tree (this path's alone has no
  // .gitattributes), read once, at the first remerge. A remerge writes one
  // path, so a version kept beside it (binary) would never reach the disk:
  // there both sides show as a text conflict instead.
  let ofTarget: Promise<(path: string) => MergePolicy> | undefined;
  const remerge: Remerge = async (path, now) => {
    const written = one(path, now === null ? null : await git.writeBlob(now));
    // Only this path's side: `prepare` may bring in other paths (pull's protected ones).
    const local = one(path, (options.prepare?.(written) ?? written).get(path));
    const policy = await (ofTarget ??= policyOfTree(git, targetFiles));
    const again = await mergeTrees(git, one(path, firstBase.get(path)), local, one(path, targetFiles.get(path)), new Map(), policy, { beside: false });
    const conflict = again.conflicts.find((c) => c.path === path);
    if (conflict !== undefined && options.conflicts === "leave") return null;
    if (conflict !== undefined) conflicts.set(path, conflict);
    else conflicts.delete(path);
    return { target: again.result.get(path) ?? null };
  };
  const done = await materializeInto(checkout, merge.result, target, recovery, (path) => firstBase.get(path) ?? null, remerge);
  const result = new Map(merge.result);
  for (const w of done.written) {
    if (w.after === null) result.delete(w.path);
    else result.set(w.path, w.after);
  }
  for (const path of done.left) {
    conflicts.delete(path);
    const oid = scanned.get(path);
    if (oid === undefined) result.delete(path);
    else result.set(path, oid);
  }
  const list = [...conflicts.values()].sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
  return { result, conflicts: list };
}

/** The bytes of a visible file as scanned: from memory when read this call, else from the object cache. */
export async function localBytes(checkout: OpenCheckout, path: string): Promise<Uint8Array> {
  const oid = checkout.local.get(path)!;
  return checkout.localContents.get(oid) ?? (await checkout.git.readBlob(oid));
}

/** Before the process ends: write out what only its memory holds (stat caches). */
export function flushProcessMemory(memory: ProcessMemory): void {
  memory.flush();
}

/**
 * What an operation answers for `e`, thrown outside the writing of visible
 * files (which reports its own failures, materialize.ts): a full disk is
 * LOCAL_STATE saying so, where it would otherwise be an unrecognised error.
 */
export function localFailure(checkout: OpenCheckout, e: unknown): unknown {
  if (e instanceof DomainError || !isDiskFull(e)) return e;
  return diskFullBeforeChange(e, { notebook: checkout.dir, privateState: checkout.state.stateDir });
}

/**
 * The end of an operation, before it answers: the old files it replaced are
 * read once more, for lines a writer that opened one before its rename
 * wrote into it since (checkout/visible-writes.ts, ReplacedFiles); then the lock goes.
 */
export function closeCheckout(checkout: OpenCheckout): void {
  try {
    checkout.replaced.release();
  } finally {
    checkout.state.release();
  }
}

/** The baseline's files, or none when they are missing from the cache (a pull fetches them, and then knows what is held: pull.ts). */
async function baselineOrNothing(checkout: OpenCheckout): Promise<FlatTree> {
  try {
    return await baselineFiles(checkout);
  } catch (e) {
    if (e instanceof BaselineMissing) return new Map();
    throw e;
  }
}

/** The baseline's files; an absent baseline (never pulled) is the empty tree. */
export async function baselineFiles(checkout: OpenCheckout): Promise<FlatTree> {
  const b = checkout.baseline;
  if (b === null || b.tree === null) return new Map();
  try {
    return (await checkout.git.readFlatTree(b.tree)).files;
  } catch (cause) {
    if (cause instanceof MissingObjectError) throw new BaselineMissing(cause);
    throw cause;
  }
}

/**
 * The baseline's files, for an operation that cannot repair a lost baseline
 * itself (only a pull downloads it again): ENGINE_FAILED, asking for a pull.
 */
export async function baselineFilesOrRefuse(checkout: OpenCheckout): Promise<FlatTree> {
  try {
    return await baselineFiles(checkout);
  } catch (e) {
    if (!(e instanceof BaselineMissing)) throw e;
    throw privateStateMissing(e);
  }
}

/** The baseline's objects are gone from the private cache. */
export class BaselineMissing extends Error {
  override readonly name = "BaselineMissing";
  constructor(cause: unknown) {
    super("baseline objects missing", { cause });
  }
}

/**
 * What an operation answers when the checkout's private cache lost an
 * object (`cause`: a BaselineMissing or a MissingObjectError): ENGINE_FAILED,
 * with the detail that a pull repairs it.
 */
export function privateStateMissing(cause: unknown): DomainError {
  const message =
    cause instanceof BaselineMissing
      ? "The baseline of this checkout is missing from the private cache."
      : "Part of this checkout's private state is missing or unreadable.";
  return new DomainError("ENGINE_FAILED", message, { detail: ENGINE_DETAILS.stateMissingLocally(), cause });
}

