/**
 * What every operation needs, injected (no globals): the store, where the
 * private state lives, who we are, and the hooks tests and logs use.
 */
import { mkdirSync, realpathSync } from "node:fs";
import { resolve } from "node:path";
import { DEFAULT_AGENT } from "../contract/agent.ts";
import { DomainError } from "../contract/errors.ts";
import { ENGINE_DETAILS } from "../contract/tokens.ts";
import { isAtOrBelow } from "../contract/path-containment.ts";
import type { CompactionPolicy } from "./compact.ts";
import { NO_PATH_SETS, type PathSets } from "../contract/results.ts";
import type { ObjectStore } from "../store/object-store.ts";
import { blobId } from "./git/objects.ts";
import { registeredCheckouts } from "./checkout-registry.ts";
import { type Baseline, CheckoutState, type ProcessIdentity } from "./checkout-state.ts";
import type { FlatTree, ObjectCache } from "./git/object-cache.ts";
import { MissingObjectError } from "./git/objects.ts";
import { materialize, type RecoveryContext, recoverInterrupted } from "./materialize.ts";
import { settlePublication } from "./publication.ts";
import type { ProcessMemory } from "./process-memory.ts";
import { scanNotebook } from "./scan.ts";
import { lineCount } from "./diffstat.ts";
import { StatCache } from "./stat-cache.ts";
import { sameTree } from "./tree-merge.ts";

export interface EngineDeps {
  store: ObjectStore;
  /** A secret-free identity of the store location, e.g. "sqlite:/path/store.db". */
  storeId: string;
  privateRoot: string;
  self: ProcessIdentity;
  /**
   * What the process keeps between calls (process-memory.ts): one per
   * process, shared by all its calls; a fresh one is a fresh world.
   */
  memory: ProcessMemory;
  /** How many times a commit that lost the race re-merges and tries again. */
  commitRetries: number;
  /** The paths this process may not change (none by default). */
  pathSets?: PathSets;
  /** How long an operation waits for another one on the same checkout (default 30 s). */
  lockTimeoutMs?: number;
  /**
   * Whether a commit from a checkout at the state this process last saw may
   * publish without reading `current` first (commit.ts). Default true; fault
   * tests aimed at that read turn it off.
   */
  guessCurrent?: boolean;
  /** When a commit compacts the pack list (compact.ts); false never does (tests of compaction itself). */
  compaction?: Partial<CompactionPolicy> | false;
  /**
   * Who publishes: the name each commit records as its author and committer
   * (contract/agent.ts), read when a commit is built — `serve` knows its
   * client only after the handshake. Default "slivingdoc".
   */
  agent?: () => string;
  now?: () => Date;
  sleep?: (ms: number) => Promise<void>;
  random?: () => number;
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
}

// Sixteen writers on one notebook exhausted 10 retries (docs/performance.md, S6);
// with jittered backoff capped at 1 s, 30 rarely costs more than a few seconds.
export const DEFAULT_COMMIT_RETRIES = 30;

/**
 * Checkouts never publish one another's files (docs/design.md, Roots and
 * checkouts): a directory inside another checkout, or containing one, is
 * refused. So is one that overlaps the private state.
 */
