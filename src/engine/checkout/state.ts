/**
 * Private state of one checkout, under the private root
 * (docs/decisions/0004-checkouts-and-the-private-root.md):
 *
 *   <privateRoot>/checkouts/<id>/state.json   the baseline: accepted commit, tree, generation; the
 *                                              directory it belongs to; a publication in flight
 *   <privateRoot>/checkouts/<id>/journal.json present only while visible files are being rewritten
 *   <privateRoot>/checkouts/<id>/git/         the object cache (see git/object-cache.ts)
 *   <privateRoot>/checkouts/<id>/lock         held by the one operation running on this checkout
 *   <privateRoot>/checkouts/<id>/stat-cache.json  the stat cache (stat-cache.ts); only a speed-up
 *   <privateRoot>/checkouts/<id>/adopting/    present only while a set-aside state is being taken over
 *
 * `<id>` hashes the store identity and the checkout's real path, so the same
 * directory used with two stores keeps two baselines. A path is not a
 * directory, though: `rm -rf DIR` and a new `DIR` (or a fresh volume mounted
 * there) have the same path and none of the files the baseline describes.
 * So the state also records the identity of the directory it was made for
 * (directory-identity.ts); a directory that is not that one is a new
 * checkout — else every file missing from it would count as a local
 * deletion, and the next commit would delete them for everyone. The old
 * state is set aside (checkout/registry.ts) for its directory to take back,
 * at this path or another: a volume mounted here again, a directory moved.
 * Every file is replaced
 * atomically (write a temporary file, fsync, rename, fsync the directory),
 * so a crash leaves the old or the new state, never a torn one, and a power
 * loss never the old one after a call answered — except the stat cache, written
 * without fsync: a torn one does not parse, and is simply rebuilt.
 *
 * The state is only what the checkout knew. One that does not read as this
 * checkout's — not JSON, not what state-files.ts describes, or another
 * checkout's or store's — is damaged, and counts as lost: nothing the
 * checkout would do with it can be trusted, and a pull rebuilds it, as for a
 * checkout whose private state is gone (docs/failures.md).
 */
import { closeSync, mkdirSync, openSync, readFileSync, rmSync, writeSync } from "node:fs";
import { basename, join } from "node:path";
import { check, type Shape } from "../shapes/schema.ts";
import type { Clock, FileClock, RandomSource } from "../../contract/clock.ts";
import { DomainError } from "../../contract/errors.ts";
import { readJson, writeAtomic } from "./atomic-file.ts";
import { acquireLock, type HeldLock, type ProcessIdentity } from "./lock.ts";
import { checkoutStateDir, finishTakeover, setAsideHeld, takeOverSetAside } from "./registry.ts";
import { directoryIdentity, type DirectoryStat, sameDirectory } from "./directory-identity.ts";
import { diskFullBeforeChange, isDiskFull } from "./disk-full.ts";
import {
  type Baseline,
  type CheckoutStateFile,
  type Journal,
  JournalSchema,
  type ProgressStep,
  ProgressStepSchema,
  type PublicationRecord,
  ScratchRecordSchema,
  SettledRecordSchema,
  StateSchema,
} from "./state-files.ts";
import { ObjectCache } from "../git/object-cache.ts";
import type { StatCacheMemory } from "./stat-cache-memory.ts";
import type { ObjectMemory } from "../git/object-memory.ts";
import type { StatCache } from "./stat-cache.ts";

export type { Baseline, Journal, ProcessIdentity, ProgressStep, PublicationRecord };

/** Appending to the journal's progress (CheckoutState.openJournalProgress). */
export interface JournalProgressLog {
  log(step: ProgressStep): void;
  /** A temporary name (`dir/name`) about to be made. */
  scratch(name: string): void;
  /** Every step is settled; only the scratch files and the journal remain to remove. */
  settled(): void;
  close(): void;
}

/** What the journal's progress recorded (CheckoutState.readJournalProgress). */
export interface JournalProgress {
  steps: Map<string, ProgressStep[]>;
  scratch: Set<string>;
  settled: boolean;
}

const STAT_CACHE_FILE = "stat-cache.json";

