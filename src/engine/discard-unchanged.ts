/**
 * Throwing away a checkout whose files are exactly its baseline: for
 * `serve`'s session directory (docs/decisions/0004-checkouts-and-the-private-root.md),
 * which a session that pulled a notebook and changed nothing would
 * otherwise leave behind, full of files that are all in the store.
 *
 * The empty cases are checkout/discard.ts's. A checkout with files goes
 * only when nothing in it is unpublished: every visible file is the
 * baseline's, byte for byte, none is missing, no ignore rule left anything
 * out (an ignored file is never in the store), and no operation was
 * interrupted. It is read under the checkout's lock, then renamed aside —
 * after which no writer that names its path reaches it — and its files'
 * stamps are compared once more: a file written between the scan and the
 * rename puts it back where it was, kept.
 */
import { lstatSync, readdirSync, renameSync, rmSync } from "node:fs";
import { join } from "node:path";
import { discardIfNothingUnpublished } from "./checkout/discard.ts";
import { forgetCheckoutState } from "./checkout/registry.ts";
import { type FileStamp, stampOf } from "./checkout/scan.ts";
import type { EngineDeps } from "./engine.ts";
import type { FlatTree } from "./git/object-cache.ts";
import { type CheckoutRead, readUnderLock } from "./local-changes.ts";

/** How long a discard waits for another call's lock on the checkout: not long, since that call keeps it anyway. */
const DISCARD_LOCK_WAIT_MS = 2_000;

function sameFiles(a: FlatTree, b: FlatTree): boolean {
  if (a.size !== b.size) return false;
  for (const [path, oid] of a) if (b.get(path) !== oid) return false;
  return true;
}

const sameStamp = (a: FileStamp | undefined, b: FileStamp) => a !== undefined && a.size === b.size && a.mtimeMs === b.mtimeMs && a.ctimeMs === b.ctimeMs && a.ino === b.ino;

/** Whether the files under `dir` are exactly those of `stamps` (notebook paths), each with its stamp; directories count only for what they hold. */
function unchangedSince(dir: string, stamps: Map<string, FileStamp>): boolean {
  let seen = 0;
  const walk = (at: string, prefix: string): boolean => {
    for (const entry of readdirSync(at, { withFileTypes: true })) {
      const path = `${prefix}${entry.name}`;
      if (entry.isDirectory()) {
        if (!walk(join(at, entry.name), `${path}/`)) return false;
        continue;
      }
      seen++;
      if (!sameStamp(stamps.get(path), stampOf(lstatSync(join(at, entry.name))))) return false;
    }
    return true;
  };
  try {
    return walk(dir, "") && seen === stamps.size;
  } catch {
    return false;
  }
}

/** Whether what was read holds nothing a commit would publish, nor anything the store never had. */
function nothingUnpublished(read: CheckoutRead): boolean {
  return !read.interrupted && read.ignored.length === 0 && sameFiles(read.baselineFiles, read.local);
}

/** Rename the checkout aside, check it did not change since `read`, and remove it; or put it back. Runs under its lock. */
function removeChecked(deps: EngineDeps, dir: string, read: CheckoutRead): boolean {
  if (!nothingUnpublished(read)) return false;
  const aside = `${dir}.discarded-${deps.randomId(8)}`;
  // Where a test writes, as an agent still at work would, between the check and the rename.
  deps.onReplace?.(".", "checked");
  renameSync(dir, aside);
  if (!unchangedSince(aside, read.stamps)) {
    renameSync(aside, dir);
    return false;
  }
  rmSync(aside, { recursive: true, force: true });
  return true;
}

/**
 * Remove the checkout at `dir` (its real path) with its private state when
 * nothing in it is unpublished (above); returns whether it did. A checkout
 * it keeps is left as it was.
 */
export async function discardIfUnchanged(deps: EngineDeps, dir: string): Promise<boolean> {
  const target = { privateRoot: deps.privateRoot, storeId: deps.storeId, dir, randomId: deps.randomId };
  if (discardIfNothingUnpublished(target)) return true;
  let removed: boolean | undefined;
  try {
    removed = (await readUnderLock({ ...deps, lockTimeoutMs: DISCARD_LOCK_WAIT_MS }, dir, (read) => removeChecked(deps, dir, read))).kept;
  } catch {
    // Not readable, not a checkout, locked by another call, or a file that is no notebook content: kept.
    return false;
  }
  if (removed !== true) return false;
  // The state as the registry removes a gone checkout's: renamed aside first, so it is never read half-removed.
  forgetCheckoutState(deps.privateRoot, deps.storeId, dir, deps.randomId);
  return true;
}
