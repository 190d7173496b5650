/**
 * Reading the retained history of a notebook, for the commands that show
 * who changed what and undo a mistake (docs/history.md): the publications
 * the store still holds, newest first, and the flat tree of any of them.
 *
 * History needs no checkout: it is read into a private object cache of its
 * own, one per store, `<privateRoot>/history/<id>/git`, which caches the
 * packs it downloaded (every pack the manifest lists, history packs
 * included: docs/storage-protocol.md, "History"). From a checkout, the same
 * cache is used: a checkout's own cache holds only what pulls need.
 *
 * The history is linear: every publication's commit names the accepted head
 * it was built on as its one parent, and every publication adds one to the
 * generation. (What its agent had seen may be older: the commit records
 * that generation too, its base generation.) So walking first parents back from the head, the commit at
 * depth d is generation `manifest.generation - d`. The walk ends at the
 * root commit (generation 1) or at the shallow boundary compaction leaves:
 * the oldest retained commit names a parent no pack holds.
 */
import { createHash } from "node:crypto";
import { join } from "node:path";
import type { RandomSource } from "../../contract/clock.ts";
import { DomainError } from "../../contract/errors.ts";
import type { ObjectStore } from "../../store/object-store.ts";
import { fetchPacks, PackMissing, readManifest } from "../publish/accepted-state.ts";
import { type FlatTree, ObjectCache } from "../git/object-cache.ts";
import { BASE_GENERATION_HEADER, MissingObjectError } from "../git/objects.ts";
import { type Manifest, type PackDescriptor } from "../publish/manifest.ts";
import type { ObjectMemory } from "../git/object-memory.ts";

/** One retained publication, as its commit records it. */
export interface Publication {
  generation: number;
  /** The commit id (never in an MCP result; the CLI's history commands only). */
  commit: string;
  /** The parent commit id; null for the first publication. It may not be retained (the shallow boundary). */
  parent: string | null;
  /** When it was published: the commit's author time, ISO 8601 in UTC, whole seconds. */
  time: string;
  /** Who published it: the commit author's name, the agent (contract/agent.ts); "slivingdoc" before identities were recorded. */
  agent: string;
  /** The commit message, byte for byte. */
  message: string;
  /** The notebook tree id. */
  tree: string;
  /**
   * The base generation: the generation the publishing checkout's baseline
   * had when its agent committed (git/objects.ts BASE_GENERATION_HEADER),
   * below this publication's own; null when the commit does not record it
   * (published before it was recorded).
   */
  base: number | null;
}

export interface History {
  /** null when the store holds no notebook yet. */
  manifest: Manifest | null;
  /** The ETag of the `current` it was read from (null: none): a reader that keeps the history open knows from it when it is out of date. */
  etag: string | null;
  /** Newest first; empty when the store holds no notebook. */
  publications: Publication[];
  /**
   * The parent the oldest retained publication names that no pack holds (a
   * shallow boundary, as after `git clone --depth`), or null when the
   * history reaches back to the first publication.
   */
  boundary: string | null;
  /** The object cache the history was read into: trees and blobs of every retained publication. */
  git: ObjectCache;
}

export interface HistoryDeps extends Pick<RandomSource, "randomId"> {
  store: ObjectStore;
  /** The store's identity (EngineDeps.storeId): which history cache to use. */
  storeId: string;
  privateRoot: string;
  memory: { objects: ObjectMemory };
}

/** The packs of a manifest that hold history: every listed pack, the pull's and the history's. */
export function historyPackList(manifest: Manifest): PackDescriptor[] {
  return [...manifest.packs, ...(manifest.history ?? []).map(({ key, size, sha256 }) => ({ key, size, sha256 }))];
}

/** The history cache of a store, under the private root. */
export function historyCacheDir(privateRoot: string, storeId: string): string {
  return join(privateRoot, "history", createHash("sha256").update(storeId).digest("hex").slice(0, 32), "git");
}

/**
 * Open the store's history: read `current`, download the packs the history
 * cache lacks, and read every retained publication. The caller closes
 * `history.git` when done (`closeHistory`).
 */
export async function openHistory(deps: HistoryDeps): Promise<History> {
  const git = await ObjectCache.open(historyCacheDir(deps.privateRoot, deps.storeId), deps.memory.objects, deps.randomId);
  try {
    for (let reread = 0; ; reread++) {
      const { manifest, etag } = await readManifest(deps.store);
      if (manifest === null) return { manifest: null, etag: null, publications: [], boundary: null, git };
      try {
        await fetchPacks(deps.store, git, historyPackList(manifest), "the notebook's history");
      } catch (e) {
        // A pack gone under a manifest that has moved on since: read again (accepted-state.ts).
        if (e instanceof PackMissing && reread < 3) {
          const again = await readManifest(deps.store);
          if (again.etag !== etag) continue;
        }
        throw e instanceof PackMissing ? e.invalid : e;
      }
      const { publications, boundary } = await readPublications(git, manifest);
      return { manifest, etag, publications, boundary, git };
    }
  } catch (e) {
    git.close();
    throw e;
  }
}

export function closeHistory(history: History): void {
  history.git.close();
}

/** `fn` over the store's history, opened for it and closed after (openHistory). */
export async function withHistory<T>(deps: HistoryDeps, fn: (history: History) => Promise<T>): Promise<T> {
  const history = await openHistory(deps);
  try {
    return await fn(history);
  } finally {
    closeHistory(history);
  }
}

/**
 * Every retained publication from `manifest`'s head, newest first, from a
 * cache that holds the manifest's packs. HISTORY_INVALID when the head or a
 * commit between it and the boundary cannot be read.
 */
