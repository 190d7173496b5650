/**
 * Private state of one checkout, under the private root (decisions §3):
 *
 *   <privateRoot>/checkouts/<id>/state.json   the baseline: accepted commit, tree, generation
 *   <privateRoot>/checkouts/<id>/journal.json present only while visible files are being rewritten
 *   <privateRoot>/checkouts/<id>/git/         the object cache (see git-store.ts)
 *   <privateRoot>/checkouts/<id>/lock         held by the one operation running on this checkout
 *   <privateRoot>/checkouts/<id>/stat-cache.json  the stat cache (stat-cache.ts); only a speed-up
 *
 * `<id>` hashes the store identity and the checkout's real path, so the same
 * directory used with two stores keeps two baselines. Every file is replaced
 * atomically (write a temporary file, fsync, rename), so a crash leaves the
 * old or the new state, never a torn one — except the stat cache, written
 * without fsync: a torn one does not parse, and is simply rebuilt.
 */
import { createHash } from "node:crypto";
import { closeSync, fsyncSync, lstatSync, mkdirSync, openSync, readdirSync, readFileSync, renameSync, rmSync, writeSync } from "node:fs";
import { hostname } from "node:os";
import { join } from "node:path";
import { z } from "zod";
import { DomainError } from "../contract/errors.ts";
import { GitStore } from "./git-store.ts";
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

const StateSchema = z
  .object({
    version: z.literal(1),
    checkout: z.string(),
    store: z.string(),
    baseline: BaselineSchema,
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

export interface ProcessIdentity {
  pid: number;
  /** Whether a process with this id still runs on this host. */
  isAlive(pid: number): boolean;
}

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
  const tmp = `${file}.tmp-${Math.random().toString(16).slice(2)}`;
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

export class CheckoutState {
  private constructor(
    readonly dir: string,
    readonly storeId: string,
    readonly stateDir: string,
    readonly git: GitStore,
    private readonly lockFile: string,
  ) {}

  static async open(options: OpenCheckoutOptions): Promise<CheckoutState> {
    const stateDir = join(options.privateRoot, "checkouts", checkoutId(options.storeId, options.dir));
    const lockFile = join(stateDir, "lock");
    try {
      mkdirSync(stateDir, { recursive: true, mode: 0o700 });
      await acquireLock(lockFile, options.self, options.lockTimeoutMs ?? 30_000);
    } catch (cause) {
      if (cause instanceof DomainError) throw cause;
      throw new DomainError("LOCAL_STATE", "The private state of this checkout could not be opened.", { cause });
    }
    try {
      // An object the cache cannot produce makes the stat cache suspect too:
      // forget it, so the next scan reads and stores every visible file again.
      const gitStore = await GitStore.open(join(stateDir, "git"), () => rmSync(join(stateDir, STAT_CACHE_FILE), { force: true }));
      return new CheckoutState(options.dir, options.storeId, stateDir, gitStore, lockFile);
    } catch (cause) {
      rmSync(lockFile, { force: true });
      throw new DomainError("LOCAL_STATE", "The private state of this checkout could not be opened.", { cause });
    }
  }

  /** The baseline, or null for a directory that was never pulled. */
  readBaseline(): Baseline | null {
    const raw = readJson(join(this.stateDir, "state.json"));
    if (raw === undefined) return null;
    const parsed = StateSchema.safeParse(raw);
    if (!parsed.success || parsed.data.checkout !== this.dir || parsed.data.store !== this.storeId) {
      throw new DomainError("ENGINE_FAILED", "The private state of this checkout cannot be trusted.", { cause: parsed.error });
    }
    return parsed.data.baseline;
  }

  writeBaseline(baseline: Baseline): void {
    const state: CheckoutStateFile = { version: 1, checkout: this.dir, store: this.storeId, baseline };
    writeAtomic(join(this.stateDir, "state.json"), `${JSON.stringify(state, null, 2)}\n`);
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
    rmSync(this.lockFile, { force: true });
  }
}

/**
 * One operation per checkout at a time, across processes. The lock file
 * names its holder; a lock left by a process that died on this host is
 * taken over, since a crash must not block the checkout forever.
 */
async function acquireLock(file: string, self: ProcessIdentity, timeoutMs: number): Promise<void> {
  const me = `${self.pid} ${hostname()}`;
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      const fd = openSync(file, "wx", 0o600);
      writeSync(fd, me);
      closeSync(fd);
      return;
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== "EEXIST") throw e;
    }
    let holder = "";
    try {
      holder = readFileSync(file, "utf8");
    } catch {
      continue; // Released between our attempt and the read: try again.
    }
    const [pid, host] = holder.split(" ");
    if (host === hostname() && pid && !self.isAlive(Number(pid))) {
      // Stale: its holder died. Rename first so two takers cannot both remove it.
      try {
        renameSync(file, `${file}.stale-${self.pid}`);
        rmSync(`${file}.stale-${self.pid}`, { force: true });
      } catch {
        /* another process took it over first */
      }
      continue;
    }
    if (Date.now() > deadline) {
      throw new DomainError("LOCAL_STATE", "Another pull or commit is still running on this checkout; call again when it ends.");
    }
    await Bun.sleep(20 + Math.random() * 30);
  }
}

/** Real paths of every checkout registered under the private root, for the nesting check. */
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
    const file = join(base, id, "state.json");
    // Every call checks every checkout: parse each state file only when it changed.
    const identity = fileIdentity(file);
    const known = knownCheckouts.get(file);
    if (identity !== null && known?.identity === identity) {
      dirs.push(known.checkout);
      continue;
    }
    try {
      const parsed = StateSchema.safeParse(readJson(file));
      if (parsed.success) {
        dirs.push(parsed.data.checkout);
        if (identity !== null) knownCheckouts.set(file, { identity, checkout: parsed.data.checkout });
      }
    } catch {
      /* unreadable state is the business of its own checkout */
    }
  }
  return dirs;
}

/** The checkout directory each state file named when this process last parsed it (state files are replaced, never edited). */
const knownCheckouts = new Map<string, { identity: string; checkout: string }>();
