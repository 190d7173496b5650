/**
 * `slivingdoc export DIR`: the retained history as a plain bare git
 * repository that C git reads — `git -C DIR log`, `show`,
 * `blame main -- FILE`, `fsck` clean.
 *
 * - Objects: one undeltified pack per run (git/pack.ts) with its version 2
 *   index, holding every object reachable from the retained publications
 *   that the repository's packs do not hold yet. Run again, it adds only
 *   what was published since: the incremental update.
 * - `refs/heads/main` names the accepted head; HEAD points at it.
 * - `shallow`: the oldest retained publication names a parent the store no
 *   longer holds (compaction's boundary). git treats a commit listed in
 *   `shallow` as having no parents, as after `git clone --depth`, so
 *   `git log` stops there and `git fsck` does not miss the parent.
 * - Written in an order a crash cannot make inconsistent: the config that
 *   marks the repository as an export first, then the pack, its index (git
 *   looks for `*.idx`), `shallow`, and the ref, each by write-and-rename.
 *
 * DIR is someone's directory, so export writes only where nothing can be
 * lost (checkExportTarget): a new or empty directory, or an earlier export
 * of the same notebook. An earlier export is told by two things. Its config
 * carries `[slivingdoc] export = true`, which no repository git made has
 * (exports written before the marker have export's exact config instead).
 * And its `main` is one of the notebook's retained publications, or the
 * parent of the oldest: moving `main` to the head is then a fast-forward,
 * so none of the repository's commits is left unreachable. A marked export
 * whose `main` is neither holds another notebook, or this one from before
 * the history the store keeps; nothing links the two, so it is refused. (A
 * notebook identity recorded beside the marker could one day tell the
 * second case, and join the two histories.)
 */
import { accessSync, constants, existsSync, lstatSync, mkdirSync, readdirSync, readFileSync, renameSync, type Stats, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { DomainError } from "../../contract/errors.ts";
import { isAtOrBelow } from "../../contract/path-containment.ts";
import type { FileClock, RandomSource } from "../../contract/clock.ts";
import { registeredCheckouts } from "../checkout/registry.ts";
import { MissingObjectError } from "../git/objects.ts";
import { parsePackIndex, writeIndexedPack } from "../git/pack.ts";
import { walkTree } from "../git/walk.ts";
import type { ObjectMemory } from "../git/object-memory.ts";
import type { RegistryMemory } from "../checkout/registry.ts";
import { type History, type HistoryDeps, withHistory } from "./read.ts";

export interface ExportResult {
  /** The directory written, as resolved. */
  directory: string;
  /** The accepted generation exported (0: the store holds no notebook; nothing written). */
  generation: number;
  /** The oldest generation in the repository's history (0: none). */
  oldestRetained: number;
  /** Publications new to the repository this run. */
  added: number;
  /** Objects written this run. */
  objects: number;
  /** Whether the oldest exported publication is a shallow boundary (its parent is not retained). */
  shallow: boolean;
}

export interface ExportDeps extends HistoryDeps, FileClock {
  memory: { objects: ObjectMemory } & RegistryMemory;
  /** Progress of long work, for a terminal (objects done of total). */
  progress?: (what: string, done: number, total: number) => void;
}

/**
 * A directory export may not write into, and why, in words that follow its
 * name ("… is a regular file, not a directory"). Nothing was written. The
 * CLI refuses its argument with it (exit 2), naming the directory as typed.
 */
export class ExportRefused extends Error {
  override readonly name = "ExportRefused";
  constructor(
    readonly why: string,
    /** What the caller does about it, when not the usual (name a new or empty directory, or an earlier export). */
    readonly advice?: string,
  ) {
    super(why);
  }
}

/** What to do about a directory this user may not write: the caller's to mend, as a file it may not read is. */
const WRITABLE_ADVICE = "export needs a directory this user may write into: give it write permission (chmod u+w), or name another directory";

/** Where an export may go: nothing there yet (missing or empty), or an earlier export and the commit its `main` names. */
export type ExportTarget = { kind: "new" } | { kind: "export"; main: string | null; marked: boolean };

/** The config export writes: a bare repository, marked as an export (the module comment). */
const EXPORT_CONFIG = "[core]\n\trepositoryformatversion = 0\n\tbare = true\n[slivingdoc]\n\texport = true\n";
/** The config of an export written before the marker: exactly this, which git's own `init` never writes. */
const UNMARKED_EXPORT_CONFIG = "[core]\n\trepositoryformatversion = 0\n\tbare = true\n";

/** Whether a git config file holds `export = true` in its `[slivingdoc]` section (git's section and key names ignore case). */
function marksExport(config: string): boolean {
  let section = "";
  for (const raw of config.split("\n")) {
    const line = raw.trim();
    const header = /^\[\s*([^\]\s]*)\s*\]$/.exec(line);
    if (header) section = header[1]!.toLowerCase();
    else if (section === "slivingdoc" && /^export\s*=\s*true$/i.test(line)) return true;
  }
  return false;
}

