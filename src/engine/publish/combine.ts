/**
 * Combining (docs/storage-protocol.md, "Combining"): a commit that lost a
 * race posts what it had prepared — its commit and pack — as a proposal,
 * and whichever commit publishes next publishes the waiting proposals too,
 * each moved onto the state before it, in one conditional write. A loser
 * no longer redoes its whole publication round after round while fresh
 * commits win; the next publication carries it.
 *
 * Nothing here coordinates writers: a proposal is only an offer, and the
 * conditional write on `current` still decides every publication. What
 * keeps it safe:
 *
 * - a proposal lands exactly when a manifest lists its publication id in
 *   `combined` (with the generation it landed as), and every manifest
 *   keeps those entries for COMBINED_WINDOW generations;
 * - a combiner skips a proposal already listed there, one that expired
 *   (`until`: a proposal is offered for PROPOSAL_GENERATIONS generations),
 *   one that does not merge cleanly onto the state before it, and one
 *   that adds nothing;
 * - a proposer that gives up (a conflict, the retries spent, a call that
 *   died) withdraws: it deletes the proposal, then makes `current` move
 *   once (withdraw). A combiner that read the proposal before the
 *   deletion built on a state that is then gone, so its write loses; one
 *   that lists after it never sees the proposal. From then on the answer
 *   — landed at generation g, or not — is final.
 */
import { check, hex, type Infer, int, oneOf, refine, string, strictObject } from "../shapes/schema.ts";
import type { RandomSource } from "../../contract/clock.ts";
import { DomainError } from "../../contract/errors.ts";
import type { ObjectStore } from "../../store/object-store.ts";
import { type AcceptedState, fetchPacks, readManifest, rewriteCurrent } from "./accepted-state.ts";
import type { FlatTree, ObjectCache, ReadTree } from "../git/object-cache.ts";
import { MissingObjectError } from "../git/objects.ts";
import { COMBINED_WINDOW, type CombinedPublication, type Manifest, packKey } from "./manifest.ts";
import { mergeTrees, sameTree } from "../merge/tree-merge.ts";

export const PROPOSALS_PREFIX = "proposals/";
/**
 * For how many generations after its posting a proposal may be combined:
 * a few publications' worth even when each carries MOST_COMBINED. Half of
 * COMBINED_WINDOW, so that for as many generations again after it expired,
 * the list still tells whether it landed (fateOf).
 */
export const PROPOSAL_GENERATIONS = 96;
/** The most proposals one publication combines: bounds the work a winner does for others. */
const MOST_COMBINED = 16;

const ProposalSchema = refine(
  strictObject({
    format: oneOf(1),
    /** The publication id the proposer would have written; `combined` lists it once published. */
    publication: hex(32),
    /** The proposer's commit, with the parent it was built on. */
    head: hex(40),
    /** Its pack, already uploaded: the commit, its trees and new blobs. */
    pack: strictObject({ key: string(), size: int(1), sha256: hex(64) }),
    /** Combined only onto states of a lower generation. */
    until: int(1),
  }),
  (p) => (p.pack.key === packKey(p.pack.sha256) ? null : "pack key does not match its digest"),
);

export type Proposal = Infer<typeof ProposalSchema>;

export function proposalKey(publication: string): string {
  return `${PROPOSALS_PREFIX}${publication}`;
}

/**
 * What `manifest` says of a proposal: landed (where); "waiting" (it may
 * still be combined); "expired" (it did not land, and no write to come can
 * combine it); "unknown" — so long after it that its entry, had it landed,
 * would have left the list. An entry lands after the proposal's posting
 * (`until` − PROPOSAL_GENERATIONS) and stays listed for COMBINED_WINDOW
 * generations.
 */
export function fateOf(manifest: Manifest | null, proposal: { publication: string; until: number }): { landed: CombinedPublication } | "waiting" | "expired" | "unknown" {
  const at = combinedAt(manifest, proposal.publication);
  if (at !== null) return { landed: at };
  const generation = manifest?.generation ?? 0;
  if (generation < proposal.until) return "waiting";
  return generation <= proposal.until - PROPOSAL_GENERATIONS + COMBINED_WINDOW ? "expired" : "unknown";
}

/** Where `publication` landed by being combined, as `manifest` lists it; null when it does not. */
export function combinedAt(manifest: Manifest | null, publication: string): CombinedPublication | null {
  return manifest?.combined?.find((c) => c.publication === publication) ?? null;
}

/**
 * Offer a proposal. Create-only under its own publication id. An unknown
 * outcome counts as posted: the proposer withdraws it in the end either way.
 */
