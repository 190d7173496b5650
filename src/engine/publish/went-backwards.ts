/**
 * A store that went backwards (docs/storage-protocol.md, "A store that went
 * backwards"): deleted, truncated, emptied, put back from an older copy,
 * replaced by another notebook, or named by a wrong --store. Merging with
 * such a store takes every file published since for a remote deletion or
 * revert, and the next commit publishes that for everyone. So a checkout
 * refuses a store that does not hold what its baseline names — the
 * generation, its commit, and the notebook's id — with STORAGE_INTEGRITY ·
 * HISTORY_INVALID, before any visible file changes; `attach` is the one
 * explicit way to go on with the store as it is.
 *
 * What counts is the baseline: what the checkout was brought to, which a
 * call moves only after the store acknowledged it (and, on the embedded
 * store, flushed it to disk), never what the checkout merely read. So a
 * power loss, which may take back only what nobody acted on, never makes a
 * checkout refuse its store.
 *
 * The baseline's commit is the commit at its generation in the accepted
 * history: every publication adds one to the generation and names the head
 * before it as its parent. So a store at that generation must show that
 * commit, and one beyond it must hold that commit that many parents back —
 * as far as the checkout's object cache reaches (the base pack holds the
 * newest 32 commits; history packs are not downloaded for this).
 */
import { DomainError } from "../../contract/errors.ts";
import type { AcceptedState } from "./accepted-state.ts";
import { checkoutStates } from "../checkout/registry.ts";
import { directoryIdentity, type DirectoryStat, sameDirectory } from "../checkout/directory-identity.ts";
import type { FlatTree, ObjectCache } from "../git/object-cache.ts";
import { decodeCommit } from "../git/objects.ts";
import type { Manifest } from "./manifest.ts";
import type { Baseline } from "../checkout/state-files.ts";

/** A notebook id as a person reads it: its first 8 hex digits. */
function short(notebook: string): string {
  return notebook.slice(0, 8);
}

/** What a checkout was brought to, in words: "generation 7 of notebook 3f2a9c1d". */
export function brought(baseline: Baseline): string {
  return `generation ${baseline.generation}${baseline.notebook !== undefined ? ` of notebook ${short(baseline.notebook)}` : ""}`;
}

/**
 * What the store shows that rules out `baseline`, in words that finish "the
 * store …"; null when `manifest` may hold it. Reads nothing: a later
 * generation's history is checked by `storeWentBackwards`.
 */
export function wentBackwards(baseline: Baseline | null, manifest: Manifest | null): string | null {
  if (baseline === null || baseline.generation === 0) return null;
  if (manifest === null) return "holds no notebook";
  const { generation } = manifest;
  if (baseline.notebook !== undefined && manifest.notebook === undefined) {
    // Every manifest written since the id was minted carries it, and binaries that know no id cannot write over one that has it.
    return `shows generation ${generation} without a notebook id, which every later manifest of this notebook carries: an older copy of it, or another notebook`;
  }
  if (baseline.notebook !== undefined && manifest.notebook !== baseline.notebook) {
    return `holds another notebook (${short(manifest.notebook!)}, at generation ${generation})`;
  }
  if (generation < baseline.generation) return `shows generation ${generation}`;
  if (generation === baseline.generation && manifest.head !== baseline.head) return `shows another generation ${generation} than the one this checkout saw`;
  return null;
}

/** The refusal of a store that went backwards: what was expected, what was found, and the two ways on. */
export function wentBackwardsError(baseline: Baseline, found: string): DomainError {
  return new DomainError(
    "HISTORY_INVALID",
    `The store went backwards: this checkout was brought to ${brought(baseline)}, but the store ${found}. ` +
      "It may have been deleted, emptied, replaced or put back from an older copy, or --store may name another notebook. Nothing was changed. " +
      "An operator puts the right store back, or runs slivingdoc attach on this checkout to keep its files as local edits against the store as it is.",
  );
}

/** Throw the refusal when `manifest` rules out `baseline` (wentBackwards). */
export function refuseWentBackwards(baseline: Baseline | null, manifest: Manifest | null): void {
  const found = wentBackwards(baseline, manifest);
  if (found !== null) throw wentBackwardsError(baseline!, found);
}

/** What a check needs of an open checkout (a session, checkout/session.ts). */
interface Checkout {
  dir: string;
  git: ObjectCache;
  baseline: Baseline | null;
  deps: { privateRoot: string; storeId: string; directoryStat?: DirectoryStat };
}

/**
 * The refusal `accepted` earns the checkout, or null when it holds the
 * checkout's baseline (or cannot be told not to). `accepted`'s packs are in
 * the cache: a later generation must hold the baseline's commit in its
 * history. A checkout never brought to a generation of this store is checked
 * against the other stores the same directory was a checkout of
 * (anotherNotebook).
 */