/** The commit `main` names: its loose ref, else its line in `packed-refs` (after a `git gc` in the export); null when neither. */
function readMain(dir: string): string | null {
  const loose = readIfFile(join(dir, "refs", "heads", "main"))?.trim();
  if (loose !== undefined) return /^[0-9a-f]{40}$/.test(loose) ? loose : null;
  const packed = readIfFile(join(dir, "packed-refs")) ?? "";
  return /^([0-9a-f]{40}) refs\/heads\/main$/m.exec(packed)?.[1] ?? null;
}

function readIfFile(file: string): string | undefined {
  try {
    return readFileSync(file, "utf8");
  } catch {
    return undefined;
  }
}

function isDirectory(path: string): boolean {
  try {
    return lstatSync(path).isDirectory();
  } catch {
    return false;
  }
}

/** A failure to look at the directory, as the refusal it is when it is the caller's to mend. */
function lookFailed(e: unknown): never {
  const code = (e as NodeJS.ErrnoException).code;
  if (code === "ENOTDIR") throw new ExportRefused("has a regular file in its path where a directory should be");
  if (code === "EACCES" || code === "EPERM") throw new ExportRefused("cannot be read (permission denied)");
  throw e;
}

/**
 * A write that the directory's permissions or file system refused, as the
 * refusal it is: the caller's to mend, never an unexplained internal error.
 * Anything else (a full disk) is thrown as it is.
 */
function writeFailed(e: unknown): never {
  const code = (e as NodeJS.ErrnoException).code;
  if (code === "EACCES" || code === "EPERM") throw new ExportRefused("cannot be written (permission denied)", WRITABLE_ADVICE);
  if (code === "EROFS") throw new ExportRefused("is on a read-only file system", WRITABLE_ADVICE);
  throw e;
}

/** Refuse a directory that will be written into, or one to be made in the nearest existing `dir`, that this user may not write. */
function checkWritable(dir: string): void {
  let at = dir;
  while (entryAt(at) === null && dirname(at) !== at) at = dirname(at);
  try {
    accessSync(at, constants.W_OK);
  } catch (e) {
    writeFailed(e);
  }
}

/** What is at `path`: nothing, or its lstat. */
function entryAt(path: string): Stats | null {
  try {
    return lstatSync(path);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === "ENOENT") return null;
    return lookFailed(e);
  }
}

/**
 * Whether export may write into the directory the caller named (`named`,
 * absolute, no symlink resolved) and resolved to `dir`; ExportRefused when
 * it may not, PATH_OUTSIDE_ROOT when it overlaps a checkout or the private
 * state. Only reads. exportHistory checks again just before it writes: the
 * history may take long to read, and the directory can change meanwhile.
 */
