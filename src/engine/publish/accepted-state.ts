/**
 * Reading the accepted state from the store: `current`, then the packs it
 * names that this checkout lacks, then the head commit's tree. Every failure
 * maps to its token here, and nothing is materialised when one occurs.
 */
import { createHash } from "../git/hash.ts";
import type { RandomSource } from "../../contract/clock.ts";
import { DomainError } from "../../contract/errors.ts";
import { type ConditionalRead, type ObjectStore, StoreError, type StoredObject } from "../../store/object-store.ts";
import type { FlatTree, ObjectCache } from "../git/object-cache.ts";
import type { NamedPack } from "../git/pack-import.ts";
import { BadPackError, MissingObjectError } from "../git/objects.ts";
import { formatFor, type HistoryPackDescriptor, MANIFEST_KEY, type Manifest, newPublicationId, type PackDescriptor, parseManifest, serializeManifest } from "./manifest.ts";
import type { RecentMap } from "../memory/recent-map.ts";
import { ByteBudget } from "../memory/byte-budget.ts";
import { release } from "../memory/release.ts";

export interface AcceptedState {
  /** null when the store holds no notebook yet (generation 0). */
  manifest: Manifest | null;
  /** ETag of `current` as read, for the compare-and-swap; null when absent. */
  etag: string | null;
  generation: number;
  head: string | null;
  tree: string | null;
  files: FlatTree;
  trees: Set<string>;
  /** Tree ids by directory prefix (git/object-cache.ts BuiltTree). */
  dirs: Map<string, string>;
}

/** `current` as read: the manifest and its ETag, both null before the first publication. */
export interface ManifestRead {
  manifest: Manifest | null;
  etag: string | null;
}

export async function readManifest(store: ObjectStore): Promise<ManifestRead> {
  const object = await readCurrentObject(store);
  if (object === null) return { manifest: null, etag: null };
  return { manifest: parseManifest(object.body), etag: object.etag };
}

/** `current` as stored, unparsed (null when absent); a failed read answers its token. */
export async function readCurrentObject(store: ObjectStore): Promise<StoredObject | null> {
  return (await readCurrentIfChanged(store, null)) as StoredObject | null;
}

/**
 * `current` as stored, or "unchanged" when its ETag is still `etag` (the
 * store's conditional read: one request and no body, for a reader that
 * watches it); `get` when there is no `etag` to hold. Fails as
 * readCurrentObject does.
 */
export async function readCurrentIfChanged(store: ObjectStore, etag: string | null): Promise<ConditionalRead> {
  try {
    return etag === null ? await store.get(MANIFEST_KEY) : await store.getIfNoneMatch(MANIFEST_KEY, etag);
  } catch (cause) {
    if (damaged(cause)) {
      throw new DomainError("MANIFEST_INVALID", "The store is damaged where it keeps the notebook's manifest; an operator must inspect it.", { cause });
    }
    throw new DomainError("MANIFEST_READ", "The notebook's manifest could not be read from the store.", { cause });
  }
}

/**
 * A fence: rewrite `current` with the same state and a fresh publication id
 * (and other pack lists, when given: a compaction's), conditional on
 * `etag`. Generation and head are unchanged, so for readers nothing
 * happens, while every writer that read `current` before loses its
 * conditional write. `written` is false when the write lost or its outcome
 * is unknown (the caller reads back what it needs to prove, by
 * `manifest.publication`); a definite failure throws, for the caller to
 * name. `committed`: where the store can say when the write is visible
 * (object-store.ts `putWith`), called then — a turn ends before the flush.
 */
export async function rewriteCurrent(
  store: ObjectStore,
  manifest: Manifest,
  etag: string,
  randomId: RandomSource["randomId"],
  lists: { packs: PackDescriptor[]; history?: HistoryPackDescriptor[] } | null = null,
  committed?: () => void,
): Promise<{ written: boolean; publication: string; manifest: Manifest; etag: string | null }> {
  const fenced: Manifest = {
    ...manifest,
    publication: newPublicationId(randomId),
    ...(lists !== null ? { packs: lists.packs } : {}),
    ...(lists?.history !== undefined ? { history: lists.history, format: formatFor(lists.history, manifest.combined, manifest.notebook) } : {}),
  };
  const body = serializeManifest(fenced);
  try {
    const put = committed !== undefined && store.putWith ? await store.putWith([], MANIFEST_KEY, body, etag, committed) : await store.putIfMatch(MANIFEST_KEY, body, etag);
    if (put.ok) return { written: true, publication: fenced.publication, manifest: fenced, etag: put.etag };
  } catch (cause) {
    if (!(cause instanceof StoreError) || cause.outcome !== "unknown") throw cause;
  }
  return { written: false, publication: fenced.publication, manifest: fenced, etag: null };
}

