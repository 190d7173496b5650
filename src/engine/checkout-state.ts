/**
 * Private state of one checkout, under the private root (docs/design.md,
 * Roots and checkouts):
 *
 *   <privateRoot>/checkouts/<id>/state.json   the baseline: accepted commit, tree, generation; the
 *                                              directory it belongs to; a publication in flight
 *   <privateRoot>/checkouts/<id>/journal.json present only while visible files are being rewritten
 *   <privateRoot>/checkouts/<id>/git/         the object cache (see git/object-cache.ts)
 *   <privateRoot>/checkouts/<id>/lock         held by the one operation running on this checkout
 *   <privateRoot>/checkouts/<id>/stat-cache.json  the stat cache (stat-cache.ts); only a speed-up
 *
 * `<id>` hashes the store identity and the checkout's real path, so the same
 * directory used with two stores keeps two baselines. A path is not a
 * directory, though: `rm -rf DIR` and a new `DIR` (or a fresh volume mounted
 * there) have the same path and none of the files the baseline describes.
 * So the state also records the identity of the directory it was made for
 * (device, inode, birth time); a directory that is not that one is a new
 * checkout, whose old state is dropped — else every file missing from it
 * would count as a local deletion, and the next commit would delete them for
 * everyone. Every file is replaced
 * atomically (write a temporary file, fsync, rename), so a crash leaves the
 * old or the new state, never a torn one — except the stat cache, written
 * without fsync: a torn one does not parse, and is simply rebuilt.
 */
import { createHash } from "node:crypto";
import { closeSync, fsyncSync, lstatSync, mkdirSync, openSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeSync } from "node:fs";
import { join } from "node:path";
import { z } from "zod";
import { DomainError } from "../contract/errors.ts";
import { randomHex } from "../contract/random-hex.ts";
import { acquireLock, type HeldLock, type ProcessIdentity } from "./checkout-lock.ts";
import { ObjectCache } from "./git/object-cache.ts";
import { fileIdentity, keepRecent } from "./kept.ts";
import { StatCache } from "./stat-cache.ts";

const hex40 = z.string().regex(/^[0-9a-f]{40}$/);

const BaselineSchema = z
  .object({
    generation: z.number().int().nonnegative(),
    head: hex40.nullable(),
    tree: hex40.nullable(),
  })
  .strict();

/**
 * A commit's publication between its conditional write and the baseline
 * move: recorded before the write, so the next call on the checkout can
 * learn whether it landed (publication.ts) when this one dies in between.
 */
const PublicationSchema = z
  .object({
    /** The manifest's publication id, and the pack the commit uploaded. */
    publication: z.string(),
    pack: z.object({ key: z.string(), sha256: z.string() }).strict(),
    /** The manifest's generation and head commit. */
    generation: z.number().int().positive(),
    head: hex40,
    /**
     * Where the published tree differs from the visible files the commit
     * scanned (changes merged in from others, not yet written): each path
     * with the blob the visible file held then (null = absent).
     */
    merged: z.array(z.object({ path: z.string(), oid: hex40.nullable() }).strict()),
  })
  .strict();

const StateSchema = z
  .object({
    version: z.literal(1),
    checkout: z.string(),
    store: z.string(),
    /** The identity of the directory this state was made for (absent in states written before it was recorded). */
    directory: z.string().optional(),
    baseline: BaselineSchema,
    publishing: PublicationSchema.optional(),
  })
  .strict();

const JournalSchema = z
  .object({
    version: z.literal(1),
    /** The baseline the interrupted operation was moving to. */
    target: BaselineSchema,
    /** Each visible file being rewritten: blob ids of its content before and after (null = absent). */
    writes: z.array(z.object({ path: z.string(), before: hex40.nullable(), after: hex40.nullable() }).strict()),
  })
  .strict();

export type Baseline = z.infer<typeof BaselineSchema>;
export type CheckoutStateFile = z.infer<typeof StateSchema>;
export type Journal = z.infer<typeof JournalSchema>;
export type Publication = z.infer<typeof PublicationSchema>;
export type { ProcessIdentity };

