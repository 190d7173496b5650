/**
 * The checkouts registered under a private root: each has a state directory
 * `<privateRoot>/checkouts/<id>/` (checkout/state.ts), found here for the
 * nesting check. A state whose directory left its path — removed, moved,
 * or another directory (a volume) in its place — is set aside here:
 *
 *   <privateRoot>/set-aside/<id>/   a state directory as it was, keyed by the
 *                                   store and the identity of its directory
 *
 * so that the same directory, pulled or committed again at any path, takes
 * its state over (takeOverSetAside): its unpublished edits, deletions
 * included, stay local edits, and its journal and recorded publication come
 * with it.
 * Set-aside states are bounded (SET_ASIDE, pruneSetAside). A directory whose
 * identity has neither birth time nor mark gets none set aside: another
 * directory made later may be given the same device and inode, and would
 * take over a baseline of files it never held (directory-identity.ts).
 */
import { createHash } from "../git/hash.ts";
import { existsSync, lstatSync, mkdirSync, realpathSync, renameSync, rmSync, statSync, utimesSync } from "node:fs";
import { join } from "node:path";
import type { Clock, FileClock, RandomSource } from "../../contract/clock.ts";
import { readJson, writeAtomic, namesIn } from "./atomic-file.ts";
import { lockHeld, type ProcessIdentity } from "./lock.ts";
import { directoryIdentity, type DirectoryStat, isUnique, sameDirectory } from "./directory-identity.ts";
import { check } from "../shapes/schema.ts";
import { type CheckoutStateFile, StateSchema } from "./state-files.ts";
import { fileIdentity } from "../memory/file-identity.ts";

/** How many set-aside states are kept, and for how long: the newest, none older. */
const SET_ASIDE = { count: 16, maxAgeMs: 30 * 24 * 3600 * 1000 } as const;

/**
 * What moves with a state set aside or taken over, the state file last: a
 * state moved part-way still has its state file where it was, so it is found
 * and moved again. Not the lock (the holder's), nor the stat cache (it
 * describes files by inode and is only a speed-up).
 */
const MOVED = ["git", "journal.done", "journal.json", "state.json"] as const;

/** Inside a state directory: a set-aside state being taken over (takeOverSetAside). */
const TAKING_OVER = "adopting";

export function checkoutId(storeId: string, dir: string): string {
  return createHash("sha256").update(`${storeId}\0${dir}`).digest("hex").slice(0, 32);
}

/** The private state directory of the checkout at `dir` (its real path). */
export function checkoutStateDir(privateRoot: string, storeId: string, dir: string): string {
  return join(privateRoot, "checkouts", checkoutId(storeId, dir));
}

/** The object cache of the checkout at `dir`, if it was ever pulled; else null (no such directory, or never pulled). */
export function pulledObjectCache(privateRoot: string, storeId: string, dir: string): string | null {
  let real: string;
  try {
    real = realpathSync(dir);
  } catch {
    return null;
  }
  const gitdir = join(checkoutStateDir(privateRoot, storeId, real), "git");
  return existsSync(join(gitdir, "objects", "pack")) ? gitdir : null;
}

function setAsideDir(privateRoot: string, storeId: string, directory: string): string {
  return join(privateRoot, "set-aside", checkoutId(storeId, directory));
}

/**
 * The process memory of the registered checkouts (process-memory.ts): the
 * checkout directory, store and directory identity each state file named
 * when last parsed, with the file's identity then, by state file.
 */
export interface RegistryMemory {
  checkouts: Map<string, { identity: string; checkout: string; store: string; directory?: string }>;
}

/**
 * Real paths of every checkout registered under the private root, for the
 * nesting check. A checkout whose directory left its path is no checkout
 * there: its state is set aside on the way (unless an operation holds it),
 * so states of removed directories — temporary ones above all — do not
 * pile up and slow every call down. `self` tells a lock left by a dead
 * process (a kill mid-call, whose journal must move with the state) from a
 * held one; without it, every lock counts as held. `opening`: the checkout
 * the caller is about to open, whose own state it judges itself, under its
 * lock.
 */