/*
 * The accepted state this process last saw of each store (read, or
 * published by its own commit), with the ETag of `current` then, is in its
 * process memory (ProcessMemory.acceptedStates): a commit from a checkout
 * still at that state can build on it and publish with `If-Match` on that
 * ETag without reading `current` first — the conditional write itself says
 * whether it is still current (attempt.ts, "guessing").
 */

/** The process memory of the accepted state of each store (process-memory.ts), by store identity. */
export interface AcceptedMemory {
  acceptedStates: RecentMap<string, AcceptedState>;
}

/** A copy whose maps the caller may not change and the remembered one cannot. */
function copyOf(state: AcceptedState): AcceptedState {
  return { ...state, files: new Map(state.files), trees: new Set(state.trees), dirs: new Map(state.dirs) };
}

export function rememberAccepted(memory: AcceptedMemory, storeId: string, state: AcceptedState): void {
  if (state.manifest === null || state.etag === null) return;
  memory.acceptedStates.set(storeId, copyOf(state));
}

/** The state last seen of `storeId` if its head is `head` and this cache holds all its packs; else null. */
export function lastAccepted(memory: AcceptedMemory, storeId: string, head: string | null, git: ObjectCache): AcceptedState | null {
  const state = memory.acceptedStates.get(storeId);
  if (!state || state.head === null || state.head !== head || !state.manifest) return null;
  if (!state.manifest.packs.every((p) => git.hasPack(p.sha256))) return null;
  return copyOf(state);
}

/** How many times a read starts over when packs vanish under a newer manifest. */
const REREADS = 3;

/**
 * The accepted state: `current` as `read` holds it (a read just made, such as
 * the one that proved a lost race) or as read now, its packs and its tree.
 */
export async function loadAcceptedState(
  store: ObjectStore,
  git: ObjectCache,
  read?: { manifest: Manifest | null; etag: string | null },
): Promise<AcceptedState> {
  let { manifest, etag } = read ?? (await readManifest(store));
  for (let reread = 0; ; reread++) {
    if (manifest === null) {
      return { manifest: null, etag: null, generation: 0, head: null, tree: null, files: new Map(), trees: new Set(), dirs: new Map() };
    }
    try {
      await fetchPacks(store, git, manifest.packs, "the accepted state");
      break;
    } catch (e) {
      // A pack listed by the manifest we read may have been compacted away and
      // collected since (gc): a newer manifest no longer names it. Only a pack
      // missing under the current manifest means the store is damaged.
      if (!(e instanceof PackMissing) || reread >= REREADS) throw e instanceof PackMissing ? e.invalid : e;
      const again = await readManifest(store);
      if (again.etag === etag) throw e.invalid;
      ({ manifest, etag } = again);
    }
  }
  return loadTree(store, git, manifest, etag);
}

async function loadTree(store: ObjectStore, git: ObjectCache, manifest: Manifest, etag: string | null): Promise<AcceptedState> {
  const readHead = async () => {
    const tree = await git.commitTree(manifest.head);
    const read = await git.readFlatTree(tree);
    return { manifest, etag, generation: manifest.generation, head: manifest.head, tree, files: read.files, trees: read.trees, dirs: read.dirs };
  };
  try {
    return await readHead();
  } catch (first) {
    if (!(first instanceof MissingObjectError)) throw first;
  }
  // The local cache may be what is broken, not the store: download the
  // accepted packs again before blaming the history.
  await git.dropPacks();
  try {
    await fetchPacks(store, git, manifest.packs, "the accepted state");
  } catch (e) {
    throw e instanceof PackMissing ? e.invalid : e;
  }
  try {
    return await readHead();
  } catch (cause) {
    if (cause instanceof MissingObjectError) {
      throw new DomainError("HISTORY_INVALID", "The accepted history is missing an object; an operator must inspect the store.", {
        cause,
      });
    }
    throw cause;
  }
}

/**
 * Download and import the listed packs the cache lacks, checked against
 * their descriptors; `of` names what they hold in the errors ("the accepted
 * state", "the notebook's history"). A listed pack absent from the store is
 * PackMissing, for the caller to re-read the manifest. Small packs — a
 * checkout behind by k publications downloads k of them — are imported
 * together, as one pack (object-cache.ts importPacks); a big one alone, as
 * it arrives.
 */
