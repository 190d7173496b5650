/**
 * pull: bring the accepted state into the visible directory without losing
 * unpublished edits. The merge's sides: the baseline, the local (visible)
 * files, and the accepted state; the merge result is written, conflicts with git's markers,
 * and the baseline moves to the accepted state.
 */
import type { DomainError } from "../contract/errors.ts";
import type { OperationOutcome } from "../contract/results.ts";
import { type AcceptedState, loadAcceptedState, type ManifestRead, readManifest, rememberAccepted } from "./publish/accepted-state.ts";
import { treeDiffStat } from "./merge/diffstat.ts";
import { BaselineMissing, baselineFiles } from "./checkout/session-baseline.ts";
import { bringFiles, refuseOversizeAccepted } from "./checkout/session-materialize.ts";
import { scanLocal, withIgnoredCount } from "./checkout/session-scan.ts";
import type { EngineDeps } from "./engine.ts";
import { type OpenCheckout, withCheckout } from "./with-checkout.ts";
import type { FlatTree } from "./git/object-cache.ts";
import { MissingObjectError } from "./git/objects.ts";
import { mergeTrees, type TreeMerge } from "./merge/tree-merge.ts";
import { conflictError } from "./merge/conflict.ts";
import { HeldPaths } from "./checkout/ignored.ts";
import { takeAcceptedSide } from "./protect.ts";
import { attachBase, refuseWentBackwards, storeWentBackwards } from "./publish/went-backwards.ts";
import { replaceDamagedManifest } from "./publish/damaged-manifest.ts";
import { closestGeneration } from "./history/base.ts";
import { foreignContent, knownToPrivateRoot } from "./foreign.ts";
import { type History, readHistoryBlob, withHistory } from "./history/read.ts";
import type { ObjectCache } from "./git/object-cache.ts";

export interface PullInput {
  /** The notebook directory. */
  path: string;
  /**
   * Refuse (foreign.ts, ForeignFiles) a first pull into a directory that
   * holds files, was never a checkout, and whose files match nothing of the
   * retained history: its files would all be local edits, and the next
   * commit would publish them. The surfaces decide: the CLI refuses unless told `--adopt`; serve
   * judges its workspace root once, at start, and its tools' pulls adopt.
   */
  refuseForeign?: boolean;
}

export async function pull(deps: EngineDeps, input: PullInput): Promise<OperationOutcome> {
  return (await pullOrAttach(deps, input.path, false, input.refuseForeign === true)).outcome;
}

/**
 * A pull that takes the store as it is, should it have gone backwards
 * (went-backwards.ts): the baseline moves to the store's state, and the
 * files stay local edits against it, merged against the store's state when
 * the checkout's history passed through it, else against nothing (attachBase).
 * `attached` says whether it went backwards; if not, this was a plain pull.
 */
export async function attach(deps: EngineDeps, input: AttachInput): Promise<{ outcome: OperationOutcome; attached: boolean; movedAside: string | null }> {
  // Before the checkout opens: settling a recorded publication reads `current` too.
  const movedAside = input.replaceDamagedManifest === true ? await replaceDamagedManifest(deps.store, deps.now) : null;
  return { ...(await pullOrAttach(deps, input.path, true, false)), movedAside };
}

export interface AttachInput extends PullInput {
  /**
   * Move a damaged `current` aside first, and so take the store as one
   * emptied (publish/damaged-manifest.ts). Without it a damaged manifest is
   * refused, as by every command.
   */
  replaceDamagedManifest?: boolean;
}