export function registeredCheckouts(
  deps: { privateRoot: string; memory: RegistryMemory; directoryStat?: DirectoryStat } & FileClock,
  options: { self?: ProcessIdentity; opening?: string } = {},
): string[] {
  const { privateRoot } = deps;
  const knownCheckouts = deps.memory.checkouts;
  const base = join(privateRoot, "checkouts");
  const dirs: string[] = [];
  for (const id of namesIn(base)) {
    if (id.startsWith(".")) continue; // being removed (below)
    const file = join(base, id, "state.json");
    // Every call checks every checkout: parse each state file only when it changed
    // (state files are replaced, never edited).
    const identity = fileIdentity(file);
    const known = knownCheckouts.get(file);
    let checkout = identity !== null && known?.identity === identity ? known : null;
    if (checkout === null) {
      try {
        const parsed = check(StateSchema, readJson(file));
        if (!parsed.ok) continue;
        const { store, directory } = parsed.value;
        checkout = { identity: identity ?? "", checkout: parsed.value.checkout, store, ...(directory !== undefined ? { directory } : {}) };
        if (identity !== null) knownCheckouts.set(file, checkout);
      } catch {
        continue; // unreadable state is the business of its own checkout
      }
    }
    const there = checkout.checkout === options.opening ? undefined : identityAt(checkout.checkout, deps.directoryStat);
    const left = there === null || (there !== undefined && checkout.directory !== undefined && !sameDirectory(checkout.directory, there));
    if (!left) {
      dirs.push(checkout.checkout);
      continue;
    }
    if (held(join(base, id, "lock"), options.self, deps)) continue;
    knownCheckouts.delete(file);
    if (checkout.directory !== undefined && isUnique(checkout.directory)) setAsideUnheld(privateRoot, base, id, checkout.store, checkout.directory, deps);
    else removeDir(join(base, id), base, deps.randomId);
  }
  return dirs;
}

/** The identity of the directory at `path`; null when nothing is there, undefined when that cannot be told. */
function identityAt(path: string, stat: DirectoryStat | undefined): string | null | undefined {
  try {
    return directoryIdentity(path, stat !== undefined ? { stat } : {});
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    return code === "ENOENT" || code === "ENOTDIR" ? null : undefined;
  }
}

function exists(path: string): boolean {
  try {
    lstatSync(path);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code !== "ENOENT";
  }
}

/** Remove a directory: renamed aside first, so it is never read half-removed. */
function removeDir(dir: string, besides: string, randomId: RandomSource["randomId"]): void {
  const aside = join(besides, `.gone-${randomId(8)}`);
  try {
    renameSync(dir, aside);
  } catch {
    return; // gone already, or taken over by another process
  }
  rmSync(aside, { recursive: true, force: true });
}

/** Whether an operation may hold the lock `file` (it may be making the checkout's directory again); see registeredCheckouts. */
function held(file: string, self: ProcessIdentity | undefined, clock: Pick<Clock, "now">): boolean {
  return self === undefined ? exists(file) : lockHeld(file, self, clock);
}

/** Set aside the state directory `base/id`, held by no operation, of `directory`: moved whole, a dead holder's lock with it. */
function setAsideUnheld(privateRoot: string, base: string, id: string, storeId: string, directory: string, clock: FileClock): void {
  const target = setAsideDir(privateRoot, storeId, directory);
  try {
    mkdirSync(join(privateRoot, "set-aside"), { recursive: true, mode: 0o700 });
    // An older state of the same directory: this one is what it had last.
    removeDir(target, join(privateRoot, "set-aside"), clock.randomId);
    renameSync(join(base, id), target);
  } catch {
    return; // another process got there first: next time
  }
  setAsideDone(privateRoot, target, clock);
}

/**
 * Set aside the state in `stateDir`, whose lock the caller holds, made for
 * `directory`, which is no longer at its path: its files move (MOVED), and
 * the state directory stays for the checkout now at the path. Without a
 * birth time or a mark to know the directory by, the state is dropped instead.
 */
export function setAsideHeld(privateRoot: string, stateDir: string, storeId: string, directory: string, clock: FileClock): void {
  rmSync(join(stateDir, "stat-cache.json"), { force: true });
  if (!isUnique(directory)) {
    for (const name of MOVED) if (name !== "git") rmSync(join(stateDir, name), { force: true });
    return;
  }
  const target = setAsideDir(privateRoot, storeId, directory);
  // A complete older state of the directory gives way; a part-moved one is this one, moved before a kill.
  if (exists(join(target, "state.json"))) removeDir(target, join(privateRoot, "set-aside"), clock.randomId);
  mkdirSync(target, { recursive: true, mode: 0o700 });
  for (const name of MOVED) moveEntry(join(stateDir, name), join(target, name));
  setAsideDone(privateRoot, target, clock);
}

/** Replace `to` by `from`, if `from` is there (a move a kill interrupted is finished by doing it again). */
function moveEntry(from: string, to: string): void {
  if (!exists(from)) return;
  rmSync(to, { recursive: true, force: true });
  renameSync(from, to);
}

/** A state was set aside at `target`: date it (the age SET_ASIDE bounds), and keep the bounds. */
function setAsideDone(privateRoot: string, target: string, clock: FileClock): void {
  const now = clock.now();
  try {
    utimesSync(target, now, now);
  } catch {
    /* taken over already */
  }
  pruneSetAside(privateRoot, now.getTime(), clock.randomId);
}

