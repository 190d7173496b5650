/**
 * One publication attempt (docs/storage-protocol.md, "The commit
 * sequence"): build our commit and one pack of what the accepted state
 * lacks, upload it, choose the pack list (compacting it when long), record
 * the publication, and replace `current` with one conditional write —
 * proving the outcome by reading `current` back when the answer is lost.
 */
import { DomainError } from "../../contract/errors.ts";
import { type ObjectStore, StoreError } from "../../store/object-store.ts";
import type { PublicationRecord } from "../checkout/state.ts";
import type { BuiltTree, FlatTree, ObjectCache } from "../git/object-cache.ts";
import type { WrittenPack } from "../git/pack-file.ts";
import { collectDropped } from "../memory/garbage.ts";
import { release } from "../memory/release.ts";
import { type AcceptedState, readManifest } from "./accepted-state.ts";
import { type Carried, dropProposal } from "./combine.ts";
import { compactPacks, DEFAULT_COMPACTION, needsCompaction } from "./compact.ts";
import { type CombinedPublication, combinedList, formatFor, type HistoryPackDescriptor, MANIFEST_KEY, type Manifest, newNotebookId, newPublicationId, type PackDescriptor, packDescriptor, serializeManifest } from "./manifest.ts";
import type { Publisher } from "./publisher.ts";
import type { Turn } from "./turn.ts";

/** `current` as read: the manifest (null when absent) and its ETag. */
export type Current = Awaited<ReturnType<typeof readManifest>>;

/** The new commit and its pack, built and uploaded. */
export interface Uploaded {
  head: string;
  built: BuiltTree;
  /** The pack that holds the commit: the publication's own, last in its list (the outcome proof looks for it). */
  pack: Uint8Array;
  /** Its index, as its writer made it (null: isomorphic-git packed it), for importing it without inflating every entry again. */
  idx: Buffer | null;
  descriptor: PackDescriptor;
  /**
   * The packs of blobs uploaded before it, when the publication was too big
   * for one (Publisher.packBytes): listed just before it, already in the
   * object cache. Empty for a proposal, which names one pack.
   */
  leading: PackDescriptor[];
  /** The pack, when the store writes it together with `current` (object-store.ts `putWith`) rather than uploaded first. */
  along: Array<{ key: string; body: Uint8Array }> | null;
}

/** What a lost publication attempt had prepared: enough to offer it as a proposal. */
export interface LostAttempt {
  uploaded: Uploaded;
  /** Its publication record: the publication id it tried to write, its pack, commit and merged-in paths. */
  record: PublicationRecord;
  /** The tree it published: ours, on top of the proposals it carried, if any. */
  merged: FlatTree;
}

/** What a write landed: our commit (and the proposals it carried) as `manifest`, on `parent`. */
export interface Landed {
  landed: true;
  uploaded: Uploaded;
  manifest: Manifest;
  /** The ETag it left, when `current` is still ours; null when others published since. */
  etag: string | null;
  /** The state the publication was built on: the accepted state, with the proposals it carried. */
  parent: AcceptedState;
  /** Where our own proposal landed, when the write published it (it was among those carried). */
  ownAt: CombinedPublication | null;
}

/** A write another publication beat: `current` as read back, and what was prepared (to offer it). */
export interface Lost {
  landed: false;
  current: Current;
  attempt: LostAttempt | null;
}

/**
 * One publication attempt on top of `accepted`, with the proposals `carried`
 * moved onto it (then `merged`, this commit's own tree, on top of them;
 * null when this commit's proposal is itself among them, `ownPublication`
 * its publication id): build and upload the pack, choose the pack list
 * (compacting it when long), record the publication, and replace `current`
 * conditionally. What landed; or, when another publication won, `current`
 * as read back and what was prepared.
 */
