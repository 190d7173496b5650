/**
 * `slivingdoc export DIR` (issue 15, item 6): the retained history as a
 * plain bare git repository that C git reads — `git -C DIR log`, `show`,
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
 * - Written in an order a crash cannot make inconsistent: the pack, then
 *   its index (git looks for `*.idx`), then `shallow`, then the ref, each
 *   by write-and-rename.
 */
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { DomainError } from "../../contract/errors.ts";
import { isAtOrBelow } from "../../contract/path-containment.ts";
import { randomHex } from "../../contract/random-hex.ts";
import { registeredCheckouts } from "../checkout-registry.ts";
import { MissingObjectError } from "../git/objects.ts";
import { indexUndeltifiedPack, parsePackIndex, writePack } from "../git/pack.ts";
import { walkTree } from "../git/walk.ts";
import type { ProcessMemory } from "../process-memory.ts";
import type { History } from "./read.ts";

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

export interface ExportDeps {
  privateRoot: string;
  memory: ProcessMemory;
  /** Progress of long work, for a terminal (objects done of total). */
  progress?: (what: string, done: number, total: number) => void;
}

/** Atomic write: a temporary name beside the target, then rename. */
function writeAtomic(file: string, data: Uint8Array | string): void {
  const tmp = `${file}.tmp-${randomHex(6)}`;
  writeFileSync(tmp, data);
  renameSync(tmp, file);
}

/** Whether `dir` looks like a repository this command wrote (or any bare git repository). */
function isBareRepository(dir: string): boolean {
  return existsSync(join(dir, "HEAD")) && existsSync(join(dir, "objects")) && existsSync(join(dir, "refs"));
}

function refuse(message: string): DomainError {
  return new DomainError("MALFORMED_INPUT", message);
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

export async function exportHistory(deps: ExportDeps, history: History, dir: string): Promise<ExportResult> {
  // Never inside a checkout (its files would be published as notes) or the private state.
  if (isAtOrBelow(deps.privateRoot, dir) || isAtOrBelow(dir, deps.privateRoot)) {
    throw new DomainError("PATH_OUTSIDE_ROOT", "The export directory overlaps slivingdoc's private state; use another directory.");
  }
  for (const checkout of registeredCheckouts(deps.privateRoot, deps.memory)) {
    if (isAtOrBelow(checkout, dir) || isAtOrBelow(dir, checkout)) {
      throw new DomainError("PATH_OUTSIDE_ROOT", `The export directory overlaps the checkout ${checkout}; export to a directory outside every checkout.`);
    }
  }
  if (existsSync(dir)) {
    if (readdirSync(dir).length > 0 && !isBareRepository(dir)) {
      throw refuse("The export directory exists and is not a git repository written by export; name a new or empty directory.");
    }
  }
  const empty = { directory: dir, generation: 0, oldestRetained: 0, added: 0, objects: 0, shallow: false };
  const newest = history.publications[0];
  const oldest = history.publications[history.publications.length - 1];
  if (history.manifest === null || newest === undefined || oldest === undefined) return empty;

  mkdirSync(join(dir, "objects", "pack"), { recursive: true });
  mkdirSync(join(dir, "refs", "heads"), { recursive: true });
  mkdirSync(join(dir, "refs", "tags"), { recursive: true });
  if (!existsSync(join(dir, "HEAD"))) {
    writeAtomic(join(dir, "config"), "[core]\n\trepositoryformatversion = 0\n\tbare = true\n");
    writeAtomic(join(dir, "HEAD"), "ref: refs/heads/main\n");
  }
  const have = packedObjects(dir);

  // The publications the repository lacks, and every object they reach that it lacks.
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

  if (wanted.length > 0) {
    const entries: Buffer[] = [];
    for (const [n, oid] of wanted.entries()) {
      if (n % 500 === 0) deps.progress?.("objects written", n, wanted.length);
      const entry = await history.git.packEntry(oid);
      if (entry === null) throw new DomainError("HISTORY_INVALID", "The retained history is missing an object; an operator must inspect the store.");
      entries.push(entry);
    }
    deps.progress?.("objects written", wanted.length, wanted.length);
    const pack = writePack(entries);
    const idx = indexUndeltifiedPack(pack);
    if (idx === null) throw new Error("an undeltified pack could not be indexed");
    const name = Buffer.from(pack.subarray(pack.length - 20)).toString("hex");
    writeAtomic(join(dir, "objects", "pack", `pack-${name}.pack`), pack);
    writeAtomic(join(dir, "objects", "pack", `pack-${name}.idx`), idx);
    for (const oid of wanted) have.add(oid);
  }

  // The shallow boundary: every commit whose parent the repository lacks.
  const shallowFile = join(dir, "shallow");
  const shallow = new Set(existsSync(shallowFile) ? readFileSync(shallowFile, "latin1").split("\n").filter((l) => /^[0-9a-f]{40}$/.test(l)) : []);
  const boundary = oldest.parent !== null && !hasObject(dir, have, oldest.parent);
  if (boundary) shallow.add(oldest.commit);
  if (shallow.size > 0) writeAtomic(shallowFile, [...shallow].sort().map((l) => `${l}\n`).join(""));
  writeAtomic(join(dir, "refs", "heads", "main"), `${newest.commit}\n`);

  return {
    directory: dir,
    generation: newest.generation,
    oldestRetained: oldest.generation,
    added: commits.length,
    objects: wanted.length,
    shallow: boundary,
  };
}