export function checkExportTarget(deps: ExportDeps, named: string, dir: string): ExportTarget {
  // Never inside a checkout (its files would be published as notes) or the private state.
  if (isAtOrBelow(deps.privateRoot, dir) || isAtOrBelow(dir, deps.privateRoot)) {
    throw new DomainError("PATH_OUTSIDE_ROOT", "The export directory overlaps slivingdoc's private state; use another directory.");
  }
  for (const checkout of registeredCheckouts(deps)) {
    if (isAtOrBelow(checkout, dir) || isAtOrBelow(dir, checkout)) {
      throw new DomainError("PATH_OUTSIDE_ROOT", `The export directory overlaps the checkout ${checkout}; export to a directory outside every checkout.`);
    }
  }
  // What the caller named: a symlink is not the directory, wherever it points.
  if (entryAt(named)?.isSymbolicLink()) throw new ExportRefused("is a symbolic link, not a directory");
  const entry = entryAt(dir);
  if (entry === null) return writableTarget(dir, { kind: "new" });
  if (entry.isSymbolicLink()) throw new ExportRefused("is a symbolic link, not a directory");
  if (entry.isFile()) throw new ExportRefused("is a regular file, not a directory");
  if (!entry.isDirectory()) throw new ExportRefused("is not a directory");
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch (e) {
    return lookFailed(e);
  }
  if (names.length === 0) return writableTarget(dir, { kind: "new" });
  const config = readIfFile(join(dir, "config"));
  const marked = config !== undefined && marksExport(config);
  const unmarked = config === UNMARKED_EXPORT_CONFIG && ["HEAD", "objects", "refs"].every((n) => names.includes(n));
  if (marked || unmarked) return writableTarget(dir, { kind: "export", main: readMain(dir), marked });
  if (names.includes(".git")) throw new ExportRefused("is a git working tree, with files of its own");
  if (names.includes("HEAD") && isDirectory(join(dir, "objects"))) throw new ExportRefused("is a git repository that export did not write");
  throw new ExportRefused("holds files of its own");
}

/** `target`, once this user may write where export will write it (checkWritable). */
function writableTarget(dir: string, target: ExportTarget): ExportTarget {
  checkWritable(dir);
  return target;
}

/** Atomic write: a temporary name beside the target, then rename. */
function writeAtomic(file: string, data: Uint8Array | string, randomId: RandomSource["randomId"]): void {
  const tmp = `${file}.tmp-${randomId(6)}`;
  writeFileSync(tmp, data);
  renameSync(tmp, file);
}

/** Every object id the repository's packs hold (loose objects are not ours: a repository export wrote has none). */
function packedObjects(dir: string): Set<string> {
  const have = new Set<string>();
  const packDir = join(dir, "objects", "pack");
  for (const name of readdirSync(packDir)) {
    if (!name.endsWith(".idx")) continue;
    const idx = parsePackIndex(readFileSync(join(packDir, name)));
    if (idx === null) continue;
    for (let i = 0; i < idx.count; i++) have.add(idx.oid(i));
  }
  return have;
}

function hasObject(dir: string, have: Set<string>, oid: string): boolean {
  return have.has(oid) || existsSync(join(dir, "objects", oid.slice(0, 2), oid.slice(2)));
}

export interface ExportInput {
  /** The directory as the caller named it: absolute, no symlink resolved. */
  named: string;
  /** The same directory, resolved. */
  dir: string;
}

/**
 * `slivingdoc export`: the retained history into the directory `input`
 * names. Its target is looked at before the history is read, which may take
 * long, and again before anything is written (writeExport).
 */
export async function exportHistory(deps: ExportDeps, input: ExportInput): Promise<ExportResult> {
  checkExportTarget(deps, input.named, input.dir);
  return withHistory(deps, (history) => writeExport(deps, history, input.named, input.dir));
}

async function writeExport(deps: ExportDeps, history: History, named: string, dir: string): Promise<ExportResult> {
  const target = checkExportTarget(deps, named, dir);
  const newest = history.publications[0];
  const oldest = history.publications[history.publications.length - 1];
  if (history.manifest === null || newest === undefined || oldest === undefined) {
    return { directory: dir, generation: 0, oldestRetained: 0, added: 0, objects: 0, shallow: false };
  }
  if (target.kind === "export" && target.main !== null && target.main !== history.boundary && !history.publications.some((p) => p.commit === target.main)) {
    throw new ExportRefused("is an export of another notebook, or of this one from before the history the store keeps");
  }
  // Permissions can still refuse inside an earlier export (a subdirectory made read-only).
  const written = await writeRepository(deps, history, dir, target).catch((e: unknown) => writeFailed(e));
  return {
    directory: dir,
    generation: newest.generation,
    oldestRetained: oldest.generation,
    ...written,
  };
}

/** Everything export writes, in the order the module comment gives: what was added, and whether the oldest is a shallow boundary. */
async function writeRepository(deps: ExportDeps, history: History, dir: string, target: ExportTarget): Promise<{ added: number; objects: number; shallow: boolean }> {
  const newest = history.publications[0]!;
  const oldest = history.publications[history.publications.length - 1]!;
  prepareRepository(dir, target, deps.randomId);
  const have = packedObjects(dir);
  const { commits, wanted } = await missingObjects(deps, history, dir, have);
  if (wanted.length > 0) await writeObjects(deps, history, dir, wanted, have);
  const shallow = writeShallow(dir, have, oldest, deps.randomId);
  writeAtomic(join(dir, "refs", "heads", "main"), `${newest.commit}\n`, deps.randomId);
  return { added: commits.length, objects: wanted.length, shallow };
}