export async function storeWentBackwards(checkout: Checkout, accepted: AcceptedState): Promise<DomainError | null> {
  const { baseline } = checkout;
  if (baseline === null) return anotherNotebook(checkout, accepted.manifest);
  return historyWentBackwards(baseline, accepted.manifest, await historyAt(checkout.git, baseline, accepted));
}

/**
 * The commit `accepted`'s history holds at `baseline`'s generation, when
 * `accepted` is past it and the cache reaches that far; null when it is not
 * (or when its manifest alone rules the baseline out, which needs no read).
 */
export async function historyAt(git: Pick<ObjectCache, "find">, baseline: Baseline, accepted: AcceptedState): Promise<string | null> {
  const { head } = accepted;
  const later = baseline.generation > 0 && head !== null && accepted.generation > baseline.generation;
  return later && wentBackwards(baseline, accepted.manifest) === null ? await commitBack(git, head, accepted.generation - baseline.generation) : null;
}

/**
 * The refusal `manifest` earns `baseline`, given `at`, the commit the
 * store's history holds at the baseline's generation when it is known
 * (null: it is not, or the store is not past that generation).
 */
export function historyWentBackwards(baseline: Baseline, manifest: Manifest | null, at: string | null): DomainError | null {
  const found = wentBackwards(baseline, manifest);
  if (found !== null) return wentBackwardsError(baseline, found);
  if (at === null || at === baseline.head || manifest === null || manifest.generation <= baseline.generation) return null;
  return wentBackwardsError(baseline, `shows generation ${manifest.generation}, whose history does not pass through the generation ${baseline.generation} this checkout saw`);
}

/**
 * A directory pulled for the first time from this store that is a checkout
 * of another notebook through another store location (the same directory
 * keeps one baseline per store): a wrong --store. The same notebook through
 * another location (a moved store file), or a store without a notebook yet
 * (a notebook being moved to a new store), is no refusal; nor is anything
 * that cannot be told (no ids).
 */
function anotherNotebook(checkout: Checkout, manifest: Manifest | null): DomainError | null {
  if (manifest?.notebook === undefined) return null;
  let directory: string;
  try {
    directory = directoryIdentity(checkout.dir, checkout.deps.directoryStat !== undefined ? { stat: checkout.deps.directoryStat } : {});
  } catch {
    return null;
  }
  for (const other of checkoutStates(checkout.deps.privateRoot)) {
    const seen = other.baseline;
    if (other.checkout !== checkout.dir || other.store === checkout.deps.storeId || (other.directory === undefined || !sameDirectory(other.directory, directory))) continue;
    if (seen.generation === 0 || seen.notebook === undefined || seen.notebook === manifest.notebook) continue;
    return new DomainError(
      "HISTORY_INVALID",
      `The store holds another notebook: this directory is a checkout of ${brought(seen)} through another store location, ` +
        `and this store holds notebook ${short(manifest.notebook)} at generation ${manifest.generation}. Nothing was changed. ` +
        "Check --store; to make this directory a checkout of this store's notebook anyway, an operator runs slivingdoc attach on it, which keeps its files as local edits.",
    );
  }
  return null;
}

/**
 * The commit `back` first parents before `head`, as far as the cache holds
 * the history; null when it does not reach that far. Absences are expected
 * here (history packs are not downloaded), so they are not damage.
 */
export async function commitBack(git: Pick<ObjectCache, "find">, head: string, back: number): Promise<string | null> {
  let oid = head;
  for (let i = 0; i < back; i++) {
    const object = await git.find(oid);
    if (object === null || object.type !== "commit") return null;
    const parent = decodeCommit(object.object).parents[0];
    if (parent === undefined) return null;
    oid = parent;
  }
  return oid;
}

/**
 * The merge base when a checkout attaches to a store that went backwards:
 * the store's state when the checkout's own history passed through it (the
 * store was put back to an older copy, and nobody published since) — every
 * difference is then the checkout's, to publish, and nothing changes on
 * disk; else the empty tree, so that no file of the checkout's counts as
 * deleted by the store, and one that both hold with other content becomes a
 * conflict block.
 */
export async function attachBase(checkout: Checkout, accepted: AcceptedState): Promise<FlatTree> {
  const { baseline } = checkout;
  if (baseline === null || baseline.head === null || accepted.head === null || accepted.generation > baseline.generation) return new Map();
  if (baseline.notebook !== undefined && accepted.manifest?.notebook !== undefined && accepted.manifest.notebook !== baseline.notebook) return new Map();
  const at = await commitBack(checkout.git, baseline.head, baseline.generation - accepted.generation);
  return at === accepted.head ? accepted.files : new Map();
}