export interface CheckoutStateOptions {
  privateRoot: string;
  storeId: string;
  /** The checkout's real path. */
  dir: string;
  self: ProcessIdentity;
  /** How long to wait for another operation on the same checkout. */
  lockTimeoutMs?: number;
  /** How the directory is stat'ed for its identity (EngineDeps.directoryStat). */
  directoryStat?: DirectoryStat;
  /** The process memory, shared by this process's calls. */
  memory: { objects: ObjectMemory; statCaches: StatCacheMemory };
  /** Time and chance (EngineDeps): the lock's clocks and waits, and the names of temporary files. */
  clock: Clock & RandomSource;
}

/** The private state could not be opened: LOCAL_STATE, saying so when the disk is full (disk-full.ts). */
function unopened(cause: unknown, dir: string, stateDir: string): DomainError {
  if (isDiskFull(cause)) return diskFullBeforeChange(cause, { notebook: dir, privateState: stateDir });
  return new DomainError("LOCAL_STATE", "The private state of this checkout could not be opened.", { cause });
}

/** Beside journal.json: the journal's progress (openJournalProgress). */
const JOURNAL_DONE = "journal.done";

/** Why a state does not count: its cause, for the log only. */
export interface Damage {
  cause: unknown;
}

/** A state file: undefined when absent, its damage when it does not read as `schema` says. Failing to read it at all (permissions) throws. */
function readStateJson<T>(file: string, schema: Shape<T>): { value: T | undefined } | { damage: Damage } {
  let raw: unknown;
  try {
    raw = readJson(file);
  } catch (cause) {
    if (cause instanceof SyntaxError || (cause as NodeJS.ErrnoException).code === "EISDIR") return { damage: { cause } };
    throw cause;
  }
  if (raw === undefined) return { value: undefined };
  const parsed = check(schema, raw, basename(file));
  return parsed.ok ? { value: parsed.value } : { damage: { cause: parsed.error } };
}

/** The state file in `stateDir`, if it is the checkout `dir`'s of the store `storeId`; else null, with its damage if it is there. */
function readStateFile(stateDir: string, dir: string, storeId: string): { state: CheckoutStateFile | null; damage: Damage | null } {
  const read = readStateJson(join(stateDir, "state.json"), StateSchema);
  if ("damage" in read) return { state: null, damage: read.damage };
  const state = read.value ?? null;
  if (state !== null && (state.checkout !== dir || state.store !== storeId)) {
    return { state: null, damage: { cause: new Error("the state file names another checkout or store") } };
  }
  return { state, damage: null };
}

/** Write the state file; what it now holds, as a read of it would give. */
function writeStateFile(stateDir: string, state: CheckoutStateFile, randomId: RandomSource["randomId"]): CheckoutStateFile {
  const text = `${JSON.stringify(state, null, 2)}\n`;
  writeAtomic(join(stateDir, "state.json"), text, randomId);
  return JSON.parse(text) as CheckoutStateFile;
}

/** Where a checkout's state lives, and the directory now at its path. */
export interface StateLocation {
  privateRoot: string;
  storeId: string;
  /** The checkout's real path. */
  dir: string;
  /** Its state directory, whose lock the caller holds. */
  stateDir: string;
  /** The identity of the directory at `dir` (directoryIdentity). */
  directory: string;
}

export interface SettledState {
  /** The checkout's state; null when there is none to use (never pulled, replaced, damaged). */
  state: CheckoutStateFile | null;
  /** The state there was another directory's (removed and made again, another volume): it was set aside. */
  replaced: boolean;
  /** The state set aside for this directory was taken over: it was moved here, or came back. */
  takenOver: boolean;
  /** The state, or its journal, is damaged: it counts as lost, and stays until a pull drops it (CheckoutState.forgetDamaged). */
  damage: Damage | null;
  /** The journal as read, null when there is none (or it is damaged: `damage`). */
  journal: Journal | null;
}

/**
 * Make the state directory at a checkout's path hold the state of the
 * directory now there, under its lock: finish a takeover a killed call left
 * part-way; set aside a state made for another directory; take over the
 * state set aside for this one, if there is one. Then judge the journal: a
 * damaged one says that visible files may hold what a dead call wrote,
 * without saying which, so the whole state counts as lost — every file is
 * kept, and a pull merges them as for a state that is gone (pull.ts, lostBase).
 */