async function pullOrAttach(deps: EngineDeps, path: string, attaching: boolean, refuseForeign: boolean): Promise<{ outcome: OperationOutcome; attached: boolean }> {
  return withCheckout(deps, path, { create: true, attach: attaching }, async (checkout) => {
    // Before the scan, which would refuse a binary by name: that one can never be published, the rest could.
    if (refuseForeign && checkout.baseline === null && checkout.lost === null && !knownToPrivateRoot(checkout.deps, checkout.dir)) {
      const foreign = await foreignContent(checkout.deps, checkout.dir);
      if (foreign !== null) throw foreign;
    }
    const current = await readCurrentDuringScan(checkout);
    const fetched = await fetchAccepted(checkout, attaching, current);
    await checkout.deps.onStage("merge");
    const { accepted, baselineTree } = await pullBase(checkout, fetched);
    await refuseOversizeAccepted(checkout, baselineTree, accepted.files);
    await holdAccepted(checkout, baselineTree, accepted.files);
    const { backwards } = fetched;
    // Protected paths take the remote's side before the merge, so they never
    // conflict: the process may not change them anyway. Not in an attach,
    // which keeps every file: the store lost what they hold.
    const protect = (files: FlatTree) => (backwards !== null ? files : takeAcceptedSide(files, accepted.files, checkout.deps.pathSets));
    const merge = await pullMerge(checkout, baselineTree, accepted, protect);
    const notebook = accepted.manifest?.notebook;
    const target = { generation: accepted.generation, head: accepted.head, tree: accepted.tree, ...(notebook !== undefined ? { notebook } : {}) };
    const scanned = checkout.local;
    const done = await bringFiles(checkout, merge, target, accepted.files, { operation: "pull", remoteAccepted: "no" }, baselineTree, { prepare: protect, conflicts: "write" });
    if (done.conflicts.length > 0) throw conflictError(done.conflicts, "pull");
    await checkout.deps.onStage("diffstat");
    const files = await treeDiffStat(checkout.git, scanned, done.result, checkout.lineCounts);
    return { outcome: withIgnoredCount({ path: checkout.dir, generation: accepted.generation, files }, checkout), attached: backwards !== null };
  });
}

/**
 * No ignore rule hides a file the accepted state holds: a local file that
 * the scan left out, at a path the pull brings, is local content after all
 * — scanned again, so the merge keeps both sides rather than write over it.
 */
async function holdAccepted(checkout: OpenCheckout, baselineTree: FlatTree, acceptedFiles: FlatTree): Promise<void> {
  const held = new HeldPaths(baselineTree, acceptedFiles);
  if (held.holdsAnyOf(checkout.ignored)) await scanLocal(checkout, true, held);
  else checkout.held = held;
}

/**
 * Scan the notebook while `current` is read: the scan is local work that
 * does not need it, and a store behind a network answers in a round trip
 * the scan would otherwise come before (docs/performance.md, scenario `warm-pull` at 20 ms).
 * The request is sent first and given a turn of the event loop to be on
 * its way; the scan, which runs without yielding, then takes its time
 * beside it. The scan's refusals still come first; a failed read is
 * awaited (and thrown) only after.
 */
async function readCurrentDuringScan(checkout: OpenCheckout): Promise<ManifestRead> {
  const reading = readManifest(checkout.deps.store);
  reading.catch(() => {}); // awaited below; a scan that throws first leaves it unheard
  await checkout.deps.sleep(0);
  await scanLocal(checkout);
  return reading;
}

/** The accepted state from `current` as `read`, and whether the store went backwards from the checkout (refused unless `attaching`). */
async function fetchAccepted(checkout: OpenCheckout, attaching: boolean, read: ManifestRead): Promise<{ accepted: AcceptedState; backwards: DomainError | null }> {
  await checkout.deps.onStage("fetch");
  // What `current` alone says of a store that went backwards is refused before any pack is read.
  if (!attaching) refuseWentBackwards(checkout.baseline, read.manifest);
  // Fetching first also repairs a cache that lost accepted history, so a
  // baseline that was once accepted can be read again below.
  const accepted = await loadAcceptedState(checkout.deps.store, checkout.git, read);
  const backwards = await storeWentBackwards(checkout, accepted);
  if (backwards !== null && !attaching) throw backwards;
  rememberAccepted(checkout.deps.memory, checkout.deps.storeId, accepted);
  return { accepted, backwards };
}

