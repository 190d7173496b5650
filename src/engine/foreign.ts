/**
 * A directory of files that are nothing of the notebook's. A first pull
 * makes every file it finds a local edit, and the next commit publishes
 * them: `slivingdoc pull ~` would publish a home directory, `.aws/credentials`
 * included. So a first pull into a directory that holds files, was never a
 * checkout, and whose files match nothing of the retained history is
 * refused unless the caller says the files are theirs to publish (`--adopt`),
 * as `git clone` refuses a directory that is not empty. One whose files
 * match a retained generation was a checkout (a copy, a lost volume, lost
 * state) and is pulled as one (pull.ts, lostBase).
 */
import { existsSync } from "node:fs";
import { join } from "node:path";
import type { EngineDeps } from "./engine.ts";
import { directoryIdentity } from "./checkout/directory-identity.ts";
import { HeldPaths } from "./checkout/ignored.ts";
import { isAtOrBelow } from "../contract/path-containment.ts";
import { checkoutStateDir, checkoutStates, hasSetAside } from "./checkout/registry.ts";
import { MAX_FILE_BYTES, scanNotebook } from "./checkout/scan.ts";
import type { FlatTree } from "./git/object-cache.ts";
import { blobId } from "./git/objects.ts";
import { closestGeneration } from "./history/base.ts";
import { withHistory } from "./history/read.ts";

/**
 * A first pull refused: the directory holds `count` entries, and none of
 * its files is in the notebook's retained history (`notebookEmpty`: the
 * store holds no notebook yet, so nothing could match); it was never a
 * checkout. Nothing was written.
 */
export class ForeignFiles extends Error {
  override readonly name = "ForeignFiles";
  constructor(
    readonly count: number,
    readonly notebookEmpty: boolean,
  ) {
    super(`the directory holds ${count} files that match nothing of the notebook's history`);
  }
}

/**
 * Whether the directory `dir` (a real path) is one a first pull refuses,
 * judged without taking it as a checkout: `serve` asks this of its
 * workspace root at start. Any state under the private root — its own,
 * damaged or not, or one set aside for this directory — says it was a
 * checkout (knownToPrivateRoot).
 */
export async function foreignFiles(deps: EngineDeps, dir: string): Promise<ForeignFiles | null> {
  const stateDir = checkoutStateDir(deps.privateRoot, deps.storeId, dir);
  if (existsSync(join(stateDir, "state.json")) || hasSetAside(deps.privateRoot, deps.storeId, stateDir, directoryIdentity(dir))) return null;
  if (knownToPrivateRoot(deps, dir)) return null;
  return foreignContent(deps, dir);
}

/**
 * Whether the private root knows `dir` as a checkout's place: a state set
 * aside from this path (the checkout removed and made again, another
 * volume mounted here); a checkout here of another store, which the pull
 * refuses for what it is (a wrong --store: went-backwards.ts); or
 * checkouts below it — a workspace root that holds agents' checkouts,
 * whose files are theirs, and which can never be pulled itself (a
 * checkout never holds another).
 */
export function knownToPrivateRoot(deps: Pick<EngineDeps, "privateRoot">, dir: string): boolean {
  return checkoutStates(deps.privateRoot).some((state) => isAtOrBelow(dir, state.checkout));
}

/**
 * ForeignFiles for the directory `dir`, which has no checkout state, when
 * it holds files and none of them is exactly in any retained generation;
 * else null. Entries no notebook may hold (a binary, a symlink) are counted
 * but decide nothing: they can never be published, and the pull refuses
 * them by name. An empty directory never reads the history.
 */
export async function foreignContent(deps: EngineDeps, dir: string): Promise<ForeignFiles | null> {
  const scanned = scanNotebook(dir, { held: new HeldPaths(), maxFileBytes: deps.maxFileBytes ?? MAX_FILE_BYTES, absorb: (_path, bytes) => blobId(bytes), countInvalid: true });
  const local: FlatTree = new Map([...scanned.files].map(([path, file]) => [path, file.oid!]));
  if (local.size === 0) return null;
  const count = local.size + (scanned.invalid ?? 0);
  return withHistory(deps, async (history) => ((await closestGeneration(history, local)) === null ? new ForeignFiles(count, history.publications.length === 0) : null));
}