export function settleState(at: StateLocation, clock: FileClock): SettledState {
  finishTakeover(at.stateDir, at.dir, clock.randomId);
  let own = readStateFile(at.stateDir, at.dir, at.storeId);
  let replaced = false;
  const recorded = own.state?.directory;
  if (own.state !== null && (recorded === undefined || (recorded !== at.directory && sameDirectory(recorded, at.directory)))) {
    // Written before directories were recorded, or before they were marked: this is the directory it knew.
    own.state = { ...own.state, directory: at.directory };
    writeStateFile(at.stateDir, own.state, clock.randomId);
  } else if (recorded !== undefined && recorded !== at.directory) {
    setAsideHeld(at.privateRoot, at.stateDir, at.storeId, recorded, clock);
    own = { state: null, damage: null };
    replaced = true;
  }
  const takenOver = own.state === null && takeOverSetAside(at.privateRoot, at.stateDir, at.storeId, at.directory, at.dir, clock.randomId);
  if (takenOver) {
    own = readStateFile(at.stateDir, at.dir, at.storeId);
    replaced = false;
  }
  const journal = readStateJson(join(at.stateDir, "journal.json"), JournalSchema);
  if ("damage" in journal) return { state: null, replaced, takenOver, damage: journal.damage, journal: null };
  return { state: own.state, replaced, takenOver, damage: own.damage, journal: journal.value ?? null };
}

/** The state changed under this call's lock (someone else wrote it): the next call judges it afresh. */
function changedInUse(damage: Damage): DomainError {
  return new DomainError("LOCAL_STATE", "The private state of this checkout changed while this call used it; call again.", { cause: damage.cause });
}

export class CheckoutState {
  /** The directory was not the one this state was made for: its old state was set aside (open). */
  replaced = false;
  /** The state is damaged, and reads as none until forgetDamaged (settleState). */
  damage: Damage | null = null;
  /**
   * state.json and journal.json as this call last read or wrote them. Only
   * the lock's holder writes them, so what settleState read stays true
   * until this call writes: reading them again on every look cost a
   * process per call several reads and parses. A holder whose lock was
   * taken over learns it from checkLock before any change, as before.
   * Undefined: not known (a write that failed part-way), read again.
   */
  private known: { state?: CheckoutStateFile | null; journal?: Journal | null } = {};

  private constructor(
    readonly dir: string,
    readonly storeId: string,
    readonly stateDir: string,
    readonly git: ObjectCache,
    private readonly lock: HeldLock,
    private readonly directory: string,
    private readonly statCacheMemory: StatCacheMemory,
    private readonly randomId: RandomSource["randomId"],
  ) {}

  static async open(options: CheckoutStateOptions): Promise<CheckoutState> {
    const stateDir = checkoutStateDir(options.privateRoot, options.storeId, options.dir);
    let lock: HeldLock;
    let directory: string;
    try {
      // The state directory is made only when the lock cannot be made in it:
      // it is there on every call but a checkout's first.
      for (let tries = 0; ; tries++) {
        try {
          lock = await acquireLock(join(stateDir, "lock"), options.self, options.lockTimeoutMs ?? 30_000, options.clock);
          break;
        } catch (e) {
          // Never made, or (a directory that was gone a moment ago) just set
          // aside or removed (registeredCheckouts): make it again.
          if ((e as NodeJS.ErrnoException).code !== "ENOENT" || tries >= 4) throw e;
          mkdirSync(stateDir, { recursive: true, mode: 0o700 });
        }
      }
    } catch (cause) {
      if (cause instanceof DomainError) throw cause;
      throw unopened(cause, options.dir, stateDir);
    }
    try {
      // Under the lock: the one place a directory without birth time is marked.
      directory = directoryIdentity(options.dir, { ...(options.directoryStat !== undefined ? { stat: options.directoryStat } : {}), mark: options.clock.randomId });
      const settled = settleState({ privateRoot: options.privateRoot, storeId: options.storeId, dir: options.dir, stateDir, directory }, options.clock);
      // The stat cache went with a state set aside or taken over: what this process remembers of it is another directory's.
      if (settled.replaced || settled.takenOver) options.memory.statCaches.forget(join(stateDir, STAT_CACHE_FILE));
      // An object the cache cannot produce makes the stat cache suspect too:
      // forget it, so the next scan reads and stores every visible file again.
      const objectCache = await ObjectCache.open(join(stateDir, "git"), options.memory.objects, options.clock.randomId, () =>
        rmSync(join(stateDir, STAT_CACHE_FILE), { force: true }),
      );
      const state = new CheckoutState(options.dir, options.storeId, stateDir, objectCache, lock, directory, options.memory.statCaches, options.clock.randomId);
      state.replaced = settled.replaced;
      state.damage = settled.damage;
      state.known = { state: settled.state, journal: settled.journal };
      return state;
    } catch (cause) {
      lock.release();
      if (cause instanceof DomainError) throw cause;
      throw unopened(cause, options.dir, stateDir);
    }
  }