/**
 * The merge's base: the baseline's files, or the store's own in an attach
 * (attachBase). A baseline the cache cannot produce is downloaded again with
 * the accepted packs, since it was once accepted and is in them; `accepted`
 * is then read afresh.
 */
async function pullBase(
  checkout: OpenCheckout,
  fetched: { accepted: AcceptedState; backwards: DomainError | null },
): Promise<{ accepted: AcceptedState; baselineTree: FlatTree }> {
  try {
    const baselineTree =
      fetched.backwards !== null
        ? await attachBase(checkout, fetched.accepted)
        : checkout.baseline === null
          ? await lostBase(checkout, fetched.accepted)
          : await baselineFiles(checkout);
    return { accepted: fetched.accepted, baselineTree };
  } catch (e) {
    if (!(e instanceof BaselineMissing)) throw e;
  }
  await checkout.git.dropPacks();
  const accepted = await loadAcceptedState(checkout.deps.store, checkout.git);
  const reread = await storeWentBackwards(checkout, accepted);
  if (reread !== null) throw reread;
  try {
    return { accepted, baselineTree: await baselineFiles(checkout) };
  } catch (again) {
    // Gone for good (compacted away): merge against nothing. Every
    // differing file becomes a conflict block; nothing is lost.
    if (!(again instanceof BaselineMissing)) throw again;
    return { accepted, baselineTree: new Map() };
  }
}

/**
 * The base of a checkout without a baseline — never pulled here, or its
 * private state gone or damaged — is the retained generation its files
 * agree with most (history/base.ts), or nothing when none matches. Only
 * read when a visible file differs from the accepted state: otherwise every
 * file already is the notebook's, and a cold pull into an empty directory
 * never reads the history.
 */
async function lostBase(checkout: OpenCheckout, accepted: AcceptedState): Promise<FlatTree> {
  const local = checkout.local;
  if (![...local].some(([path, oid]) => accepted.files.get(path) !== oid)) return new Map();
  return withHistory(checkout.deps, async (history) => {
    const found = await closestGeneration(history, local);
    if (found === null) return new Map();
    await copyBaseBlobs(history, checkout.git, found.files, local, accepted.files);
    return found.files;
  });
}

/**
 * The base's blobs the merge reads — where it differs from both sides, so
 * that both changed the file — copied from the history cache into the
 * checkout's, which has only what pulls need.
 */
async function copyBaseBlobs(history: History, git: ObjectCache, base: FlatTree, local: FlatTree, accepted: FlatTree): Promise<void> {
  for (const [path, oid] of base) {
    if (oid === local.get(path) || oid === accepted.get(path) || (await git.has(oid))) continue;
    await git.writeBlob(await readHistoryBlob(history, oid));
  }
}

/**
 * The three-way merge of the base, the visible files as `protect` gives
 * them, and the accepted state. An object the cache lost: read every
 * visible file again (the stat cache was forgotten), and merge against
 * nothing if the baseline's files are what is missing.
 */
async function pullMerge(checkout: OpenCheckout, baselineTree: FlatTree, accepted: AcceptedState, protect: (files: FlatTree) => FlatTree): Promise<TreeMerge> {
  try {
    return await mergeTrees(checkout.git, baselineTree, protect(checkout.local), accepted.files, checkout.localContents);
  } catch (e) {
    if (!(e instanceof MissingObjectError)) throw e;
  }
  await scanLocal(checkout, false);
  const again = protect(checkout.local);
  try {
    return await mergeTrees(checkout.git, baselineTree, again, accepted.files, checkout.localContents);
  } catch (e2) {
    if (!(e2 instanceof MissingObjectError)) throw e2;
    return await mergeTrees(checkout.git, new Map(), again, accepted.files, checkout.localContents);
  }
}