export async function postProposal(store: ObjectStore, proposal: Proposal): Promise<void> {
  try {
    await store.putIfAbsent(proposalKey(proposal.publication), new TextEncoder().encode(`${JSON.stringify(proposal)}\n`));
  } catch {
    // Not posted, or not known to be: either way nobody may be relying on it yet.
  }
}

/** The state after the proposals a publication combines, and what its pack must carry for them. */
export interface Carried {
  /** The state the proposals lead to: the parent of the combiner's own commit. */
  state: AcceptedState;
  /** Objects the accepted packs lack: the moved commits, their new trees and merged blobs. */
  objects: string[];
  combined: CombinedPublication[];
}

/**
 * Move the waiting proposals onto `accepted`, oldest first, each onto the
 * state before it; `own`, a proposal of this very commit, comes first and
 * is read from memory. A proposal that cannot be read, moved cleanly or
 * that adds nothing is left out.
 */
export async function combine(
  store: ObjectStore,
  git: ObjectCache,
  accepted: AcceptedState,
  own: Proposal | null,
  listed?: Listed,
): Promise<Carried> {
  const carried: Carried = { state: accepted, objects: [], combined: [] };
  const proposals = await waitingProposals(store, git, accepted, own, listed ?? (await listProposals(store)));
  if (proposals.length === 0) return carried;
  const knownTrees = new Set(accepted.trees);
  const knownBlobs = new Set(accepted.files.values());
  let state = accepted;
  for (const proposal of proposals) {
    const moved = await moveProposal(git, state, proposal).catch((e) => {
      if (e instanceof MissingObjectError) return null;
      throw e;
    });
    if (moved === null) continue;
    for (const t of moved.read.trees) if (!knownTrees.has(t)) (knownTrees.add(t), carried.objects.push(t));
    for (const b of moved.read.files.values()) if (!knownBlobs.has(b)) (knownBlobs.add(b), carried.objects.push(b));
    carried.objects.push(moved.head);
    const generation = state.generation + 1;
    carried.combined.push({ publication: proposal.publication, generation, head: moved.head });
    state = { ...state, generation, head: moved.head, tree: moved.read.tree, files: moved.read.files, trees: moved.read.trees, dirs: moved.read.dirs };
  }
  carried.state = state;
  return carried;
}

/** The proposals worth trying on `accepted`, `own` first, then oldest first; their packs imported. */
async function waitingProposals(store: ObjectStore, git: ObjectCache, accepted: AcceptedState, own: Proposal | null, listed: Listed): Promise<Proposal[]> {
  const done = new Set((accepted.manifest?.combined ?? []).map((c) => c.publication));
  const others = waitingInOrder(listed, accepted.manifest)
    .filter((key) => key !== (own && proposalKey(own.publication)))
    .map((key) => key.slice(PROPOSALS_PREFIX.length))
    .slice(0, MOST_COMBINED - (own ? 1 : 0));
  const read = await Promise.all(others.map((publication) => readProposal(store, publication)));
  const candidates = [...(own ? [own] : []), ...read.filter((p): p is Proposal => p !== null)].filter(
    // Not expired; and never offered for longer than any writer offers: the
    // combined list would forget it while it could still be combined again.
    (p) => !done.has(p.publication) && p.until > accepted.generation && p.until <= accepted.generation + PROPOSAL_GENERATIONS,
  );
  const usable: Proposal[] = [];
  await Promise.all(
    candidates.map(async (p) => {
      try {
        await fetchPacks(store, git, [p.pack], "a proposal");
        usable.push(p);
      } catch {
        // A pack gone or damaged: that proposal is not combined.
      }
    }),
  );
  return candidates.filter((p) => usable.includes(p));
}

/** The keys of the listed proposals `manifest` has not published, in the order a combiner takes them: oldest first. */
export function waitingInOrder(listed: Listed, manifest: Manifest | null): string[] {
  const done = new Set((manifest?.combined ?? []).map((c) => c.publication));
  return listed
    .filter((o) => !done.has(o.key.slice(PROPOSALS_PREFIX.length)))
    .sort((a, b) => a.modified.getTime() - b.modified.getTime() || (a.key < b.key ? -1 : 1))
    .map((o) => o.key);
}

/** The proposals in the store, as listed. */
export type Listed = Array<{ key: string; modified: Date }>;

/** List the proposals; none when the listing fails (combining is an optimisation). */
export async function listProposals(store: ObjectStore): Promise<Listed> {
  try {
    return await store.list(PROPOSALS_PREFIX);
  } catch {
    return [];
  }
}