export async function fetchPacks(store: ObjectStore, git: ObjectCache, packs: readonly PackDescriptor[], of: string): Promise<void> {
  const missing = packs.filter((p) => !git.hasPack(p.sha256));
  // Bounded parallelism: enough to hide latency (a cold pull after a long
  // history fetches a base and up to 31 small packs), few enough for small
  // machines; only one pack, the base, can be large.
  const queue = [...missing];
  const budget = new ByteBudget(FETCH_BYTES);
  const union = new UnionImport(git, of, missing.length > 1);
  const worker = async () => {
    for (let p = queue.shift(); p; p = queue.shift()) {
      await budget.take(p.size);
      try {
        // Downloaded ahead while the server was idle (engine/fetch-ahead.ts), and checked then.
        await union.add(p, git.takeHeld(p.sha256) ?? (await downloadPack(store, p, of)));
      } finally {
        budget.give(p.size);
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(8, missing.length) }, worker));
  await union.flush();
}

/**
 * The bytes of packs downloaded at once, beyond the first: a pack is in
 * memory whole while it is checked and imported (and the embedded store
 * copies it once more), so eight big ones at once would hold several
 * hundred megabytes (a big notebook's base pack beside its history packs).
 */
const FETCH_BYTES = 32 * 2 ** 20;

/** A pack up to this size is imported with the others (UnionImport); the small packs held for that are imported once they reach it together. */
const UNITE_BYTES = 2 ** 20;

/** The small downloaded packs of one fetch, held and imported together; a big one, or the only one, is imported at once. */
class UnionImport {
  private held: NamedPack[] = [];
  private bytes = 0;

  constructor(
    private readonly git: ObjectCache,
    private readonly of: string,
    private readonly several: boolean,
  ) {}

  async add(p: PackDescriptor, body: Uint8Array): Promise<void> {
    if (!this.several || body.byteLength > UNITE_BYTES) {
      await importPacks(this.git, [{ name: p.sha256, bytes: body }], this.of);
      // In the cache now, and ours alone (downloaded, or taken from those held): a big one is freed at once.
      release(body);
      return;
    }
    this.held.push({ name: p.sha256, bytes: body });
    this.bytes += body.byteLength;
    if (this.bytes > UNITE_BYTES) await this.flush();
  }

  async flush(): Promise<void> {
    const held = this.held;
    this.held = [];
    this.bytes = 0;
    if (held.length > 0) await importPacks(this.git, held, this.of);
  }
}

/** Download one listed pack and check it against its descriptor (fetchPacks). */
export async function downloadPack(store: ObjectStore, p: PackDescriptor, of: string): Promise<Uint8Array> {
  let object;
  try {
    object = await store.get(p.key);
  } catch (cause) {
    if (damaged(cause)) {
      throw new DomainError("PACK_INVALID", `The store is damaged where it keeps a pack of ${of}; an operator must inspect it.`, { cause });
    }
    throw new DomainError("PACK_DOWNLOAD", `A pack of ${of} could not be downloaded.`, { cause });
  }
  if (object === null) {
    throw new PackMissing(
      new DomainError("PACK_INVALID", "A pack named by the manifest is missing from the store; an operator must inspect it."),
    );
  }
  const digest = createHash("sha256").update(object.body).digest("hex");
  if (object.body.byteLength !== p.size || digest !== p.sha256) {
    throw new DomainError("PACK_INVALID", "A pack contradicts its descriptor in the manifest; an operator must inspect the store.");
  }
  return object.body;
}

/** Import downloaded packs, together (object-cache.ts importPacks); one git cannot index is PACK_INVALID. */
export async function importPacks(git: ObjectCache, packs: NamedPack[], of: string): Promise<void> {
  try {
    await git.importPacks(packs);
  } catch (cause) {
    if (cause instanceof BadPackError) {
      throw new DomainError("PACK_INVALID", `A pack of ${of} failed import; an operator must inspect the store.`, {
        cause,
      });
    }
    throw cause;
  }
}

/** A read that found the store itself damaged (object-store.ts StoreFault): no retry reads it whole. */
function damaged(cause: unknown): boolean {
  return cause instanceof StoreError && (cause.fault === "damaged" || cause.fault === "not-a-database");
}

/** A listed pack is absent; `invalid` is the error to report if a re-read does not explain it. */
export class PackMissing extends Error {
  override readonly name = "PackMissing";
  constructor(readonly invalid: DomainError) {
    super("pack missing");
  }
}
