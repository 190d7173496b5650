/**
 * Compaction: keep the number of packs a manifest lists — and so the number
 * of downloads a cold pull makes — bounded, whatever the history's length.
 *
 * When a manifest would list more than `maxPacks` packs, the newest
 * `keepRecent` packs stay as they are and every other pack is replaced by one
 * new "base" pack holding every object reachable from the head (commits,
 * trees, blobs of the newest `history` commits: 32 by default, or the whole
 * history), minus the objects the kept packs already hold. The base is
 * uploaded create-only under its content address, like every pack; the
 * caller then publishes `[base, ...kept]` with its usual conditional write.
 *
 * Designed to be called by a commit between its upload and its conditional
 * write (packs = the accepted packs plus its own new pack, head = its new
 * commit), or by `slivingdoc gc` on the accepted state. Either way:
 *
 * - Nothing reachable is lost: by induction every accepted tree is covered
 *   by the previous tree plus the pack published with it, so the head's
 *   objects are in the base or in a kept pack. Objects no longer listed stay
 *   in the store until gc removes the replaced packs (gc.ts), so a reader
 *   still holding the previous manifest can finish.
 * - Why keep the newest packs: a committer whose conditional write had an
 *   unknown outcome proves it landed by finding its pack in `current`
 *   (commit.ts); keeping the newest packs keeps that proof working for the
 *   last `keepRecent` publications. Warm checkouts also hold those already.
 * - Why the base carries a nonce object: packs are content-addressed, and a
 *   base built again from the same state would have the same bytes — and so
 *   the same key — as an orphan an earlier attempt left behind. An upload
 *   answered "already exists" could then be an old orphan that gc is about
 *   to delete, and a manifest naming it would break every reader (see the
 *   protocol in gc.ts). A random, unreferenced blob makes every base unique,
 *   so its upload must create the key, or the attempt fails.
 * - A losing compaction costs nothing but its upload: the base is an orphan
 *   that gc removes after the grace period.
 */
import { createHash } from "node:crypto";
import * as fs from "node:fs";
import { join } from "node:path";
import { deflateSync, inflateSync } from "node:zlib";
import { randomHex } from "../contract/random-hex.ts";
import type { ObjectStore } from "../store/object-store.ts";
import { type ObjectCache, MissingObjectError } from "./git/object-cache.ts";
import { PACK_TYPES, PackReader, packEntry, writePack } from "./git/pack-reader.ts";
import { type PackDescriptor, packKey } from "./manifest.ts";

export interface CompactionPolicy {
  /** Compact when the pack list is longer than this. */
  maxPacks: number;
  /** The newest packs kept as they are. */
  keepRecent: number;
  /**
   * Commits of history the base keeps, counted from the head ("all": every
   * commit). A shorter history makes a cold pull's bytes independent of the
   * history's length; the oldest kept commit then names a parent that is no
   * longer stored (a shallow boundary, as in `git clone --depth`), which
   * nothing in the engine reads.
   */
  history: number | "all";
}

/**
 * History is "recent" (docs/design.md, The store and the publication
 * protocol): the newest 32 commits survive a compaction, so a cold pull's
 * bytes do not grow with the history's length (S5 in docs/performance.md: the
 * whole history of 1,000 small commits made a cold pull 1.35× slower than
 * after one commit; 32 commits, 1.14×).
 */
export const DEFAULT_COMPACTION: CompactionPolicy = { maxPacks: 32, keepRecent: 8, history: 32 };

export interface CompactionResult {
  /** The pack list for the next manifest: the base (if any objects remain for it), then the kept packs. */
  packs: PackDescriptor[];
  /** The new pack, or null when the kept packs already hold every object. */
  base: PackDescriptor | null;
  /** The packs no longer listed (gc removes them after the grace period). */
  replaced: PackDescriptor[];
  /** Objects in the base, nonce included. */
  objects: number;
}

export function needsCompaction(packs: readonly PackDescriptor[], policy: CompactionPolicy = DEFAULT_COMPACTION): boolean {
  return packs.length > policy.maxPacks;
}