export interface OpenCheckoutOptions {
  privateRoot: string;
  storeId: string;
  /** The checkout's real path. */
  dir: string;
  self: ProcessIdentity;
  /** How long to wait for another operation on the same checkout. */
  lockTimeoutMs?: number;
}

function writeAtomic(file: string, data: string, durable = true): void {
  const tmp = `${file}.tmp-${randomHex(8)}`;
  const fd = openSync(tmp, "w", 0o600);
  try {
    writeSync(fd, data);
    if (durable) fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  renameSync(tmp, file);
}

function readJson(file: string): unknown | undefined {
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw e;
  }
  return JSON.parse(text);
}

/**
 * Stat caches this process last read or wrote, by file, with the identity of
 * the file at that time: any other writer (a CLI call while a server runs)
 * replaces the file, which changes its inode and times, so a kept copy is
 * used only while the file on disk is the very one it came from.
 */
const STAT_CACHE_FILE = "stat-cache.json";
const keptStatCaches = new Map<string, KeptStatCache>();
interface KeptStatCache {
  identity: string;
  cache: StatCache;
  /** Holds changes the file on disk does not (keepStatCache). */
  unsaved: boolean;
}

/** As many checkouts as a server is likely to serve at once; the least recent beyond are written out and dropped. */
const KEPT_STAT_CACHES = 16;

function keep(file: string, kept: KeptStatCache): void {
  keepRecent(keptStatCaches, file, kept, KEPT_STAT_CACHES, (oldest, old) => {
    writeOut(oldest, old);
    return true;
  });
}

/** Write a kept cache's unsaved changes, unless another process replaced the file since (it knows at least as much). */
function writeOut(file: string, kept: KeptStatCache): void {
  if (!kept.unsaved || fileIdentity(file) !== kept.identity) return;
  try {
    writeAtomic(file, kept.cache.serialize(), false);
    kept.unsaved = false;
    kept.identity = fileIdentity(file) ?? "";
  } catch {
    /* only a speed-up: the next process reads those files again */
  }
}

/**
 * Write out what `keepStatCache` kept in memory only, for the processes that
 * come next: the CLI calls this before it exits, a server when it stops.
 */
export function flushStatCaches(): void {
  for (const [file, kept] of keptStatCaches) writeOut(file, kept);
}

export function checkoutId(storeId: string, dir: string): string {
  return createHash("sha256").update(`${storeId}\0${dir}`).digest("hex").slice(0, 32);
}

/**
 * The identity of a directory: device, inode and birth time. The inode alone
 * is not enough — a directory removed and made again often gets the same
 * inode number at once — and the birth time tells them apart where the file
 * system records one (ext4, XFS, Btrfs, APFS, NTFS, tmpfs). Where it does
 * not (birth time 0), the inode is all there is (docs/failures.md).
 */
function directoryIdentity(dir: string): string {
  const st = statSync(dir);
  return `${st.dev}:${st.ino}:${st.birthtimeMs}`;
}

export class CheckoutState {
  /** The directory was not the one this state was made for: its old state was dropped (open). */
  replaced = false;

  private constructor(
    readonly dir: string,
    readonly storeId: string,
    readonly stateDir: string,
    readonly git: ObjectCache,
    private readonly lock: HeldLock,
    private readonly directory: string,
  ) {}

