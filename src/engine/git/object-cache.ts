/**
 * The object cache: a checkout's local git object database, and the one
 * reader of git objects the rest of the engine uses. Objects are written
 * here atomically (temp file + rename), because a crash must never leave a
 * torn loose object that would later be trusted.
 *
 * The git formats themselves live beside it: objects.ts (ids, trees, commits), pack.ts
 * (entries, packs, indexes), pack-file.ts (a pack written as it is made), trees.ts (flat
 * trees and the git trees built from them), pack-reader.ts (reads through every pack
 * index at once), walk.ts (descending a tree), held-packs.ts (packs downloaded ahead).
 *
 * What isomorphic-git does for us (this is the one file that imports it):
 * the packs slivingdoc writes are undeltified, and everything about them —
 * writing, indexing, reading — is done by the modules above. A pack with
 * deltified entries (written by C git or another tool) is what isomorphic-git
 * is for: it indexes such a pack on import (`indexPack`), reads its
 * deltified objects (`readObject`, also the second opinion on an entry the
 * fast reader found corrupt), and packs them again (`packObjects`).
 * test/engine/git-compat.test.ts feeds it a pack from `git pack-objects`.
 *
 * The engine sees notebook trees as flat maps (slash path → blob id); this module turns them into git trees and back.
 */
import * as fs from "node:fs";
import { join } from "node:path";
import type { RandomSource } from "../../contract/clock.ts";
import type { ObjectMemory, SharedReader } from "./object-memory.ts";
import { droppedBytes } from "../memory/garbage.ts";
import { type BuiltTree, buildTrees, type FlatTree, type ReadTree } from "./trees.ts";
import { BadPackError, decodeCommit, encodeCommit, rebasedCommit, FILE_MODE, type GitObject, MissingObjectError, objectId } from "./objects.ts";
import { indexUndeltifiedPack, packEntry, packEntryParts, parsePackIndex } from "./pack.ts";
import { writeLooseFile } from "./loose.ts";
import type { PackReader } from "./pack-reader.ts";
import { PackFile, type PackSplit } from "./pack-file.ts";
import { ImportedPacks, type NamedPack, placePack, type UnitedPack, unitePacks } from "./pack-import.ts";
import { walkTree } from "./walk.ts";

/** node:fs/promises only on the rare paths (a new cache, damage, packs dropped or refused): loading it costs about 1.5 ms of every call. */
async function fsPromises(): Promise<typeof import("node:fs/promises")> {
  return import("node:fs/promises");
}

/**
 * isomorphic-git only reads and packs what the own readers cannot (deltified
 * packs written elsewhere): loaded on that first need, since loading it and
 * its dependencies (pako, diff3 and more) costs every call milliseconds.
 */
async function isomorphicGit(): Promise<typeof import("isomorphic-git").default> {
  return (await import("isomorphic-git")).default;
}

export type { BuiltTree, FlatTree, ReadTree };

/** zlib's best speed, git's default for loose objects. */
const LOOSE_LEVEL = 1;

function copyOf(read: ReadTree): ReadTree {
  return { tree: read.tree, trees: new Set(read.trees), dirs: new Map(read.dirs), files: new Map(read.files) };
}

export class ObjectCache {
  /** isomorphic-git's per-repository cache (parsed pack indexes); replaced when packs are dropped. */
  private cache: object = {};

  private constructor(
    readonly gitdir: string,
    private readonly memory: ObjectMemory,
    private readonly randomId: RandomSource["randomId"],
    private readonly onDamage: () => void,
  ) {
    this.united = new ImportedPacks(gitdir, memory.united, randomId);
  }

  /**
   * `memory` is the process memory of its object caches, shared by its calls
   * (ProcessMemory.objects); `randomId` names temporary files (EngineDeps);
   * `onDamage` runs whenever an object the cache should hold is missing or
   * unreadable.
   */
  static async open(gitdir: string, memory: ObjectMemory, randomId: RandomSource["randomId"], onDamage: () => void = () => {}): Promise<ObjectCache> {
    // Synchronous: every call opens the cache, and Bun's promise-based
    // recursive mkdir cost more than the rest of a warm pull's set-up.
    fs.mkdirSync(join(gitdir, "objects", "pack"), { recursive: true });
    fs.mkdirSync(join(gitdir, "incoming"), { recursive: true });
    if (!fs.existsSync(join(gitdir, "HEAD"))) {
      // A minimal bare repository, so C git can read it too when debugging.
      await (await fsPromises()).writeFile(join(gitdir, "HEAD"), "ref: refs/heads/main\n");
      await (await fsPromises()).writeFile(join(gitdir, "config"), "[core]\n\trepositoryformatversion = 0\n\tbare = true\n");
    }
    return new ObjectCache(gitdir, memory, randomId, onDamage);
  }