export async function writeAttempt(
  p: Publisher,
  accepted: AcceptedState,
  carried: Carried | null,
  merged: FlatTree | null,
  message: string,
  turn: Turn,
  ownPublication: string | null,
): Promise<Landed | Lost> {
  const parent = carried?.state ?? accepted;
  const uploaded = await buildAndUpload(p, accepted, parent, merged, message, carried?.objects ?? []);
  const manifest = await nextManifest(p, accepted, parent, uploaded, carried, merged === null);
  await p.onStage("publish");
  // Should this process die once the write is sent, the next call learns
  // from this record whether it landed (publication.ts). A commit whose
  // proposal is posted keeps the proposal's record: it lands as `combined` says.
  const record: PublicationRecord | null =
    merged === null
      ? null
      : { publication: manifest.publication, pack: { key: uploaded.descriptor.key, sha256: uploaded.descriptor.sha256 }, generation: manifest.generation, head: uploaded.head, merged: mergedIn(p.local, merged) };
  if (record !== null) p.state.recordPublication(p.baseline, record);
  // A call stopped and taken over since it read `current` publishes nothing (checkout/lock.ts).
  p.state.checkLock();
  // The turn ends as soon as the write is visible to the other writers,
  // before the store flushes it (sqlite.ts): the next turn overlaps that flush.
  const written = await conditionalReplace(p.store, accepted, manifest, uploaded.along, () => turn.end());
  if (!written.landed) return { landed: false, current: written.current, attempt: merged !== null && record !== null ? { uploaded, record, merged } : null };
  if (carried !== null) dropCombined(p.store, carried);
  let ownAt: CombinedPublication | null = null;
  if (ownPublication !== null) {
    // The commits it moved exist only in this call's memory and our pack.
    await importOwnPack(p.git, uploaded).catch(() => {});
    ownAt = carried!.combined.find((c) => c.publication === ownPublication)!;
  }
  return { landed: true, uploaded, manifest, etag: written.etag, parent, ownAt };
}

/**
 * A lost attempt that carried others' proposals, made offerable: its commit
 * was built on those proposals, which may never land, so a combiner moving
 * it (base = its parent) would take their changes for ours, and where the
 * state lacks them merge them back in — under a union, line for line. What
 * is offered is our own commit alone: the tree `alone` (our merge onto
 * `accepted`) on `accepted`, in a pack of its own, under the same
 * publication id.
 */
export async function aloneOnAccepted(p: Publisher, accepted: AcceptedState, lost: LostAttempt, alone: FlatTree, message: string): Promise<LostAttempt> {
  const made = await preparedAlone(p, accepted, alone, message);
  return { ...made, record: { ...made.record, publication: lost.record.publication, generation: lost.record.generation } };
}

/**
 * Our commit alone — the tree `alone` on `accepted` — in a pack of its own,
 * uploaded, with a publication record under a new publication id: what a
 * writer waiting in the store's line offers before its turn (group commit),
 * nothing having been written yet.
 */
export async function preparedAlone(p: Publisher, accepted: AcceptedState, alone: FlatTree, message: string): Promise<LostAttempt> {
  const uploaded = await buildAndUpload(p, accepted, accepted, alone, message, [], false);
  const record: PublicationRecord = {
    publication: newPublicationId(p.randomId),
    pack: { key: uploaded.descriptor.key, sha256: uploaded.descriptor.sha256 },
    generation: accepted.generation + 1,
    head: uploaded.head,
    merged: mergedIn(p.local, alone),
  };
  return { uploaded, record, merged: alone };
}

/** The manifest to write: the pack list (compacted when long), the combined list, the notebook id, a new publication id. */
async function nextManifest(p: Publisher, accepted: AcceptedState, parent: AcceptedState, uploaded: Uploaded, carried: Carried | null, carriedOnly: boolean): Promise<Manifest> {
  const { packs, history } = await packList(p, accepted, uploaded);
  const generation = parent.generation + (carriedOnly ? 0 : 1);
  const combined = combinedList(accepted.manifest, generation, carried?.combined ?? []);
  // Minted with generation 1, and by this version's first commit to a store that has none.
  const notebook = accepted.manifest?.notebook ?? newNotebookId(p.randomId);
  return {
    format: formatFor(history, combined, notebook),
    notebook,
    generation,
    head: uploaded.head,
    publication: newPublicationId(p.randomId),
    packs,
    ...(history.length > 0 ? { history } : {}),
    ...(combined.length > 0 ? { combined } : {}),
  };
}

/** Proposals a landed publication combined are litter now: delete them (gc would, later). */
function dropCombined(store: ObjectStore, carried: Carried): void {
  for (const c of carried.combined) dropProposal(store, c.publication);
}