/** Keep the newest SET_ASIDE.count set-aside states, none older than SET_ASIDE.maxAgeMs. */
function pruneSetAside(privateRoot: string, nowMs: number, randomId: RandomSource["randomId"]): void {
  const root = join(privateRoot, "set-aside");
  const states: Array<{ name: string; mtimeMs: number }> = [];
  for (const name of namesIn(root)) {
    if (name.startsWith(".gone-")) {
      rmSync(join(root, name), { recursive: true, force: true }); // a removal a kill interrupted
      continue;
    }
    try {
      states.push({ name, mtimeMs: statSync(join(root, name)).mtimeMs });
    } catch {
      /* taken over meanwhile */
    }
  }
  states.sort((a, b) => b.mtimeMs - a.mtimeMs);
  states.forEach(({ name, mtimeMs }, i) => {
    if (i >= SET_ASIDE.count || nowMs - mtimeMs > SET_ASIDE.maxAgeMs) removeDir(join(root, name), root, randomId);
  });
}

/** Whether a state set aside for `directory` waits, or one was being taken over into `stateDir` when a call was killed. */
export function hasSetAside(privateRoot: string, storeId: string, stateDir: string, directory: string): boolean {
  if (exists(join(stateDir, TAKING_OVER))) return true;
  return isUnique(directory) && exists(join(setAsideDir(privateRoot, storeId, directory), "state.json"));
}

/**
 * Take over, into `stateDir` (whose lock the caller holds, and which holds
 * no state it can use), the state set aside for `directory`, now at the
 * real path `dir`. Claimed by one rename, so of two calls one takes it;
 * then moved in by finishTakeover. Returns whether there was one.
 */
export function takeOverSetAside(privateRoot: string, stateDir: string, storeId: string, directory: string, dir: string, randomId: RandomSource["randomId"]): boolean {
  if (!isUnique(directory)) return false;
  const source = setAsideDir(privateRoot, storeId, directory);
  // One whose state file is not there yet is still being set aside (setAsideHeld).
  if (!exists(join(source, "state.json"))) return false;
  // What is here is unusable (damaged, or a journal without its state): none of it may mix with what comes.
  for (const name of MOVED) rmSync(join(stateDir, name), { recursive: true, force: true });
  try {
    renameSync(source, join(stateDir, TAKING_OVER));
  } catch {
    return false; // another call took it
  }
  finishTakeover(stateDir, dir, randomId);
  return true;
}

/**
 * Move a claimed set-aside state into `stateDir`, the state file last, with
 * the path it now belongs to: run first by every call on a checkout, so a
 * kill part-way is finished by the next. A state file that does not read
 * (it did when it was claimed) is left behind, and its journal with it.
 */
export function finishTakeover(stateDir: string, dir: string, randomId: RandomSource["randomId"]): void {
  const claimed = join(stateDir, TAKING_OVER);
  if (!exists(claimed)) return;
  rmSync(join(stateDir, "stat-cache.json"), { force: true });
  let state;
  try {
    state = check(StateSchema, readJson(join(claimed, "state.json")));
  } catch {
    state = null;
  }
  if (state?.ok) {
    for (const name of MOVED) if (name !== "state.json") moveEntry(join(claimed, name), join(stateDir, name));
    writeAtomic(join(stateDir, "state.json"), `${JSON.stringify({ ...state.value, checkout: dir }, null, 2)}\n`, randomId);
  } else {
    for (const name of ["journal.json", "journal.done"]) rmSync(join(stateDir, name), { force: true });
  }
  rmSync(claimed, { recursive: true, force: true });
}

/**
 * Remove the private state of a checkout whose directory is being removed
 * (a server's temporary session directory, discard.ts). Call only once
 * nothing in the directory remains unpublished.
 */
export function forgetCheckoutState(privateRoot: string, storeId: string, dir: string, randomId: RandomSource["randomId"]): void {
  const base = join(privateRoot, "checkouts");
  const id = checkoutId(storeId, dir);
  if (!exists(join(base, id, "lock"))) removeDir(join(base, id), base, randomId);
}

/**
 * The state of every checkout registered under the private root, whatever
 * its store, and of those set aside for a directory that may come back:
 * what each was brought to, for a store that went backwards
 * (went-backwards.ts) and for gc. A state that does not parse is left out.
 */
export function checkoutStates(privateRoot: string): CheckoutStateFile[] {
  const states: CheckoutStateFile[] = [];
  for (const area of ["checkouts", "set-aside"]) {
    const base = join(privateRoot, area);
    for (const id of namesIn(base)) {
      if (id.startsWith(".")) continue; // being removed
      try {
        const parsed = check(StateSchema, readJson(join(base, id, "state.json")));
        if (parsed.ok) states.push(parsed.value);
      } catch {
        /* unreadable state is the business of its own checkout */
      }
    }
  }
  return states;
}