/** Whether `listed` holds a proposal that `accepted` has not published yet. */
export function othersWaiting(listed: Listed, accepted: AcceptedState): boolean {
  return waitingInOrder(listed, accepted.manifest).length > 0;
}

async function readProposal(store: ObjectStore, publication: string): Promise<Proposal | null> {
  try {
    const object = await store.get(proposalKey(publication));
    if (object === null) return null;
    const parsed = check(ProposalSchema, JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(object.body)), "proposal");
    return parsed.ok && parsed.value.publication === publication ? parsed.value : null;
  } catch {
    return null;
  }
}

/** The proposal's files merged onto `state`'s: null when they do not merge cleanly or add nothing — then no combiner carries it. */
async function mergedOnto(git: ObjectCache, state: AcceptedState, proposal: Pick<Proposal, "head">): Promise<FlatTree | null> {
  const parent = await git.commitParent(proposal.head);
  const base: FlatTree = parent === null ? new Map() : (await git.readFlatTree(await git.commitTree(parent))).files;
  const theirs = (await git.readFlatTree(await git.commitTree(proposal.head))).files;
  const merge = await mergeTrees(git, base, theirs, state.files);
  return merge.conflicts.length > 0 || sameTree(merge.result, state.files) ? null : merge.result;
}

/** Whether a combiner building on `state` would carry the proposal: it merges cleanly and adds something. */
export async function carriable(git: ObjectCache, state: AcceptedState, proposal: Pick<Proposal, "head">): Promise<boolean> {
  return (await mergedOnto(git, state, proposal)) !== null;
}

/** The proposal's commit moved onto `state`: null when it does not merge cleanly or adds nothing. */
async function moveProposal(git: ObjectCache, state: AcceptedState, proposal: Proposal): Promise<{ head: string; read: ReadTree } | null> {
  const merged = await mergedOnto(git, state, proposal);
  if (merged === null) return null;
  const from = state.tree === null ? undefined : { tree: state.tree, files: state.files, trees: state.trees, dirs: state.dirs };
  const built = await git.writeFlatTree(merged, from);
  const head = await git.rebaseCommit(proposal.head, built.tree, state.head);
  if (head === null) return null;
  return { head, read: { ...built, files: merged } };
}

export type Withdrawn = { landed: CombinedPublication | null | "unknown" };

/**
 * Take a proposal back and learn, for good, whether it landed: delete it,
 * then see `current` move once after the deletion — by itself, or by our
 * writing it again with a fresh publication id (as gc's fence does; for
 * readers nothing happens). Then `combined` says: where it landed, or null. When the store cannot be brought to answer,
 * STORAGE_FAILURE · PUBLICATION_UNPROVEN: the caller keeps its record, and
 * the next call withdraws again.
 */
export async function withdraw(store: ObjectStore, proposal: { publication: string; until: number }, randomId: RandomSource["randomId"]): Promise<Withdrawn> {
  const unproven = (cause?: unknown) =>
    new DomainError(
      "PUBLICATION_UNPROVEN",
      "A commit's offer to be published with another could not be taken back nor proved published; pull first and look before committing again.",
      { cause },
    );
  try {
    await store.delete(proposalKey(proposal.publication));
  } catch (cause) {
    throw unproven(cause);
  }
  for (let attempt = 0; attempt < 3; attempt++) {
    let read;
    try {
      read = await readManifest(store);
    } catch (cause) {
      throw unproven(cause);
    }
    const { manifest, etag } = read;
    const fate = fateOf(manifest, proposal);
    if (typeof fate === "object") return fate;
    // Past the proposal's last generation: no write to come can combine it.
    if (fate === "expired") return { landed: null };
    if (fate === "unknown") return { landed: "unknown" };
    if (manifest === null || etag === null) return { landed: null };
    let moved;
    try {
      moved = await rewriteCurrent(store, manifest, etag, randomId);
    } catch (cause) {
      throw unproven(cause);
    }
    if (moved.written) return { landed: null };
    // Lost or unknown: if `current` moved since our read, by anyone, that is the move we need.
    let now;
    try {
      now = await readManifest(store);
    } catch (cause) {
      throw unproven(cause);
    }
    if (now.etag !== etag) {
      const fate = fateOf(now.manifest, proposal);
      return typeof fate === "object" ? fate : { landed: fate === "unknown" ? "unknown" : null };
    }
  }
  throw unproven();
}

/** Delete a proposal that is no longer needed (it landed); a leftover is only litter for gc. */
export function dropProposal(store: ObjectStore, publication: string): void {
  store.delete(proposalKey(publication)).catch(() => {});
}