/**
 * Our commit on `parent` (none when `merged` is null: the last carried
 * proposal's commit is the head), and one pack of everything `accepted` lacks: the carried
 * objects, then ours.
 */
async function buildAndUpload(
  p: Publisher,
  accepted: AcceptedState,
  parent: AcceptedState,
  merged: FlatTree | null,
  message: string,
  chainObjects: string[],
  split = true,
): Promise<Uploaded> {
  const { git } = p;
  await p.onStage("pack");
  const newObjects = new Set(chainObjects);
  // Our new blobs come first, so that a big publication's leading packs hold only blobs.
  const newBlobs = new Set<string>();
  let head = parent.head!;
  let built: BuiltTree = { tree: parent.tree!, trees: parent.trees, dirs: parent.dirs };
  if (merged !== null) {
    // Only the directories that differ from the parent's tree are built.
    const { tree, files, trees, dirs } = parent;
    built = await git.writeFlatTree(merged, tree === null ? undefined : { tree, files, trees, dirs });
    // The base generation is the baseline's, whatever state this attempt
    // builds on: what the agent had seen when it committed (objects.ts).
    head = await git.writeCommit({ tree: built.tree, parent: parent.head, message, when: p.now(), agent: p.agent(), base: p.baseline.generation });
    newObjects.add(head);
    for (const t of built.trees) if (!accepted.trees.has(t)) newObjects.add(t);
    const known = new Set(accepted.files.values());
    for (const oid of new Set(merged.values())) if (!known.has(oid) && !newObjects.has(oid)) newBlobs.add(oid);
  }
  // A publication bigger than Publisher.packBytes goes into several packs,
  // each uploaded and imported as soon as it is made: a notebook's first
  // commit is never in memory whole, nor copied whole by the embedded store.
  const leading: PackDescriptor[] = [];
  const part = async ({ pack: bytes, idx }: WrittenPack) => {
    const descriptor = packDescriptor(bytes);
    // The embedded store copies a pack twice to write it: the packing's dead buffers go first.
    collectDropped();
    await upload(p.store, descriptor, bytes);
    // In the cache at once, so the next call downloads none of them; a lost race leaves a pack no accepted state needs.
    await git.importPack(descriptor.sha256, bytes, idx);
    leading.push(descriptor);
    // Uploaded (the store has its own copy) and in the cache: freed now, not
    // whenever the collector finds no stale pointer to it on the stack.
    release(bytes);
  };
  const oids = [...newBlobs, ...newObjects];
  const { pack, idx } = await git.packObjects(oids, split ? { leading: newBlobs.size, bytes: p.packBytes, part } : undefined);
  const descriptor = packDescriptor(pack);

  await p.onStage("upload");
  // Where the store writes the pack and `current` in one step, it does: one
  // flush to disk in the turn instead of two, and a lost race leaves no orphan.
  if (p.store.putWith) return { head, built, pack, idx, descriptor, leading, along: [{ key: descriptor.key, body: pack }] };
  await upload(p.store, descriptor, pack);
  return { head, built, pack, idx, descriptor, leading, along: null };
}

async function upload(store: ObjectStore, descriptor: PackDescriptor, pack: Uint8Array): Promise<void> {
  try {
    // Create-only: an existing key holds these very bytes (content-addressed).
    await store.putIfAbsent(descriptor.key, pack);
  } catch (cause) {
    throw new DomainError("PACK_UPLOAD", "The new pack could not be uploaded; nothing was published.", { cause });
  }
}

/**
 * Our pack goes into the cache only once it is accepted (landedOutcome),
 * keeping the window between reading and replacing `current` short —
 * except that compaction reads every listed pack from the cache, ours
 * included.
 */
export async function importOwnPack(git: ObjectCache, uploaded: Uploaded): Promise<void> {
  if (!git.hasPack(uploaded.descriptor.sha256)) await git.importPack(uploaded.descriptor.sha256, uploaded.pack, uploaded.idx);
}

/**
 * The accepted packs plus ours, compacted when the list grows past the
 * policy's bound (compact.ts); and the history packs, carried over from the
 * accepted manifest, which only a compaction changes.
 */