export interface CompactArgs {
  store: ObjectStore;
  /** The object cache; every listed pack must have been imported into it (a commit's fetch does that). */
  git: ObjectCache;
  /** The commit the next manifest will name as its head. */
  head: string;
  /** The pack list the next manifest would carry without compaction, oldest first. */
  packs: readonly PackDescriptor[];
  policy?: Partial<CompactionPolicy>;
  /** Import the base into the local cache (so this checkout never downloads it). Default true. */
  importLocally?: boolean;
}

/**
 * Build, upload and import the base pack; null when the list is within the
 * bound. Throws `MissingObjectError` when the cache lacks an object the
 * head needs, and the store's error when the upload fails; in both cases
 * nothing was published and the caller can publish without compacting.
 */
export async function compactPacks(args: CompactArgs): Promise<CompactionResult | null> {
  const policy = { ...DEFAULT_COMPACTION, ...args.policy };
  if (!Number.isInteger(policy.maxPacks) || policy.maxPacks < 1) throw new RangeError("maxPacks must be a positive integer");
  if (!Number.isInteger(policy.keepRecent) || policy.keepRecent < 0 || policy.keepRecent >= policy.maxPacks) {
    throw new RangeError("keepRecent must be a whole number below maxPacks");
  }
  if (policy.history !== "all" && (!Number.isInteger(policy.history) || policy.history < 1)) {
    throw new RangeError("history must be a positive integer or \"all\"");
  }
  if (!needsCompaction(args.packs, policy)) return null;

  const kept = policy.keepRecent === 0 ? [] : args.packs.slice(-policy.keepRecent);
  const replaced = args.packs.slice(0, args.packs.length - kept.length);
  const inKept = new Set<string>();
  for (const p of kept) for (const oid of packObjectIds(args.git, p.sha256)) inKept.add(oid);

  const reader = new ObjectReader(args.git);
  let bytes: Uint8Array;
  let objects: number;
  try {
    const reachable = await reachableObjects(reader, args.head, policy.history);
    const baseObjects = [...reachable].filter((oid) => !inKept.has(oid));
    if (baseObjects.length === 0) return { packs: [...kept], base: null, replaced, objects: 0 };
    // The nonce (see the header): unreferenced, so the next compaction drops it.
    const nonce = randomHex(16);
    const entries = [packEntry("blob", Buffer.from(`slivingdoc compaction nonce ${nonce}\n`))];
    for (const oid of baseObjects) {
      const entry = await reader.entry(oid);
      if (entry === null) throw new MissingObjectError(`object ${oid} of the head is missing`);
      entries.push(entry);
    }
    bytes = writePack(entries);
    objects = entries.length;
  } finally {
    reader.close();
  }
  const sha256 = createHash("sha256").update(bytes).digest("hex");
  const base: PackDescriptor = { key: packKey(sha256), size: bytes.byteLength, sha256 };
  const put = await args.store.putIfAbsent(base.key, bytes);
  if (!put.ok) {
    // A unique pack's key cannot exist unless this very request landed
    // twice; either way its age is unknown, so it must not be referenced.
    throw new Error("the compacted pack's key already existed; not publishing it");
  }
  if (args.importLocally !== false && !args.git.hasPack(sha256)) await args.git.importPack(sha256, bytes);
  return { packs: [base, ...kept], base, replaced, objects };
}

/**
 * The object ids a pack holds, from its index in the cache (pack index
 * version 2: magic, version, 256 fan-out entries, then the sorted ids).
 * https://git-scm.com/docs/pack-format#_version_2_pack_idx_files_support_packs_larger_than_4_gib_and
 */
export function packObjectIds(store: ObjectCache, sha256: string): string[] {
  const file = join(store.gitdir, "objects", "pack", `pack-${sha256}.idx`);
  let idx: Buffer;
  try {
    idx = fs.readFileSync(file);
  } catch (cause) {
    throw new MissingObjectError(`pack ${sha256} was never imported into this cache`, { cause });
  }
  if (idx.length < 8 + 256 * 4 || idx.readUInt32BE(0) !== 0xff744f63 || idx.readUInt32BE(4) !== 2) {
    throw new MissingObjectError(`pack index ${sha256} is not a version 2 index`);
  }
  const count = idx.readUInt32BE(8 + 255 * 4);
  const start = 8 + 256 * 4;
  if (idx.length < start + count * 20) throw new MissingObjectError(`pack index ${sha256} is truncated`);
  const ids: string[] = [];
  for (let i = 0; i < count; i++) ids.push(idx.toString("hex", start + i * 20, start + (i + 1) * 20));
  return ids;
}