  /**
   * Drop a damaged state, for a pull to rebuild: the journal first, so that
   * a kill part-way leaves the damaged state file, still found damaged. The
   * object cache stays: it only ever holds objects, checked as they are read.
   */
  forgetDamaged(): void {
    this.checkLock();
    for (const name of ["journal.json", JOURNAL_DONE, STAT_CACHE_FILE, "state.json"]) rmSync(join(this.stateDir, name), { force: true });
    this.statCacheMemory.forget(join(this.stateDir, STAT_CACHE_FILE));
    this.damage = null;
    this.known = { state: null, journal: null };
  }

  private readState(): CheckoutStateFile | null {
    if (this.damage !== null) return null;
    if (this.known.state !== undefined) return this.known.state;
    const read = readStateFile(this.stateDir, this.dir, this.storeId);
    if (read.damage !== null) throw changedInUse(read.damage);
    this.known.state = read.state;
    return read.state;
  }

  private writeState(state: CheckoutStateFile): void {
    this.checkLock();
    this.known.state = undefined;
    this.known.state = writeStateFile(this.stateDir, state, this.randomId);
  }

  /** The baseline, or null for a directory that was never pulled. */
  readBaseline(): Baseline | null {
    return this.readState()?.baseline ?? null;
  }

  /** Move the baseline; this also ends a recorded publication (recordPublication). */
  writeBaseline(baseline: Baseline): void {
    this.writeState({ version: 1, checkout: this.dir, store: this.storeId, directory: this.directory, baseline });
  }

  /**
   * Before a commit's conditional write: what the next call needs to learn
   * whether it landed, should this process die before the baseline moves.
   * Durable before the write is sent, like every state file.
   */
  recordPublication(baseline: Baseline, publishing: PublicationRecord): void {
    this.writeState({ version: 1, checkout: this.dir, store: this.storeId, directory: this.directory, baseline, publishing });
  }

  /** A publication recorded by a call that did not live to move the baseline; null when none. */
  readPublication(): PublicationRecord | null {
    return this.readState()?.publishing ?? null;
  }

  /**
   * Replace the baseline's tree only: recovery's per-file overrides
   * (recovery.ts). Unlike writeBaseline it keeps a recorded publication,
   * which is settled next and needs those overrides too.
   */
  replaceBaselineTree(tree: string): void {
    const state = this.readState();
    if (state === null) return;
    this.writeState({ ...state, baseline: { ...state.baseline, tree } });
  }

  /** Refresh the lock (checkout/lock.ts): long operations call this as they go. */
  heartbeat(): void {
    this.lock.heartbeat();
  }

  /**
   * Before any change to this checkout's state or visible files: LOCAL_STATE
   * when the lock is no longer this call's — it was stopped, and another
   * call took the checkout over — so that it changes nothing more
   * (checkout/lock.ts).
   */
  checkLock(): void {
    this.lock.check();
  }

  readJournal(): Journal | null {
    if (this.damage !== null) return null;
    if (this.known.journal !== undefined) return this.known.journal;
    const read = readStateJson(join(this.stateDir, "journal.json"), JournalSchema);
    if ("damage" in read) throw changedInUse(read.damage);
    this.known.journal = read.value ?? null;
    return this.known.journal;
  }

