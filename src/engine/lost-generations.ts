/**
 * Whether the packs gc is about to delete hold generations the store lost
 * (docs/storage-protocol.md, "A store that went backwards"). A store put
 * back to an older `current`, or whose `current` was deleted and begun
 * again, still holds the packs of the generations it lost, named by no
 * manifest — exactly what gc deletes. They may be the only copy of those
 * generations in the store, and what an operator needs to put it right. So
 * before deleting, gc looks for them: it refuses (STORAGE_INTEGRITY ·
 * HISTORY_INVALID) when it finds the store went backwards, and keeps what
 * it cannot tell from a lost generation — unless an operator said the store
 * as it is stands (`gc --delete-lost`).
 *
 * The hard part is that the orphan of a lost race also holds a commit no
 * manifest names, built on an accepted one — as does the first generation
 * after a rewind. What tells them apart:
 *
 * 1. A checkout under gc's own private root, of this store, brought to a
 *    state the store no longer holds (went-backwards.ts): no notebook, an
 *    older generation, another notebook, another commit at its generation.
 *    Refused.
 * 2. Lost commits built one on another, in different packs, onto the
 *    retained history: later generations of a store that went back (and
 *    perhaps on). One writer's lost attempt holds a chain only inside its
 *    own pack (the proposals it combined, then its own commit). Refused.
 * 3. The same, onto a first generation that is not this notebook's, when
 *    the retained history reaches back to its own first generation: another
 *    notebook's history, left at the same place. Refused.
 * 4. A lost commit built on the accepted head: the first generation of a
 *    store put back to an older `current` by one generation — or a commit
 *    in flight, or one that died between its upload and its publication
 *    (a lost race is built on a head that another publication replaced).
 *    Kept, not refused: gc cannot tell, and a writer in flight is common.
 *    Once anything is published after it, it is a lost race to look at.
 *
 * 5. A lost commit that a checkout under gc's private root (live or set
 *    aside) was brought to, however far the store moved on past its
 *    generation: that checkout refuses the store, and its packs (with the
 *    lost commits below it) may be what an operator puts it right with.
 *    Kept, and counted apart, not refused: gc cannot tell it from history
 *    that aged out of the retained history under a checkout left alone
 *    that long — which its next pull releases.
 *
 * A "lost commit" is one in a pack gc would delete that the retained
 * history does not hold. What gc cannot tell, and so deletes, when no
 * checkout under its private root was brought to it (checkouts under other
 * private roots are unknown to gc): one lost generation on a store that
 * went back and then on (a lost race to look at), lost generations folded
 * into one pack by a compaction, and histories that no longer meet the
 * retained one (older than the history period). Checkouts refuse such a
 * store all the same; their object caches and files keep what they saw.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { RandomSource } from "../contract/clock.ts";
import { DomainError } from "../contract/errors.ts";
import type { ObjectStore } from "../store/object-store.ts";
import { checkoutStates } from "./checkout/registry.ts";
import { ObjectCache } from "./git/object-cache.ts";
import { BadPackError, decodeCommit } from "./git/objects.ts";
import { closeHistory, openHistory } from "./history/read.ts";
import type { Manifest } from "./publish/manifest.ts";
import { ProcessMemory } from "./process-memory.ts";
import type { Baseline } from "./checkout/state-files.ts";
import { brought, wentBackwards } from "./publish/went-backwards.ts";

/** Where gc reads the retained history (the history commands' cache) and finds the checkouts it knows of. */
export interface GcLocal {
  privateRoot: string;
  storeId: string;
  memory: ProcessMemory;
}

function lostError(evidence: string): DomainError {
  return new DomainError(
    "HISTORY_INVALID",
    `The store went backwards: ${evidence}. gc deleted nothing: those packs may hold the only copy in the store of what it lost. ` +
      "An operator puts the right store back; or, once the store as it is stands (its checkouts attached to it), runs slivingdoc gc --delete-lost to delete them too.",
  );
}

/**
 * What the checkouts under the private root were brought to, of this
 * store. Read before `current`, so that none can have seen a publication
 * that the manifest read after it lacks.
 */
export function checkoutBaselines(local: GcLocal | undefined): Baseline[] {
  if (local === undefined) return [];
  return checkoutStates(local.privateRoot)
    .filter((s) => s.store === local.storeId)
    .map((s) => s.baseline);
}

/** The candidates gc keeps: those it cannot tell from a generation the store lost (the header's 4), and those holding what a checkout was brought to (its 5). */
export interface LostKept {
  onHead: Set<string>;
  checkoutBaselines: Set<string>;
}

/**
 * Refuse when the checkouts' `baselines` or the `candidates` (pack keys gc
 * would delete) show that the store went backwards from `manifest` (the
 * manifest gc read); else the candidates to keep.
 */