/**
 * Object reads for compaction: the cache's packs and loose objects through
 * PackReader, anything else (a deltified entry) through ObjectCache's public
 * API, as a pack of the one object whose single entry is undeltified.
 */
class ObjectReader {
  private readonly packs: PackReader;

  constructor(private readonly git: ObjectCache) {
    this.packs = new PackReader(git.gitdir);
  }

  close(): void {
    this.packs.close();
  }

  async read(oid: string): Promise<{ type: string; object: Buffer } | null> {
    return this.packs.read(oid) ?? this.throughObjectCache(oid);
  }

  /**
   * The object as a pack entry: an undeltified entry of a cached pack is
   * copied byte for byte (no inflating and deflating again); anything else
   * is read and deflated.
   */
  async entry(oid: string): Promise<Buffer | null> {
    const raw = this.packs.entry(oid);
    if (raw) return raw;
    const object = await this.read(oid);
    return object === null ? null : packEntry(object.type, object.object);
  }

  private async throughObjectCache(oid: string): Promise<{ type: string; object: Buffer } | null> {
    let pack: Uint8Array;
    try {
      pack = await this.git.packObjects([oid]);
    } catch (cause) {
      if ((cause as { code?: string }).code === "NotFoundError" || cause instanceof MissingObjectError) return null;
      throw cause;
    }
    // "PACK", version, object count (1), then the one undeltified entry, then the checksum.
    let i = 12;
    let byte = pack[i++]!;
    const type = PACK_TYPES[(byte >> 4) & 7] ?? "";
    while (byte & 0x80) byte = pack[i++]!;
    if (type === "") throw new MissingObjectError(`object ${oid} came back deltified or malformed`);
    return { type, object: inflateSync(pack.subarray(i, pack.length - 20)) };
  }
}

/**
 * Every object reachable from `head`: commits (following every parent, to
 * `history` commits deep), their trees and blobs. A parent missing from the
 * cache below the head is a shallow boundary left by an earlier compaction
 * with a shorter history, and ends the walk there; a missing head, tree or
 * blob is an error.
 */
async function reachableObjects(reader: ObjectReader, head: string, history: number | "all"): Promise<Set<string>> {
  const objects = new Set<string>();
  const walkTree = async (oid: string): Promise<void> => {
    if (objects.has(oid)) return; // a tree seen before: its whole subtree was walked
    const tree = await reader.read(oid);
    if (tree === null || tree.type !== "tree") throw new MissingObjectError(`tree ${oid} missing`);
    objects.add(oid);
    const buf = tree.object;
    let i = 0;
    while (i < buf.length) {
      const space = buf.indexOf(0x20, i);
      const nul = buf.indexOf(0, space);
      if (space < 0 || nul < 0 || nul + 21 > buf.length) throw new MissingObjectError(`tree ${oid} malformed`);
      const mode = buf.toString("latin1", i, space);
      const child = buf.toString("hex", nul + 1, nul + 21);
      i = nul + 21;
      if (mode === "40000") await walkTree(child);
      else objects.add(child);
    }
  };
  let frontier = [head];
  for (let depth = 0; frontier.length > 0 && (history === "all" || depth < history); depth++) {
    const next: string[] = [];
    for (const oid of frontier) {
      if (objects.has(oid)) continue;
      const commit = await reader.read(oid);
      if (commit === null) {
        if (depth === 0) throw new MissingObjectError(`head ${oid} missing`);
        continue; // shallow boundary
      }
      if (commit.type !== "commit") throw new MissingObjectError(`${oid} is not a commit`);
      objects.add(oid);
      const text = commit.object.toString("latin1");
      const headerEnd = text.indexOf("\n\n");
      for (const line of text.slice(0, headerEnd < 0 ? text.length : headerEnd).split("\n")) {
        if (line.startsWith("tree ")) await walkTree(line.slice(5));
        else if (line.startsWith("parent ")) next.push(line.slice(7));
      }
    }
    frontier = next;
  }
  // Blobs are checked when packed: packObjects fails on a missing one.
  return objects;
}