  /**
   * Trees and commits built by this open checkout (one call), in memory only: they reach the
   * cache inside the pack a commit uploads and imports, so writing each one
   * loose first (a file, a rename, a directory) was wasted work.
   */
  private readonly built = new Map<string, { type: string; object: Buffer }>();

  private keep(type: "tree" | "commit", content: Buffer): string {
    const oid = objectId(type, content);
    if (!this.built.has(oid)) this.built.set(oid, { type, object: content });
    return oid;
  }

  /**
   * Write one object loose, atomically; returns its id. Existing objects are
   * kept. Synchronous: these are small, and awaiting each costs more.
   */
  async writeObject(type: "blob" | "tree" | "commit", content: Uint8Array): Promise<string> {
    return this.writeLoose(type, content).oid;
  }

  /**
   * writeObject, for a caller that cannot await (the scan stores each file
   * as it reads it). Not kept as written (writeBlob): a notebook's first
   * commit would then hold every file. `oid` is the bytes' blob id, which
   * the scan has just computed to compare with the stat cache.
   */
  writeBlobNow(bytes: Uint8Array, oid: string): string {
    return this.writeLoose("blob", bytes, oid).oid;
  }

  /** writeObject, saying whether it wrote the object (false: it was there already). */
  /** `oid`: the content's id when the caller has just computed it (hashing a big file twice costs seconds). */
  private writeLoose(type: "blob" | "tree" | "commit", content: Uint8Array, oid: string = objectId(type, content)): { oid: string; wrote: boolean } {
    const dir = join(this.gitdir, "objects", oid.slice(0, 2));
    const file = join(dir, oid.slice(2));
    if (fs.existsSync(file)) return { oid, wrote: false };
    const tmp = join(dir, `tmp-${this.randomId(8)}`);
    // Git's own level for loose objects (core.looseCompression: best speed):
    // the default level takes ten times as long on a big file.
    writeLooseFile(tmp, type, content, LOOSE_LEVEL);
    fs.renameSync(tmp, file);
    return { oid, wrote: true };
  }

  /**
   * Blobs written by this open checkout (one call), kept as written: the
   * merged file a commit writes is packed, written to the visible file and
   * counted for the diffstat in the same call, and a big one would otherwise
   * be inflated again for each (a 100 MB file, a second or more each time).
   */
  private readonly written = new Map<string, Uint8Array>();

  async writeBlob(bytes: Uint8Array): Promise<string> {
    const { oid, wrote } = this.writeLoose("blob", bytes);
    // Only what this call wrote: an object that was there may be damaged, which a read must find.
    if (wrote) this.written.set(oid, bytes);
    return oid;
  }

  /** Build the git trees of a flat notebook tree (trees.ts buildTrees), in this call's memory until packed. */
  async writeFlatTree(files: FlatTree, base?: ReadTree): Promise<BuiltTree> {
    const { tree, trees, dirs } = buildTrees(files, base, (content) => this.keep("tree", content));
    this.memory.trees.set(`${this.gitdir}\0${tree}`, { tree, trees: new Set(trees), dirs: new Map(dirs), files: new Map(files) });
    return { tree, trees, dirs };
  }

  /**
   * Write a commit whose message is kept byte for byte (isomorphic-git's
   * writeCommit normalises newlines, which the message rules forbid).
   */
  async writeCommit(args: Parameters<typeof encodeCommit>[0]): Promise<string> {
    return this.keep("commit", encodeCommit(args));
  }

  /**
   * `commit` moved onto another tree and parent, authors, times and message
   * unchanged (objects.ts rebasedCommit); null when it is not a commit of
   * that shape.
   */
  async rebaseCommit(commit: string, tree: string, parent: string | null): Promise<string | null> {
    const { type, object } = await this.read(commit);
    if (type !== "commit") return null;
    const content = rebasedCommit(object, tree, parent);
    return content === null ? null : this.keep("commit", content);
  }