  writeJournal(journal: Journal): void {
    this.checkLock();
    this.known.journal = undefined;
    const text = `${JSON.stringify(journal)}\n`;
    writeAtomic(join(this.stateDir, "journal.json"), text, this.randomId);
    this.known.journal = JSON.parse(text) as Journal;
  }

  clearJournal(): void {
    this.checkLock();
    this.known.journal = undefined;
    rmSync(join(this.stateDir, "journal.json"), { force: true });
    this.known.journal = null;
    rmSync(join(this.stateDir, JOURNAL_DONE), { force: true });
  }

  /**
   * The journal's progress: each step of rewriting a visible file, recorded
   * before the file changes and again once it did (visible-writes.ts,
   * ProgressStep), so that recovery knows, for a file changed since the
   * crash, whether the change was made over what the dead call wrote; each
   * temporary name, before the file is made; and, once every step is
   * settled, a last record saying so. `append`: recovery adds its own
   * records to the dead call's. Not flushed to disk: it only has to outlive
   * a killed process, as the visible files it describes do.
   */
  openJournalProgress(append: boolean): JournalProgressLog {
    this.checkLock();
    const fd = openSync(join(this.stateDir, JOURNAL_DONE), append ? "a" : "w", 0o600);
    const write = (record: object) => {
      writeSync(fd, `${JSON.stringify(record)}\n`);
    };
    return {
      log: write,
      scratch: (name) => write({ scratch: name }),
      settled: () => write({ settled: true }),
      close: () => closeSync(fd),
    };
  }

  /**
   * The recorded steps of each path, in order (a second record marks its
   * step done, or given up: openJournalProgress), the temporary names
   * recorded, and whether the steps were all settled.
   */
  readJournalProgress(): JournalProgress {
    return readJournalProgress(this.stateDir);
  }

  private get statCacheFile(): string {
    return join(this.stateDir, STAT_CACHE_FILE);
  }

  /** The stat cache of the visible files (stat-cache.ts); empty when absent or unreadable. */
  loadStatCache(): StatCache {
    return this.statCacheMemory.load(this.statCacheFile);
  }

  /** Remember `cache` for this process's next calls; written when the process ends (StatCacheMemory.rememberUnsaved). */
  rememberStatCache(cache: StatCache): void {
    this.statCacheMemory.rememberUnsaved(this.statCacheFile, cache);
  }

  saveStatCache(cache: StatCache): void {
    this.statCacheMemory.save(this.statCacheFile, cache);
  }

  release(): void {
    this.git.close();
    this.lock.release();
  }
}

/**
 * The journal's progress in the state directory `stateDir`: the recorded
 * steps of each path, in order (a second record marks its step done, or
 * given up: CheckoutState.openJournalProgress), the temporary names
 * recorded, and whether the steps were all settled.
 */
export function readJournalProgress(stateDir: string): JournalProgress {
  const progress: JournalProgress = { steps: new Map(), scratch: new Set(), settled: false };
  let text: string;
  try {
    text = readFileSync(join(stateDir, JOURNAL_DONE), "utf8");
  } catch {
    return progress;
  }
  const { steps } = progress;
  for (const line of text.split("\n")) {
    if (line === "") continue;
    let record: unknown;
    try {
      record = JSON.parse(line);
    } catch {
      continue; // a line cut by the crash: that record counts as not written
    }
    const scratch = check(ScratchRecordSchema, record);
    if (scratch.ok) {
      progress.scratch.add(scratch.value.scratch);
      continue;
    }
    if (check(SettledRecordSchema, record).ok) {
      progress.settled = true;
      continue;
    }
    const parsed = check(ProgressStepSchema, record);
    if (!parsed.ok) continue;
    const step = parsed.value;
    const list = steps.get(step.path) ?? [];
    const last = list[list.length - 1];
    const open = last !== undefined && last.side === step.side && last.done !== true;
    if (step.done === true) {
      if (open) last.done = true;
    } else if (step.done === false) {
      if (open) list.pop(); // given up before anything changed
    } else if (open) {
      list[list.length - 1] = step; // a step that is recorded again, through a temporary file this time
    } else {
      list.push(step);
    }
    steps.set(step.path, list);
  }
  return progress;
}
