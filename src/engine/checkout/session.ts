/**
 * One operation's open checkout, a session: the checkout's state, lock and
 * object cache, and what the call learned of its files. It carries only
 * the checkout's port (deps.ts); what it does is functions of the session,
 * one file per concept: the scan (session-scan.ts), bringing and
 * materialising files (session-materialize.ts), the baseline
 * (session-baseline.ts). An operation opens one through the engine's
 * `withCheckout` (engine/with-checkout.ts), which also settles a
 * publication a dead call left: that is the store's, not the checkout's.
 */
import { mkdirSync, realpathSync } from "node:fs";
import { resolve } from "node:path";
import { DomainError } from "../../contract/errors.ts";
import { isAtOrBelow } from "../../contract/path-containment.ts";
import type { FlatTree, ObjectCache } from "../git/object-cache.ts";
import type { CheckoutDeps, SessionDeps } from "./deps.ts";
import { diskFullBeforeChange, isDiskFull } from "./disk-full.ts";
import type { HeldPaths } from "./ignored.ts";
import { type BaselineOverride, recoverInterrupted } from "./recovery.ts";
import { registeredCheckouts } from "./registry.ts";
import { MAX_FILE_BYTES, refuseNonDirectory } from "./scan.ts";
import { type Baseline, CheckoutState, type Damage } from "./state.ts";
import { StatCache } from "./stat-cache.ts";
import { ReplacedFiles } from "./replaced-files.ts";

/** One operation's open checkout: its state, lock and object cache, and what the call learned of its files. */
export interface CheckoutSession<D extends CheckoutDeps = CheckoutDeps> {
  deps: SessionDeps<D>;
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
  /** What the last scan left out by the ignore rules (scan.ts). */
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

/** Why a checkout has no baseline, from what settling its state found (state.ts, settleState). */
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

/**
 * Checkouts never publish one another's files
 * (docs/decisions/0004-checkouts-and-the-private-root.md): a directory inside
 * another checkout, or containing one, is refused. So is one that overlaps
 * the private state.
 */
export function refuseNesting(deps: Pick<CheckoutDeps, "privateRoot" | "memory" | "self" | "now" | "randomId">, dir: string): void {
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

/** Without a deadline, how long an operation waits for another one on the same checkout. */
const LOCK_WAIT_MS = 30_000;

/** How long this call waits for its checkout's lock: until its deadline, and no longer than `lockTimeoutMs`. */
export function lockWaitMs(deps: Pick<CheckoutDeps, "deadline" | "lockTimeoutMs">): number {
  const bound = deps.lockTimeoutMs ?? (deps.deadline === undefined ? LOCK_WAIT_MS : Infinity);
  return Math.min(bound, deps.deadline?.remaining() ?? Infinity);
}

/**
 * What opening needs besides the checkout: `create` makes the directory
 * when missing and rebuilds a damaged state (a pull); `settle` settles a
 * publication a dead call recorded, with the baseline overrides its
 * journal's recovery applied, before that journal goes (its caller knows
 * the store: engine/with-checkout.ts).
 */
export interface SessionOpening {
  create: boolean;
  settle: (state: CheckoutState, overrides: BaselineOverride[]) => Promise<void>;
}

/**
 * Open a checkout for one operation: resolve it, take its lock, and repair
 * an interrupted earlier operation. The caller must `closeSession` it.
 */
export async function openSession<D extends CheckoutDeps>(deps: D, path: string, opening: SessionOpening): Promise<CheckoutSession<D>> {
  const full = withDefaults(deps);
  const dir = checkoutDir(full, path, opening.create);
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
    const { baseline, lost } = await repairInterrupted(full, state, opening);
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

/** A copy of `deps` (keepLockFresh changes its hooks) with the hooks and the file limit filled in. */
function withDefaults<D extends CheckoutDeps>(deps: D): SessionDeps<D> {
  return {
    maxFileBytes: MAX_FILE_BYTES,
    ...deps,
    onStage: deps.onStage ?? (() => {}),
    afterWrite: deps.afterWrite ?? (() => {}),
    ...(deps.progress !== undefined ? { progress: deps.progress } : {}),
  } as SessionDeps<D>;
}

/**
 * The real path of the checkout at `path` (made first when `create`), once
 * it is known to nest in no other checkout: PATH_OUTSIDE_ROOT when it does,
 * PULL_REQUIRED when it does not exist.
 */
function checkoutDir(deps: SessionDeps, path: string, create: boolean): string {
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

/** Long operations keep the lock fresh as they go (lock.ts): at each stage and after each file written. */
function keepLockFresh(deps: SessionDeps, state: CheckoutState): void {
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
 * visible files (recovery.ts), then its publication (`settle`). The
 * baseline the checkout is then at, or why it has none.
 */
async function repairInterrupted(deps: SessionDeps, state: CheckoutState, opening: SessionOpening): Promise<{ baseline: Baseline | null; lost: LostState | null }> {
  // A pull rebuilds a damaged state; anything else asks for that pull (pullRequired).
  const damage = state.damage;
  if (damage !== null && opening.create) state.forgetDamaged();
  const recovered = await recoverInterrupted(state, deps.afterWrite, deps);
  // A commit that died after its publication, before its baseline moved
  // (publish/publication.ts); its journal stays until then, so a kill in
  // between finds the same repair to make.
  await opening.settle(state, recovered?.overrides ?? []);
  recovered?.finish();
  const baseline = state.readBaseline();
  return { baseline, lost: baseline !== null ? null : lostState({ replaced: state.replaced, damage }) };
}

/**
 * What an operation answers for `e`, thrown outside the writing of visible
 * files (which reports its own failures, materialize.ts): a full disk is
 * LOCAL_STATE saying so, where it would otherwise be an unrecognised error.
 */
export function localFailure(session: CheckoutSession, e: unknown): unknown {
  if (e instanceof DomainError || !isDiskFull(e)) return e;
  return diskFullBeforeChange(e, { notebook: session.dir, privateState: session.state.stateDir });
}

/**
 * The end of an operation, before it answers: the old files it replaced are
 * read once more, for lines a writer that opened one before its rename
 * wrote into it since (replaced-files.ts); then the lock goes.
 */
export function closeSession(session: CheckoutSession): void {
  try {
    session.replaced.release();
  } finally {
    session.state.release();
  }
}