  /** This call's use of the process's fast reader for this cache; null until the first read. */
  private shared: SharedReader | null = null;
  /** Packs were removed here: the reader must check every pack again. */
  private stale = false;
  /** A pack was imported here: the reader need only index it. */
  private packAdded = false;

  /**
   * Fast reads of packed and loose objects (pack-reader.ts), through one
   * reader per cache for the whole process: indexing every pack again on
   * each call cost a warm commit more than its own work. The reader catches
   * up with the pack directory when a call first reads and after packs
   * were added or dropped.
   */
  private reader(): PackReader {
    if (this.shared === null || this.stale) {
      this.shared ??= this.memory.acquireReader(this.gitdir);
      // Packs rewritten or removed: trees remembered from them may no longer be readable here.
      if (this.shared.reader.refresh()) this.forgetTrees();
    } else if (this.packAdded && this.shared.reader.refresh(false)) {
      this.forgetTrees();
    }
    this.stale = false;
    this.packAdded = false;
    return this.shared.reader;
  }

  /** Packs were removed: check every pack before the next read. */
  private packsChanged(): void {
    this.stale = true;
  }

  private forgetTrees(): void {
    this.memory.forgetTrees(this.gitdir);
  }

  /** End of the call: the process's reader stays open for the next one (up to a bound). */
  close(): void {
    if (this.shared) this.memory.releaseReader(this.shared);
    this.shared = null;
  }

  /**
   * The object, or null when this cache cannot produce it. Reports no
   * damage: a caller may expect absences (compaction at a shallow boundary).
   * Built objects first, then the fast reader, then isomorphic-git, which
   * also reads deltified entries (packs written elsewhere).
   */
  async find(oid: string, retried = false): Promise<GitObject | null> {
    const built = this.built.get(oid);
    if (built) return built;
    const written = this.written.get(oid);
    if (written) {
      this.reader(); // catches up with the packs first, as every read does (forgetting trees they no longer vouch for)
      return { type: "blob", object: written };
    }
    if (!retried) {
      try {
        const fast = this.reader().read(oid);
        if (fast) return fast;
      } catch {
        // A corrupt entry or file: isomorphic-git's path below decides what to do.
      }
    }
    try {
      const result = await (await isomorphicGit()).readObject({ fs, gitdir: this.gitdir, oid, format: "content", cache: this.cache });
      return { type: result.type, object: result.object as Uint8Array };
    } catch (cause) {
      const loose = join(this.gitdir, "objects", oid.slice(0, 2), oid.slice(2));
      if ((cause as { code?: string }).code !== "NotFoundError" && !retried && fs.existsSync(loose)) {
        // A cached loose object that cannot be read is not trusted: drop it,
        // and read again, since a pack may hold a good copy.
        await (await fsPromises()).rm(loose, { force: true });
        return this.find(oid, true);
      }
      return null;
    }
  }

  /** The object; an absent one is damage (`onDamage`) and throws MissingObjectError. */
  private async read(oid: string): Promise<GitObject> {
    const found = await this.find(oid);
    if (found !== null) return found;
    this.onDamage();
    throw new MissingObjectError(`object ${oid} missing or unreadable`);
  }

  /**
   * The object as an undeltified pack entry, or null when absent: an
   * undeltified entry of a cached pack is copied byte for byte (no
   * inflating and deflating again); anything else is read and deflated.
   */
  async packEntry(oid: string): Promise<Buffer | null> {
    const raw = this.built.has(oid) || this.written.has(oid) ? null : this.reader().entry(oid);
    if (raw) return raw;
    const object = await this.find(oid);
    return object === null ? null : packEntry(object.type, Buffer.from(object.object));
  }

  /** The ids of the objects in the imported pack `name`; MissingObjectError when it was never imported here. */
  packObjectIds(name: string): string[] {
    const united = this.united.oids(name);
    if (united !== null) return united;
    let idx: Buffer;
    try {
      idx = fs.readFileSync(join(this.gitdir, "objects", "pack", `pack-${name}.idx`));
    } catch (cause) {
      throw new MissingObjectError(`pack ${name} was never imported into this cache`, { cause });
    }
    const parsed = parsePackIndex(idx);
    if (parsed === null) throw new MissingObjectError(`pack index ${name} is not a version 2 index, or is truncated`);
    return Array.from({ length: parsed.count }, (_, i) => parsed.oid(i));
  }