export async function readPublications(git: ObjectCache, manifest: Manifest): Promise<{ publications: Publication[]; boundary: string | null }> {
  const publications: Publication[] = [];
  let oid: string | null = manifest.head;
  let generation = manifest.generation;
  while (oid !== null && generation >= 1) {
    const object = await git.find(oid);
    if (object === null) {
      if (publications.length === 0) {
        throw new DomainError("HISTORY_INVALID", "The accepted head is missing from the store's packs; an operator must inspect the store.");
      }
      return { publications, boundary: oid };
    }
    if (object.type !== "commit") throw new DomainError("HISTORY_INVALID", "The accepted history holds an object that is not a commit.");
    const publication = parseCommit(oid, generation, object.object);
    publications.push(publication);
    oid = publication.parent;
    generation--;
  }
  if (oid !== null) {
    // Generation 1 names a parent: the generations and the history disagree.
    throw new DomainError("HISTORY_INVALID", "The accepted history is longer than its generation says; an operator must inspect the store.");
  }
  return { publications, boundary: null };
}

/** A commit's fields as a publication; HISTORY_INVALID when it is not one slivingdoc could have written. */
export function parseCommit(oid: string, generation: number, object: Uint8Array): Publication {
  const buf = Buffer.from(object.buffer, object.byteOffset, object.byteLength);
  const end = buf.indexOf("\n\n");
  const header = buf.toString("utf8", 0, end < 0 ? buf.length : end);
  const message = end < 0 ? "" : buf.toString("utf8", end + 2);
  let tree: string | null = null;
  let parent: string | null = null;
  let author: { name: string; seconds: number } | null = null;
  let base: number | null = null;
  for (const line of header.split("\n")) {
    if (line.startsWith("tree ")) tree = line.slice(5);
    else if (line.startsWith("parent ") && parent === null) parent = line.slice(7);
    else if (line.startsWith(`${BASE_GENERATION_HEADER} `)) base = baseGeneration(line.slice(BASE_GENERATION_HEADER.length + 1), generation);
    else if (line.startsWith("author ")) {
      const m = /^author (.*) <[^<>]*> (\d+) [+-]\d{4}$/.exec(line);
      if (m) author = { name: m[1]!, seconds: Number(m[2]) };
    }
  }
  if (tree === null || !/^[0-9a-f]{40}$/.test(tree) || author === null || (parent !== null && !/^[0-9a-f]{40}$/.test(parent))) {
    throw new DomainError("HISTORY_INVALID", "A commit of the accepted history is malformed; an operator must inspect the store.");
  }
  return {
    generation,
    commit: oid,
    parent,
    time: new Date(author.seconds * 1000).toISOString().replace(/\.000Z$/, "Z"),
    agent: author.name,
    message,
    tree,
    base,
  };
}

/**
 * A recorded base generation, or null when it is not one this publication
 * could have been built on (a whole number below its own generation): the
 * record only informs, so a damaged one reads as unknown rather than
 * failing the history.
 */
function baseGeneration(value: string, generation: number): number | null {
  if (!/^(0|[1-9][0-9]{0,15})$/.test(value)) return null;
  const base = Number(value);
  return base < generation ? base : null;
}

/** The publication of `generation`; INVALID_REQUEST · MALFORMED_INPUT (naming the retained range) when it is not retained. */
export function publicationAt(history: History, generation: number): Publication {
  const newest = history.publications[0];
  const oldest = history.publications[history.publications.length - 1];
  if (newest === undefined || oldest === undefined) {
    throw new DomainError("MALFORMED_INPUT", `Generation ${generation} does not exist: the store holds no notebook yet.`);
  }
  if (!Number.isInteger(generation) || generation < oldest.generation || generation > newest.generation) {
    throw new DomainError(
      "MALFORMED_INPUT",
      generation > newest.generation
        ? `Generation ${generation} does not exist yet; the newest is ${newest.generation}.`
        : `Generation ${generation} is older than the retained history; the oldest retained generation is ${oldest.generation}.`,
    );
  }
  return history.publications[newest.generation - generation]!;
}

/** The flat tree (path → blob id) of a retained generation; its blobs are in `history.git`. */
export async function readGenerationTree(history: History, generation: number): Promise<FlatTree> {
  const publication = publicationAt(history, generation);
  try {
    return (await history.git.readFlatTree(publication.tree)).files;
  } catch (cause) {
    if (cause instanceof MissingObjectError) {
      throw new DomainError("HISTORY_INVALID", "A tree of the retained history is missing an object; an operator must inspect the store.", { cause });
    }
    throw cause;
  }
}

/** A blob of the retained history; HISTORY_INVALID when absent. */
export async function readHistoryBlob(history: History, oid: string): Promise<Uint8Array> {
  try {
    return await history.git.readBlob(oid);
  } catch (cause) {
    if (cause instanceof MissingObjectError) {
      throw new DomainError("HISTORY_INVALID", "A file of the retained history is missing; an operator must inspect the store.", { cause });
    }
    throw cause;
  }
}

/** A notebook path as the history names it: relative, without empty or "." segments. */
export function historyPath(path: string): string {
  return path.split("/").filter((s) => s !== "" && s !== ".").join("/");
}

/** The refusal of a path that is no file of the notebook at `generation`, as `path` was given. */
export function notAFile(path: string, generation: number): DomainError {
  return new DomainError("MALFORMED_INPUT", `"${path.slice(0, 200)}" is not a file of the notebook at generation ${generation}.`, { named: [path.slice(0, 200)] });
}