  static async open(options: OpenCheckoutOptions): Promise<CheckoutState> {
    const stateDir = join(options.privateRoot, "checkouts", checkoutId(options.storeId, options.dir));
    let lock: HeldLock;
    let directory: string;
    try {
      for (let tries = 0; ; tries++) {
        mkdirSync(stateDir, { recursive: true, mode: 0o700 });
        try {
          lock = await acquireLock(join(stateDir, "lock"), options.self, options.lockTimeoutMs ?? 30_000);
          break;
        } catch (e) {
          // The state of a directory that was gone a moment ago may just have
          // been removed (registeredCheckouts): make it again.
          if ((e as NodeJS.ErrnoException).code !== "ENOENT" || tries >= 3) throw e;
        }
      }
    } catch (cause) {
      if (cause instanceof DomainError) throw cause;
      throw new DomainError("LOCAL_STATE", "The private state of this checkout could not be opened.", { cause });
    }
    try {
      directory = directoryIdentity(options.dir);
      // An object the cache cannot produce makes the stat cache suspect too:
      // forget it, so the next scan reads and stores every visible file again.
      const objectCache = await ObjectCache.open(join(stateDir, "git"), () => rmSync(join(stateDir, STAT_CACHE_FILE), { force: true }));
      const state = new CheckoutState(options.dir, options.storeId, stateDir, objectCache, lock, directory);
      state.forgetIfReplaced();
      return state;
    } catch (cause) {
      lock.release();
      if (cause instanceof DomainError) throw cause;
      throw new DomainError("LOCAL_STATE", "The private state of this checkout could not be opened.", { cause });
    }
  }

  /**
   * A directory that is not the one the state was made for is a new
   * checkout: drop the baseline, the journal (its files are not in this
   * directory) and the stat cache (inodes are reused). The object cache
   * stays: it only ever holds objects, and they speed up the fresh pull.
   */
  private forgetIfReplaced(): void {
    const state = this.readState();
    if (state === null) return;
    if (state.directory === undefined) {
      // Written before directories were recorded: this is the directory it knew.
      this.writeState({ ...state, directory: this.directory });
      return;
    }
    if (state.directory === this.directory) return;
    for (const name of ["journal.json", STAT_CACHE_FILE, "state.json"]) rmSync(join(this.stateDir, name), { force: true });
    keptStatCaches.delete(join(this.stateDir, STAT_CACHE_FILE));
    this.replaced = true;
  }

  private readState(): CheckoutStateFile | null {
    const raw = readJson(join(this.stateDir, "state.json"));
    if (raw === undefined) return null;
    const parsed = StateSchema.safeParse(raw);
    if (!parsed.success || parsed.data.checkout !== this.dir || parsed.data.store !== this.storeId) {
      throw new DomainError("ENGINE_FAILED", "The private state of this checkout cannot be trusted.", { cause: parsed.error });
    }
    return parsed.data;
  }