  /**
   * Forget every imported pack, so the accepted state is downloaded again:
   * the repair when cached history cannot be read. Loose objects (the
   * caller's own files) stay.
   */
  async dropPacks(): Promise<void> {
    this.packsChanged();
    this.forgetTrees();
    await (await fsPromises()).rm(join(this.gitdir, "objects", "pack"), { recursive: true, force: true });
    await (await fsPromises()).mkdir(join(this.gitdir, "objects", "pack"), { recursive: true });
    this.united.drop();
    this.cache = {};
  }

  async has(oid: string): Promise<boolean> {
    try {
      await this.read(oid);
      return true;
    } catch (e) {
      if (e instanceof MissingObjectError) return false;
      throw e;
    }
  }

  /** Whether a blob is over `limit` bytes: from its pack entry's header when it has one (nothing inflated), else read. */
  async blobOver(oid: string, limit: number): Promise<boolean> {
    const written = this.written.get(oid);
    const size = written?.byteLength ?? this.reader().size(oid, limit + 1) ?? (await this.readBlob(oid)).byteLength;
    return size > limit;
  }

  async readBlob(oid: string): Promise<Uint8Array> {
    const { type, object } = await this.read(oid);
    if (type !== "blob") throw new MissingObjectError("not a blob");
    return object;
  }

  async commitTree(commit: string): Promise<string> {
    this.reader(); // catches up with the packs first, forgetting trees they no longer vouch for
    const key = `${this.gitdir}\0${commit}`;
    const remembered = this.memory.commits.get(key);
    if (remembered !== undefined) return remembered;
    const { tree } = await this.readCommit(commit);
    this.memory.commits.set(key, tree);
    return tree;
  }

  /** The commit's first parent; null for a root commit. */
  async commitParent(commit: string): Promise<string | null> {
    return (await this.readCommit(commit)).parents[0] ?? null;
  }

  private async readCommit(commit: string): Promise<{ tree: string; parents: string[] }> {
    const { type, object } = await this.read(commit);
    if (type !== "commit") throw new MissingObjectError("not a commit");
    return decodeCommit(object);
  }

  /**
   * Build the trees of `files` and write them to the cache loose, for a tree
   * that no pack will carry (a baseline that is not a published tree).
   */
  async storeFlatTree(files: FlatTree): Promise<string> {
    const built = await this.writeFlatTree(files);
    for (const oid of built.trees) {
      const object = this.built.get(oid);
      if (object) await this.writeObject("tree", object.object);
    }
    return built.tree;
  }

  /** Read a git tree into a flat notebook tree, with every tree id on the way. */
  async readFlatTree(tree: string): Promise<ReadTree> {
    this.reader(); // as in commitTree
    const key = `${this.gitdir}\0${tree}`;
    const remembered = this.memory.trees.get(key);
    if (remembered) {
      this.memory.trees.set(key, remembered);
      return copyOf(remembered);
    }
    const read = await this.readFlatTreeObjects(tree);
    this.memory.trees.set(key, copyOf(read));
    return read;
  }

  private async readFlatTreeObjects(tree: string): Promise<ReadTree> {
    const files: FlatTree = new Map();
    const trees = new Set<string>();
    const dirs = new Map<string, string>();
    await walkTree((oid) => this.read(oid), tree, {
      tree: (oid, prefix) => {
        trees.add(oid);
        dirs.set(prefix, oid);
        return true;
      },
      entry: (path, oid, mode) => {
        if (mode !== FILE_MODE) throw new MissingObjectError("unexpected tree entry mode");
        files.set(path, oid);
      },
    });
    return { tree, trees, dirs, files };
  }