export function refuseNesting(deps: Pick<EngineDeps, "privateRoot" | "memory">, dir: string): void {
  const privateRoot = deps.privateRoot;
  if (isAtOrBelow(dir, privateRoot) || isAtOrBelow(privateRoot, dir)) {
    throw new DomainError("PATH_OUTSIDE_ROOT", "The notebook directory overlaps slivingdoc's private state; use another directory.");
  }
  for (const other of registeredCheckouts(privateRoot, deps.memory)) {
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
  deps: Required<Omit<EngineDeps, "onStage" | "afterWrite" | "progress">> & {
    onStage: (stage: string) => Promise<void> | void;
    afterWrite: () => Promise<void> | void;
  };
  dir: string;
  state: CheckoutState;
  git: ObjectCache;
  /** The visible files, as blob ids (the blobs are in the object cache). */
  local: FlatTree;
  /** Contents of the visible files read this call, by blob id, so merging reads them from memory. */
  localContents: Map<string, Uint8Array>;
  /** The stat cache as of the scan; materialize adds the files it writes. */
  statCache: StatCache;
  /** Line counts of the blobs materialize wrote, by id, for the diffstat. */
  lineCounts: Map<string, number>;
  baseline: Baseline | null;
  /** The directory is not the one its private state was made for (removed and made again): a new checkout. */
  replaced: boolean;
}

function withDefaults(deps: EngineDeps): OpenCheckout["deps"] {
  return {
    pathSets: NO_PATH_SETS,
    lockTimeoutMs: 30_000,
    compaction: {},
    guessCurrent: true,
    agent: () => DEFAULT_AGENT,
    now: () => new Date(),
    sleep: (ms) => Bun.sleep(ms),
    random: Math.random,
    ...deps,
    onStage: deps.onStage ?? (() => {}),
    afterWrite: deps.afterWrite ?? (() => {}),
  };
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
  // Refuse a nested checkout before creating anything for it.
  const requested = resolve(path);
  refuseNesting(full, requested);
  if (create) {
    try {
      mkdirSync(path, { recursive: true }); // synchronous: see ObjectCache.open
    } catch (cause) {
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
  if (dir !== requested) refuseNesting(full, dir);
  const state = await CheckoutState.open({
    privateRoot: full.privateRoot,
    storeId: full.storeId,
    dir,
    self: full.self,
    lockTimeoutMs: full.lockTimeoutMs,
    memory: full.memory,
  });
  // Long operations keep the lock fresh as they go (checkout-lock.ts).
  const { onStage, afterWrite } = full;
  full.onStage = (stage) => {
    state.heartbeat();
    return onStage(stage);
  };
  full.afterWrite = () => {
    state.heartbeat();
    return afterWrite();
  };
  try {
    const recovered = await recoverInterrupted(state, full.afterWrite);
    // A commit that died after its publication, before its baseline moved
    // (publication.ts); its journal stays until then, so a kill in between
    // finds the same repair to make.
    await settlePublication(state, full.store, recovered?.overrides ?? [], options.attach === true);
    recovered?.finish();
    const baseline = state.readBaseline();
    return {
      deps: full,
      dir,
      state,
      git: state.git,
      local: new Map(),
      localContents: new Map(),
      statCache: StatCache.empty(),
      lineCounts: new Map(),
      baseline,
      replaced: state.replaced,
    };
  } catch (e) {
    state.release();
    throw e;
  }
}

/**
 * Scan the visible files into the checkout, and keep their blobs as the
 * snapshot recovery needs. The stat cache spares reading files unchanged
 * since the last scan; `useCache: false` reads everything (a repair).
 */
export async function scanLocal(checkout: OpenCheckout, useCache = true): Promise<void> {
  await checkout.deps.onStage("scan");
  const takenMs = checkout.deps.now().getTime();
  const cache = useCache ? checkout.state.loadStatCache() : StatCache.empty();
  const scanned = scanNotebook(checkout.dir, cache.known);
  const local: FlatTree = new Map();
  const contents = new Map<string, Uint8Array>();
  // Read again: files the cache could not vouch for. Changed: files whose
  // stamp or content differs from what the cache records, or that came or
  // went — what the cache must learn.
  let reread = false;
  let changed = Math.abs(cache.size - scanned.size);
  for (const [path, file] of scanned) {
    if (file.oid !== null) {
      local.set(path, file.oid);
      continue;
    }
    reread = true;
    // A file that still hashes to its recorded blob is already stored.
    let oid = blobId(file.bytes);
    if (oid !== cache.recorded(path)) oid = await checkout.git.writeBlob(file.bytes);
    if (!cache.records(path, file.stamp, oid)) changed++;
    local.set(path, oid);
    contents.set(oid, file.bytes);
  }
  checkout.local = local;
  checkout.localContents = contents;
  checkout.statCache = cache;
  // Nothing new: the cache, in memory and on disk, already says all of this.
  if (!reread && changed === 0) return;
  cache.recordScan(scanned, local, takenMs);
  keepOrSave(checkout, changed);
}

/**
 * A few changed entries (a warm call: the files just edited or pulled, or
 * racily clean ones re-stamped) go into the process's copy of the stat
 * cache only: rewriting the file for the whole notebook on every call cost
 * more than another process reading those files again. More are written at
 * once; the rest when the process ends (flushKeptState). The file on disk is
 * right either way — an older one only trusts fewer entries.
 */
function keepOrSave(checkout: OpenCheckout, changed: number): void {
  if (changed <= FEW_CHANGES) checkout.state.keepStatCache(checkout.statCache);
  else checkout.state.saveStatCache(checkout.statCache);
}

const FEW_CHANGES = 32;

/**
 * Make the visible directory `to` and move the baseline to `target`
 * (materialize.ts), then remember the written files in the stat cache so the
 * next scan need not read or store them again.
 */
export async function materializeInto(checkout: OpenCheckout, to: FlatTree, target: Baseline, recovery: RecoveryContext): Promise<void> {
  const b = checkout.baseline;
  // Already there (a call that found nothing to do): no file to write, no state to replace.
  if (b && b.generation === target.generation && b.head === target.head && b.tree === target.tree && sameTree(checkout.local, to)) return;
  const written = (oid: string, bytes: Uint8Array) => checkout.lineCounts.set(oid, lineCount(bytes));
  const writes = await materialize(checkout.state, checkout.local, to, target, { ...checkout.deps, written }, recovery);
  if (writes.length === 0) return;
  checkout.statCache.recordWrites(checkout.dir, writes, checkout.deps.now().getTime());
  try {
    keepOrSave(checkout, writes.length);
  } catch {
    /* only a speed-up: the next scan reads those files instead */
  }
}

/** The bytes of a visible file as scanned: from memory when read this call, else from the object cache. */
export async function localBytes(checkout: OpenCheckout, path: string): Promise<Uint8Array> {
  const oid = checkout.local.get(path)!;
  return checkout.localContents.get(oid) ?? (await checkout.git.readBlob(oid));
}

/** Before the process ends: write out what only its memory holds (stat caches). */
export function flushKeptState(memory: ProcessMemory): void {
  memory.flush();
}

export function closeCheckout(checkout: OpenCheckout): void {
  checkout.state.release();
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

