/**
 * Fetching ahead: a server that sits idle between its agent's calls
 * downloads and imports, into a checkout's object cache, the packs of the
 * publications other writers made meanwhile — the catching up its next call
 * would otherwise do at the start of its `fetch` stage, while the agent
 * waits (docs/performance.md, "Fetching ahead").
 *
 * Only the object cache changes. The visible files, the baseline and the
 * checkout's state stay as the last call left them: an agent's files change
 * when it calls, never behind its back. The cache only ever holds objects,
 * each checked as it is read, so what a look imports can only spare a call
 * work, never change its answer.
 *
 * A look has two halves. The store is read with no lock held (a store that
 * hangs holds up no call), and what it downloaded is imported under the
 * checkout's lock, taken only if free (tryLock): a call running on the
 * checkout, in this process or another, makes the look give up, and the
 * next look tries again.
 */
import { join } from "node:path";
import type { Clock, RandomSource } from "../contract/clock.ts";
import type { ObjectStore } from "../store/object-store.ts";
import { type CheckoutMemory } from "./checkout/deps.ts";
import { tryLock } from "./checkout/lock.ts";
import type { ProcessIdentity } from "./checkout/lock.ts";
import { pulledObjectCache } from "./checkout/registry.ts";
import { ObjectCache } from "./git/object-cache.ts";
import type { NamedPack } from "./git/pack-import.ts";
import { downloadPack, importPacks, readCurrentIfChanged } from "./publish/accepted-state.ts";
import { type Manifest, type PackDescriptor, parseManifest } from "./publish/manifest.ts";

/** What one look found: "fetched" when it imported packs, "held" when it downloaded some to import later, else why it did neither. */
export type Looked = "fetched" | "held" | "unchanged" | "up to date" | "busy" | "not a checkout" | "too big";

export interface FetchAheadDeps extends Clock, RandomSource {
  storeId: string;
  privateRoot: string;
  self: ProcessIdentity;
  memory: Pick<CheckoutMemory, "objects">;
}

/**
 * The most bytes of packs one look downloads: a checkout further behind
 * (a first pull's base pack, a long absence) catches up in its call, as it
 * would without looks, rather than a server holding big packs in memory
 * between calls.
 */
export const FETCH_AHEAD_BYTES = 8 * 2 ** 20;

/**
 * Downloaded packs are imported once this many wait, or once the oldest has
 * waited HOLD_MS: imported as they come, each publication would leave a
 * pack of its own in the cache, where packs imported together are one
 * (git/pack-import.ts). Until then the call that needs them takes them from
 * the process memory (git/held-packs.ts), downloading nothing.
 */
const UNITE_AT = 4;
const HOLD_MS = 1_000;

/** A look's store half done: the packs downloaded, to import under the lock. */
export interface Downloaded {
  import(): Promise<Looked>;
}

/** The looks at one checkout, and what they last saw of `current`. */
export class FetchAhead {
  /** The ETag of the `current` last read; null before the first look. */
  private seen: string | null = null;
  /** The manifest it held, while its packs are not all in the cache; null once they are. */
  private pending: Manifest | null = null;

  constructor(
    private readonly deps: FetchAheadDeps,
    private readonly dir: string,
  ) {}

  /** One look whole, both halves at once (a caller with nothing to wait for between them). */
  async look(store: ObjectStore): Promise<Looked> {
    const got = await this.download(store);
    return typeof got === "string" ? got : got.import();
  }

  /**
   * The store half of a look: `current` read if it changed since the last
   * look, and the packs it names that the cache lacks downloaded; what is
   * left is their import, else why there is nothing to do now. `store`: as
   * the look may read it, bounded by a deadline so that it never hangs
   * (store/deadline.ts).
   */
  async download(store: ObjectStore): Promise<Looked | Downloaded> {
    const gitdir = pulledObjectCache(this.deps.privateRoot, this.deps.storeId, this.dir);
    if (gitdir === null) return "not a checkout";
    const read = await readCurrentIfChanged(store, this.seen);
    if (read === null) {
      this.seen = null;
      this.pending = null;
      return "up to date";
    }
    if (read !== "unchanged") {
      this.pending = parseManifest(read.body);
      this.seen = read.etag;
    }
    if (this.pending === null) return "unchanged";
    return this.gather(store, gitdir, this.pending, read !== "unchanged");
  }

  /** The packs of `manifest` the cache lacks downloaded and held; their import once enough wait, or long enough. */
  private async gather(store: ObjectStore, gitdir: string, manifest: Manifest, moved: boolean): Promise<Looked | Downloaded> {
    const { held } = this.deps.memory.objects;
    const git = await ObjectCache.open(gitdir, this.deps.memory.objects, this.deps.randomId);
    let missing;
    try {
      missing = manifest.packs.filter((p) => !git.hasPack(p.sha256));
    } finally {
      git.close();
    }
    if (missing.length === 0) {
      this.pending = null;
      return moved ? "up to date" : "unchanged";
    }
    const absent = missing.filter((p) => !held.has(p.sha256));
    if (absent.reduce((sum, p) => sum + p.size, 0) > FETCH_AHEAD_BYTES) {
      // The call that comes catches up with it, as without looks.
      this.pending = null;
      return "too big";
    }
    // Downloaded before the lock is asked for: a call that starts meanwhile waits for no store.
    for (const p of absent) held.hold(p.sha256, await downloadPack(store, p, "the accepted state"), this.deps.monotonic());
    const now = this.deps.monotonic();
    const oldest = Math.min(...missing.map((p) => held.heldSince(p.sha256) ?? now));
    if (missing.length < UNITE_AT && now - oldest < HOLD_MS) return absent.length > 0 ? "held" : "unchanged";
    return { import: () => this.importUnderLock(gitdir, manifest, missing) };
  }

  /** The held packs imported, and the head's tree read once, with the checkout's lock held: "busy" when a call holds it. */
  private async importUnderLock(gitdir: string, manifest: Manifest, missing: readonly PackDescriptor[]): Promise<Looked> {
    const { deps } = this;
    const lock = tryLock(join(gitdir, "..", "lock"), deps.self, deps);
    if (lock === null) return "busy";
    const git = await ObjectCache.open(gitdir, deps.memory.objects, deps.randomId);
    try {
      const packs: NamedPack[] = [];
      for (const p of missing) {
        const bytes = git.hasPack(p.sha256) ? null : git.takeHeld(p.sha256);
        if (bytes !== null) packs.push({ name: p.sha256, bytes });
      }
      if (packs.length > 0) await importPacks(git, packs, "the accepted state");
      // Into the process memory, where the next call's read of the same tree finds it.
      if (missing.every((p) => git.hasPack(p.sha256))) await git.readFlatTree(await git.commitTree(manifest.head));
      return packs.length > 0 ? "fetched" : "up to date";
    } finally {
      git.close();
      lock.release();
    }
  }
}