  /**
   * A real git packfile holding exactly `oids` (undeltified, which git
   * accepts), and its index (null when isomorphic-git made the pack). Its
   * entries go to a file as they are made, so that no more than a few of
   * them are in memory at once. With `split`, the first `split.leading`
   * objects may go into packs of their own, each closed once it holds
   * `split.bytes` and handed to `split.part` (with a nonce, below); the
   * rest, and what did not fill a part, make the pack returned.
   */
  async packObjects(oids: string[], split?: PackSplit): Promise<{ pack: Uint8Array; idx: Buffer | null }> {
    // Through the fast reader when it has every object; isomorphic-git's
    // packObjects looks each one up by probing (seconds for 10,000 files).
    const reader = this.reader();
    const file = () => join(this.gitdir, "incoming", `out-${this.randomId(8)}.pack`);
    let out = new PackFile(file());
    try {
      for (const [i, oid] of oids.entries()) {
        if (split && i < split.leading && out.size >= split.bytes) {
          // A pack of blobs alone holds no commit, whose time makes a pack's bytes new: a nonce does (gc.ts, "the fence").
          const nonce = Buffer.from(`slivingdoc pack nonce ${this.randomId(16)}\n`);
          out.entry(objectId("blob", nonce), (add) => packEntryParts("blob", nonce, add));
          const part = out.finish();
          out.discard();
          await split.part(part);
          out = new PackFile(file());
        }
        const blob = this.written.get(oid);
        const entry = this.built.get(oid) ?? (blob ? { type: "blob", object: blob } : null);
        const raw = entry === null ? reader.entry(oid) : null;
        const object = entry ?? (raw === null ? reader.read(oid) : null);
        if (raw) out.entry(oid, (add) => add(raw));
        else if (object) out.entry(oid, (add) => packEntryParts(object.type, object.object, add));
        else {
          // A deltified object (a pack from elsewhere): isomorphic-git packs
          // everything, reading from disk, so what was built here goes there
          // first. Parts already handed on only repeat objects: harmless.
          for (const b of this.built.values()) await this.writeObject(b.type as "tree" | "commit", b.object);
          const { packfile } = await (await isomorphicGit()).packObjects({ fs, gitdir: this.gitdir, oids, cache: this.cache });
          if (!packfile) throw new Error("packObjects returned no pack");
          return { pack: packfile, idx: null };
        }
        // What was read or inflated for the entry, and the entry itself once written out, dead now.
        droppedBytes(raw?.length ?? object?.object.byteLength ?? 0);
      }
      return out.finish();
    } finally {
      out.discard();
    }
  }

  /** The published packs imported inside a union of several (pack-import.ts). */
  private readonly united: ImportedPacks;

  /** The bytes of the published pack `name` if this process downloaded it ahead (git/held-packs.ts), no longer held; else null. */
  takeHeld = (name: string): Uint8Array | null => this.memory.held.take(name);

  /** Whether the pack published under `name` was already imported, alone or inside a union. */
  hasPack(name: string): boolean {
    return fs.existsSync(join(this.gitdir, "objects", "pack", `pack-${name}.idx`)) || this.united.has(name);
  }

  /**
   * Import a downloaded pack: index it aside, then move pack and index into
   * place (index last, since readers look for `*.idx`), so a crash leaves
   * either no trace or a complete pack. `ownIndex`: for a pack made here, the
   * index its writer made with it (pack-file.ts), so no entry is inflated again.
   */
  async importPack(name: string, bytes: Uint8Array, ownIndex?: Buffer | null): Promise<void> {
    const index = (packRel: string) => {
      // Ours are undeltified and index in one pass (or come with the index their writer made here); others go to isomorphic-git.
      const idx = ownIndex ?? indexUndeltifiedPack(bytes);
      return idx ?? (async () => void (await (await isomorphicGit()).indexPack({ fs, dir: this.gitdir, gitdir: this.gitdir, filepath: packRel, cache: {} })))();
    };
    await this.place(name, bytes, index);
  }

  /**
   * Import several downloaded packs as their union, one pack (pack-import.ts),
   * put in place as one pack alone is, then recorded as holding each of them.
   * Packs with deltified entries (written elsewhere) are imported one by one.
   */
  async importPacks(packs: readonly NamedPack[]): Promise<void> {
    let union: UnitedPack | null = null;
    try {
      union = packs.length > 1 ? unitePacks(packs) : null;
    } catch (cause) {
      throw new BadPackError("pack could not be indexed", { cause });
    }
    if (union === null) {
      for (const p of packs) await this.importPack(p.name, p.bytes);
      return;
    }
    const { idx } = union;
    if (!fs.existsSync(join(this.gitdir, "objects", "pack", `pack-${union.name}.idx`))) await this.place(union.name, union.pack, () => idx);
    this.united.add(union.name, union.members);
  }

  /** Put `bytes` in place as pack `name` (pack-import.ts placePack), for the reader to index at its next read. */
  private async place(name: string, bytes: Uint8Array, index: (packRel: string) => Buffer | Promise<void>): Promise<void> {
    await placePack(this.gitdir, `pack-${name}-${this.randomId(8)}`, name, bytes, index);
    this.packAdded = true;
  }
}