/** The repository's frame: its directories, HEAD, and the config that marks it as an export. */
function prepareRepository(dir: string, target: ExportTarget, randomId: RandomSource["randomId"]): void {
  if (target.kind === "new") mkdirSync(dir, { recursive: true });
  // The mark first: a crash after it leaves an export that the next run recognises and completes.
  if (target.kind === "new" || !target.marked) writeAtomic(join(dir, "config"), EXPORT_CONFIG, randomId);
  if (!existsSync(join(dir, "HEAD"))) writeAtomic(join(dir, "HEAD"), "ref: refs/heads/main\n", randomId);
  mkdirSync(join(dir, "objects", "pack"), { recursive: true });
  mkdirSync(join(dir, "refs", "heads"), { recursive: true });
  mkdirSync(join(dir, "refs", "tags"), { recursive: true });
}

/** The publications the repository lacks, and every object they reach that it lacks. */
async function missingObjects(deps: ExportDeps, history: History, dir: string, have: Set<string>): Promise<{ commits: History["publications"]; wanted: string[] }> {
  const commits = history.publications.filter((p) => !hasObject(dir, have, p.commit));
  const wanted: string[] = [];
  const seen = new Set<string>();
  const read = (oid: string) => history.git.find(oid);
  try {
    for (const [n, p] of commits.entries()) {
      deps.progress?.("publications read", n + 1, commits.length);
      wanted.push(p.commit);
      await walkTree(read, p.tree, {
        tree: (oid) => {
          if (seen.has(oid)) return false;
          seen.add(oid);
          if (hasObject(dir, have, oid)) return false; // present with everything below it
          wanted.push(oid);
          return true;
        },
        entry: (_, oid) => {
          if (seen.has(oid)) return;
          seen.add(oid);
          if (!hasObject(dir, have, oid)) wanted.push(oid);
        },
      });
    }
  } catch (cause) {
    if (cause instanceof MissingObjectError) {
      throw new DomainError("HISTORY_INVALID", "The retained history is missing an object; an operator must inspect the store.", { cause });
    }
    throw cause;
  }
  return { commits, wanted };
}

/** `wanted` as one undeltified pack and its index, named by the pack's checksum; `have` learns them. */
async function writeObjects(deps: ExportDeps, history: History, dir: string, wanted: string[], have: Set<string>): Promise<void> {
  const entries: Array<{ oid: string; entry: Buffer }> = [];
  for (const [n, oid] of wanted.entries()) {
    if (n % 500 === 0) deps.progress?.("objects written", n, wanted.length);
    const entry = await history.git.packEntry(oid);
    if (entry === null) throw new DomainError("HISTORY_INVALID", "The retained history is missing an object; an operator must inspect the store.");
    entries.push({ oid, entry });
  }
  deps.progress?.("objects written", wanted.length, wanted.length);
  // Indexed from what was written, not by inflating every entry again.
  const { pack, idx } = writeIndexedPack(entries);
  const name = Buffer.from(pack.subarray(pack.length - 20)).toString("hex");
  writeAtomic(join(dir, "objects", "pack", `pack-${name}.pack`), pack, deps.randomId);
  writeAtomic(join(dir, "objects", "pack", `pack-${name}.idx`), idx, deps.randomId);
  for (const oid of wanted) have.add(oid);
}

/** The shallow boundary: every commit whose parent the repository lacks. Whether the oldest exported publication is one. */
function writeShallow(dir: string, have: Set<string>, oldest: History["publications"][number], randomId: RandomSource["randomId"]): boolean {
  const shallowFile = join(dir, "shallow");
  const shallow = new Set(existsSync(shallowFile) ? readFileSync(shallowFile, "latin1").split("\n").filter((l) => /^[0-9a-f]{40}$/.test(l)) : []);
  const boundary = oldest.parent !== null && !hasObject(dir, have, oldest.parent);
  if (boundary) shallow.add(oldest.commit);
  if (shallow.size > 0) writeAtomic(shallowFile, [...shallow].sort().map((l) => `${l}\n`).join(""), randomId);
  return boundary;
}