export async function lostGenerations(
  deps: { store: ObjectStore; local?: GcLocal } & Pick<RandomSource, "randomId">,
  manifest: Manifest,
  candidates: string[],
  baselines: Baseline[],
): Promise<LostKept> {
  const { store, local, randomId } = deps;
  for (const baseline of baselines) {
    const found = wentBackwards(baseline, manifest);
    if (found !== null) throw lostError(`a checkout under this private root was brought to ${brought(baseline)}, but the store ${found}`);
  }
  if (candidates.length === 0) return { onHead: new Set(), checkoutBaselines: new Set() };
  const scratch = mkdtempSync(join(tmpdir(), "slivingdoc-gc-"));
  const memory = local?.memory ?? new ProcessMemory(deps);
  const history = await openHistory({ store, storeId: local?.storeId ?? "gc", privateRoot: local?.privateRoot ?? scratch, memory, randomId });
  try {
    const retained = new Set(history.publications.map((p) => p.commit));
    const lost = await lostCommits(store, candidates, retained, join(scratch, "git"), memory, randomId);
    const onHead = judge(lost, retained, manifest, history.boundary === null);
    const brought = packsOf(lost, baselines);
    return { onHead: new Set([...onHead].filter((pack) => !brought.has(pack))), checkoutBaselines: brought };
  } finally {
    closeHistory(history);
    rmSync(scratch, { recursive: true, force: true });
  }
}

/** A commit no manifest's history holds: its parent, and the packs it is in. */
interface Lost {
  parent: string | null;
  packs: Set<string>;
}

/** The commits in the candidate packs that the retained history does not hold. A pack that is not one holds nothing to lose. */
async function lostCommits(
  store: ObjectStore,
  candidates: string[],
  retained: Set<string>,
  gitdir: string,
  memory: ProcessMemory,
  randomId: RandomSource["randomId"],
): Promise<Map<string, Lost>> {
  const git = await ObjectCache.open(gitdir, memory.objects, randomId);
  const lost = new Map<string, Lost>();
  try {
    for (const key of candidates) {
      const sha256 = /^packs\/([0-9a-f]{64})\.pack$/.exec(key)![1]!;
      let object;
      try {
        object = await store.get(key);
      } catch (cause) {
        throw new DomainError("PACK_DOWNLOAD", "A pack gc was to delete could not be read to tell whether the store lost it; nothing was deleted.", { cause });
      }
      if (object === null) continue;
      try {
        await git.importPack(sha256, object.body);
      } catch (e) {
        if (e instanceof BadPackError) continue;
        throw e;
      }
      for (const oid of git.packObjectIds(sha256)) {
        if (retained.has(oid)) continue;
        const found = await git.find(oid);
        if (found?.type !== "commit") continue;
        const entry = lost.get(oid) ?? { parent: decodeCommit(found.object).parents[0] ?? null, packs: new Set<string>() };
        entry.packs.add(key);
        lost.set(oid, entry);
      }
    }
  } finally {
    git.close();
  }
  return lost;
}

/** Refuse on the header's 2 and 3; the packs to keep for its 4. */
function judge(lost: Map<string, Lost>, retained: Set<string>, manifest: Manifest, fromFirst: boolean): Set<string> {
  const chains = [...lost.keys()].map((commit) => chainOf(lost, commit));
  // Inside one pack, a chain is one writer's lost attempt (the proposals it combined, then its own commit).
  const acrossPacks = chains.filter(({ chain }) => chain.length >= 2 && ![...lost.get(chain[0]!)!.packs].some((pack) => chain.every((c) => lost.get(c)!.packs.has(pack))));
  if (acrossPacks.some(({ base }) => base !== null && retained.has(base))) {
    throw lostError("packs no manifest names hold commits built one on another onto the retained history: generations the store lost");
  }
  if (fromFirst && acrossPacks.some(({ base }) => base === null)) {
    throw lostError("packs no manifest names hold the history of another notebook, left at the same place");
  }
  const kept = new Set<string>();
  for (const { chain, base } of chains) if (base === manifest.head) for (const c of chain) for (const pack of lost.get(c)!.packs) kept.add(pack);
  return kept;
}

/**
 * The packs of the lost commits a checkout was brought to, and of the lost
 * commits below them (the header's 5): the checkout's generation whole.
 */
function packsOf(lost: Map<string, Lost>, baselines: Baseline[]): Set<string> {
  const kept = new Set<string>();
  for (const { head } of baselines) {
    if (head === null || !lost.has(head)) continue;
    for (const c of chainOf(lost, head).chain) for (const pack of lost.get(c)!.packs) kept.add(pack);
  }
  return kept;
}

/** The lost commits down from `commit`, and the commit they are built on (null: a first generation; or one gc does not know). */
function chainOf(lost: Map<string, Lost>, commit: string): { chain: string[]; base: string | null } {
  const chain = [commit];
  const seen = new Set(chain);
  let base = lost.get(commit)!.parent;
  while (base !== null && lost.has(base) && !seen.has(base)) {
    chain.push(base);
    seen.add(base);
    base = lost.get(base)!.parent;
  }
  return { chain, base };
}