async function packList(
  p: Publisher,
  accepted: AcceptedState,
  uploaded: Uploaded,
): Promise<{ packs: PackDescriptor[]; history: HistoryPackDescriptor[] }> {
  const packs: PackDescriptor[] = [...(accepted.manifest?.packs ?? []), ...uploaded.leading, uploaded.descriptor];
  const history = [...(accepted.manifest?.history ?? [])];
  const policy = p.compaction;
  if (policy === false || !needsCompaction(packs, { ...DEFAULT_COMPACTION, ...policy })) return { packs, history };
  // Keep the pack count, and so a cold pull, bounded. Our own pack stays
  // last, which the outcome proof (conditionalReplace) relies on.
  await p.onStage("compact");
  await importOwnPack(p.git, uploaded);
  try {
    const compacted = await compactPacks({ store: p.store, git: p.git, head: uploaded.head, packs, policy, history, now: p.now(), randomId: p.randomId });
    return compacted === null ? { packs, history } : { packs: compacted.packs, history: compacted.history };
  } catch {
    // Compaction is an optimisation: publish the plain list instead.
    return { packs, history };
  }
}

/** Where `published` differs from the visible files `local`: each path with what the visible file holds (null = absent). */
function mergedIn(local: FlatTree, published: FlatTree): Array<{ path: string; oid: string | null }> {
  const merged: Array<{ path: string; oid: string | null }> = [];
  for (const [path, oid] of published) if (local.get(path) !== oid) merged.push({ path, oid: local.get(path) ?? null });
  for (const [path, oid] of local) if (!published.has(path)) merged.push({ path, oid });
  return merged;
}

/**
 * The first publication into an embedded store whose file is gone: the
 * store holds no notebook, and a running process does not make its file
 * anew (an agent would publish into a file nobody else sees), so it is
 * refused as a store that went backwards is.
 */
function storeGone(cause: StoreError): DomainError {
  return new DomainError(
    "HISTORY_INVALID",
    "The store went backwards: its file is gone, and the store holds no notebook. It may have been deleted or moved away; it is not made anew under a running server. Nothing was published. " +
      "An operator puts the right store back, or starts the server again to begin a new notebook there.",
    { cause },
  );
}

/**
 * One conditional write of `current`: whether our manifest was accepted, with
 * the ETag it left (null when others published since), or else `current` as
 * read back, which the next attempt builds on. When the response is lost or
 * ambiguous, read `current` back and prove the outcome
 * (docs/decisions/0008-unknown-outcomes-are-proved.md). Every later manifest
 * keeps our pack, so its presence proves we landed even after others
 * published.
 */
async function conditionalReplace(
  store: ObjectStore,
  accepted: AcceptedState,
  manifest: Manifest,
  along: Array<{ key: string; body: Uint8Array }> | null,
  committed: () => void,
): Promise<{ landed: true; etag: string | null } | { landed: false; current: Current }> {
  const body = serializeManifest(manifest);
  try {
    const result =
      along !== null && store.putWith
        ? await store.putWith(along, MANIFEST_KEY, body, accepted.etag, committed)
        : accepted.etag === null
          ? await store.putIfAbsent(MANIFEST_KEY, body)
          : await store.putIfMatch(MANIFEST_KEY, body, accepted.etag);
    if (result.ok) return { landed: true, etag: result.etag };
  } catch (cause) {
    if (cause instanceof StoreError && cause.fault === "gone") throw storeGone(cause);
    if (!(cause instanceof StoreError) || cause.outcome !== "unknown") {
      throw new DomainError("MANIFEST_WRITE", "The manifest write failed; nothing was published.", { cause });
    }
  }
  // Lost, or unknown: does `current` carry our publication? A lost response
  // to a write that landed, or an SDK retry that saw its own write as a
  // conflict, both show up here as success.
  let now;
  try {
    now = await readManifest(store);
  } catch (cause) {
    throw new DomainError(
      "PUBLICATION_UNPROVEN",
      "The store did not confirm the publication and it could not be proved either way; pull first and look before committing again.",
      { cause },
    );
  }
  const ownPack = manifest.packs[manifest.packs.length - 1]!.key;
  if (now.manifest?.publication === manifest.publication) return { landed: true, etag: now.etag };
  // Landed, and others published since: their ETag is not ours to remember.
  if (now.manifest?.packs.some((p) => p.key === ownPack)) return { landed: true, etag: null };
  return { landed: false, current: now };
}
