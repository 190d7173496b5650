/**
 * Importing downloaded packs into the object cache (object-cache.ts
 * importPack, importPacks): each put in place whole or not at all, and
 * several imported as one.
 *
 * Several as one: a
 * checkout behind by k publications downloads their k packs, and importing
 * each alone wrote k packs and k indexes into the cache (four file-system
 * steps each) and left k more packs for every later process to open and
 * index. Their union is one pack, each object once, written with one index;
 * which published packs it holds, and their own objects, are recorded
 * beside it (ImportedPacks), since the cache must still answer for each
 * (hasPack, packObjectIds).
 */
import { appendFileSync, closeSync, existsSync, mkdirSync, openSync, readFileSync, readSync, renameSync, rmSync, type Stats, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { createHash } from "./hash.ts";
import type { RecentMap } from "../memory/recent-map.ts";
import { BadPackError } from "./objects.ts";
import { packHeader, packIndex, type PackedEntry, undeltifiedEntries } from "./pack.ts";

/** A downloaded pack, by the name it was published under. */
export interface NamedPack {
  name: string;
  bytes: Uint8Array;
}

/** One published pack of a union: its name and the ids of its objects. */
export interface UnitedMember {
  name: string;
  oids: string[];
}

/** The union of packs: one undeltified pack, its index, its name (its checksum, as git names packs), and what each member held. */
export interface UnitedPack {
  name: string;
  pack: Uint8Array;
  idx: Buffer;
  members: UnitedMember[];
}

/**
 * The union of `packs`, or null when one of them has a deltified entry (a
 * pack written elsewhere, which isomorphic-git indexes alone). Each entry
 * is inflated once, to check it and hash its id, and then copied byte for
 * byte; an object several packs hold is kept once. Throws on a malformed pack.
 */
export function unitePacks(packs: readonly NamedPack[]): UnitedPack | null {
  const parts: Buffer[] = [];
  const kept = new Map<string, PackedEntry>();
  const members: UnitedMember[] = [];
  let at = 12;
  for (const p of packs) {
    const read = undeltifiedEntries(p.bytes);
    if (read === null) return null;
    const buf = Buffer.from(p.bytes.buffer, p.bytes.byteOffset, p.bytes.byteLength);
    const oids: string[] = [];
    for (const e of read.entries) {
      const oid = e.oid.toString("hex");
      oids.push(oid);
      if (kept.has(oid)) continue;
      const bytes = buf.subarray(e.offset, e.end);
      kept.set(oid, { oid: e.oid, crc: e.crc, offset: at, end: at + bytes.length });
      parts.push(bytes);
      at += bytes.length;
    }
    members.push({ name: p.name, oids });
  }
  const body = Buffer.concat([packHeader(kept.size), ...parts]);
  const checksum = createHash("sha1").update(body).digest();
  const pack = new Uint8Array(Buffer.concat([body, checksum]));
  return { name: checksum.toString("hex"), pack, idx: packIndex([...kept.values()], checksum), members };
}

/** A published pack imported inside a union: the union's name and the pack's own objects. */
interface Member {
  union: string;
  oids: string[];
}

/**
 * A record as a process last read it (ObjectMemory.united): the file's
 * inode, how far it was read (the end of its last whole line), and the
 * members read. The record only grows, so a server reads each line once,
 * not the whole record at every call.
 */
export interface RecordRead {
  ino: number;
  end: number;
  members: Map<string, Member>;
}

/**
 * The record of the published packs imported inside a union, one line
 * each — its name, the union's name, then its objects' ids — appended once
 * the union's pack and index are in place. A line cut short by a crash
 * (and whatever it runs into) does not parse: that pack then counts as not
 * imported and is downloaded again, its objects only held twice.
 */
export class ImportedPacks {
  private readonly record: string;
  /** This call's view (one call holds the checkout: nobody else appends meanwhile). */
  private members: Map<string, Member> | null = null;

  /**
   * `memory`: the process's reads of records (ObjectMemory.united);
   * `randomId` names a temporary file; `limit`: the most bytes the record
   * keeps (trim).
   */
  constructor(
    private readonly gitdir: string,
    private readonly memory: RecentMap<string, RecordRead>,
    private readonly randomId: (bytes: number) => string,
    private readonly limit = RECORD_BYTES,
  ) {
    this.record = join(gitdir, "united-packs");
  }

  /** Whether `name` was imported inside a union still in the cache. */
  has(name: string): boolean {
    const member = this.read().get(name);
    return member !== undefined && existsSync(join(this.gitdir, "objects", "pack", `pack-${member.union}.idx`));
  }

  /** The ids of the objects of the published pack `name`, when imported inside a union still in the cache; else null. */
  oids(name: string): string[] | null {
    return this.has(name) ? this.read().get(name)!.oids : null;
  }

  /** After `union`'s pack and index were moved into place. */
  add(union: string, members: readonly UnitedMember[]): void {
    const known = this.read();
    appendFileSync(this.record, members.map((m) => `${m.name} ${union} ${m.oids.join(" ")}\n`).join(""));
    for (const m of members) known.set(m.name, { union, oids: m.oids });
    if (statSync(this.record).size > this.limit) this.trim();
  }

  /**
   * Keep the record bounded, so that a process reading it whole costs the
   * same however long the checkout has caught up: past its limit it is
   * rewritten with its newest lines, half of it (a temporary file renamed
   * over it). A pack whose line goes counts as not imported again: one the
   * manifest still lists (a small base, long listed) is downloaded once more.
   */
  private trim(): void {
    const text = readFileSync(this.record, "latin1");
    const from = text.indexOf("\n", text.length - Math.floor(this.limit / 2) - 1) + 1;
    const tmp = `${this.record}-${this.randomId(8)}`;
    writeFileSync(tmp, text.slice(from), "latin1");
    renameSync(tmp, this.record);
    this.memory.delete(this.gitdir);
    this.members = null;
  }

  /** With the packs dropped (ObjectCache.dropPacks). */
  drop(): void {
    rmSync(this.record, { force: true });
    this.memory.delete(this.gitdir);
    this.members = new Map();
  }

  /** The members recorded: the process's last read, and the lines appended since. */
  private read(): Map<string, Member> {
    if (this.members !== null) return this.members;
    let st: Stats;
    try {
      st = statSync(this.record);
    } catch {
      this.memory.delete(this.gitdir);
      return (this.members = new Map());
    }
    let known = this.memory.get(this.gitdir);
    if (known === undefined || known.ino !== st.ino || st.size < known.end) known = { ino: st.ino, end: 0, members: new Map() };
    if (st.size > known.end) known.end += readLines(this.record, known.end, st.size, known.members);
    this.memory.set(this.gitdir, known);
    return (this.members = known.members);
  }
}

/** The most bytes the record of packs imported together keeps (ImportedPacks.trim): some 4,000 publications' lines. */
const RECORD_BYTES = 2 ** 20;

const NAME = /^[0-9a-f]{64}$/;
const OID = /^[0-9a-f]{40}$/;

/** The whole lines of `file` from `from` to `to` into `members`; returns the bytes they take. */
function readLines(file: string, from: number, to: number, members: Map<string, Member>): number {
  const buf = Buffer.alloc(to - from);
  const fd = openSync(file, "r");
  try {
    readSync(fd, buf, 0, buf.length, from);
  } finally {
    closeSync(fd);
  }
  const text = buf.toString("latin1");
  const whole = text.lastIndexOf("\n") + 1;
  for (const line of text.slice(0, whole).split("\n")) {
    const [name, union, ...oids] = line.split(" ");
    if (name === undefined || !NAME.test(name) || union === undefined || !OID.test(union) || oids.length === 0 || !oids.every((o) => OID.test(o))) continue;
    members.set(name, { union, oids });
  }
  return whole;
}

/**
 * Write `bytes` aside (under `incoming/`, as `aside`) as pack `name`, index
 * it there (`index` returns the index, or writes it itself beside the pack,
 * given the pack's path relative to the cache), then move pack and index
 * into place, index last, since readers look for `*.idx`: a crash leaves
 * either no trace or a complete pack. A failed index is BadPackError.
 */
export async function placePack(gitdir: string, aside: string, name: string, bytes: Uint8Array, index: (packRel: string) => Buffer | Promise<void>): Promise<void> {
  const packRel = `incoming/${aside}.pack`;
  const tmpPack = join(gitdir, packRel);
  const tmpIdx = join(gitdir, `incoming/${aside}.idx`);
  mkdirSync(join(gitdir, "incoming"), { recursive: true });
  writeFileSync(tmpPack, bytes);
  try {
    const idx = await index(packRel);
    if (idx) writeFileSync(tmpIdx, idx);
  } catch (cause) {
    rmSync(tmpPack, { force: true });
    rmSync(tmpIdx, { force: true });
    throw new BadPackError("pack could not be indexed", { cause });
  }
  const packDir = join(gitdir, "objects", "pack");
  renameSync(tmpPack, join(packDir, `pack-${name}.pack`));
  renameSync(tmpIdx, join(packDir, `pack-${name}.idx`));
}