  private writeState(state: CheckoutStateFile): void {
    writeAtomic(join(this.stateDir, "state.json"), `${JSON.stringify(state, null, 2)}\n`);
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
  recordPublication(baseline: Baseline, publishing: Publication): void {
    this.writeState({ version: 1, checkout: this.dir, store: this.storeId, directory: this.directory, baseline, publishing });
  }

  /** A publication recorded by a call that did not live to move the baseline; null when none. */
  readPublication(): Publication | null {
    return this.readState()?.publishing ?? null;
  }

  /** Refresh the lock (checkout-lock.ts): long operations call this as they go. */
  heartbeat(): void {
    this.lock.heartbeat();
  }

  readJournal(): Journal | null {
    const raw = readJson(join(this.stateDir, "journal.json"));
    if (raw === undefined) return null;
    const parsed = JournalSchema.safeParse(raw);
    if (!parsed.success) {
      throw new DomainError("ENGINE_FAILED", "The private state of this checkout cannot be trusted.", { cause: parsed.error });
    }
    return parsed.data;
  }

  writeJournal(journal: Journal): void {
    writeAtomic(join(this.stateDir, "journal.json"), `${JSON.stringify(journal)}\n`);
  }

  clearJournal(): void {
    rmSync(join(this.stateDir, "journal.json"), { force: true });
  }

  private get statCacheFile(): string {
    return join(this.stateDir, STAT_CACHE_FILE);
  }

  /** The stat cache of the visible files (stat-cache.ts); empty when absent or unreadable. */
  loadStatCache(): StatCache {
    const file = this.statCacheFile;
    const identity = fileIdentity(file);
    if (identity === null) return StatCache.empty();
    // A server answers many calls on one checkout: parsing the cache of
    // 10,000 files again each time would cost more than the scan it saves.
    const kept = keptStatCaches.get(file);
    if (kept && kept.identity === identity) {
      keep(file, kept);
      return kept.cache.clone();
    }
    const cache = StatCache.load(file);
    keep(file, { identity, cache: cache.clone(), unsaved: false });
    return cache;
  }

  /**
   * Keep `cache` for this process's next calls without writing it: for
   * changes that only make more entries trusted, where the file on disk
   * stays right for any other process. Written when there is no file yet.
   */
  keepStatCache(cache: StatCache): void {
    const file = this.statCacheFile;
    const identity = fileIdentity(file);
    if (identity === null) this.saveStatCache(cache);
    else keep(file, { identity, cache: cache.clone(), unsaved: true });
  }

  saveStatCache(cache: StatCache): void {
    const file = this.statCacheFile;
    // Not fsync'ed: it is only a speed-up, and a torn file does not parse.
    writeAtomic(file, cache.serialize(), false);
    const identity = fileIdentity(file);
    if (identity === null) keptStatCaches.delete(file);
    else keep(file, { identity, cache: cache.clone(), unsaved: false });
  }

  release(): void {
    this.git.close();
    this.lock.release();
  }
}

/**
 * Real paths of every checkout registered under the private root, for the
 * nesting check. A checkout whose directory is gone is no checkout: its
 * state is removed on the way (unless an operation holds it), so states of
 * removed directories — temporary ones above all — do not pile up and slow
 * every call down.
 */
export function registeredCheckouts(privateRoot: string): string[] {
  const base = join(privateRoot, "checkouts");
  let ids: string[];
  try {
    ids = readdirSync(base);
  } catch {
    return [];
  }
  const dirs: string[] = [];
  for (const id of ids) {
    if (id.startsWith(".")) continue; // being removed (below)
    const file = join(base, id, "state.json");
    // Every call checks every checkout: parse each state file only when it changed.
    const identity = fileIdentity(file);
    let checkout = identity !== null && knownCheckouts.get(file)?.identity === identity ? knownCheckouts.get(file)!.checkout : null;
    if (checkout === null) {
      try {
        const parsed = StateSchema.safeParse(readJson(file));
        if (!parsed.success) continue;
        checkout = parsed.data.checkout;
        if (identity !== null) knownCheckouts.set(file, { identity, checkout });
      } catch {
        continue; // unreadable state is the business of its own checkout
      }
    }
    if (exists(checkout)) dirs.push(checkout);
    else forgetCheckout(base, id);
  }
  return dirs;
}

function exists(path: string): boolean {
  try {
    lstatSync(path);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code !== "ENOENT";
  }
}

/**
 * Remove the state of a checkout whose directory is gone, unless an
 * operation holds its lock (it may be making the directory again). Renamed
 * aside first, so a half-removed state is never read as a checkout's.
 */
function forgetCheckout(base: string, id: string): void {
  if (exists(join(base, id, "lock"))) return;
  const aside = join(base, `.gone-${id}-${randomHex(4)}`);
  try {
    renameSync(join(base, id), aside);
    rmSync(aside, { recursive: true, force: true });
  } catch {
    /* another process got there first, or a state file is in use: next time */
  }
}

/**
 * Remove the private state of a checkout whose directory is being removed
 * (a server's temporary session directory). Call only once nothing in the
 * directory remains unpublished.
 */
export function forgetCheckoutState(privateRoot: string, storeId: string, dir: string): void {
  forgetCheckout(join(privateRoot, "checkouts"), checkoutId(storeId, dir));
}

/** The checkout directory each state file named when this process last parsed it (state files are replaced, never edited). */
const knownCheckouts = new Map<string, { identity: string; checkout: string }>();
