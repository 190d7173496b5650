/**
 * A session's scan: the visible files into the session, their blobs kept
 * as the snapshot recovery needs, and the stat cache that spares reading
 * unchanged ones (scan.ts walks the directory; this keeps what it found).
 */
import type { OperationOutcome } from "../../contract/results.ts";
import type { FlatTree } from "../git/object-cache.ts";
import { blobId } from "../git/objects.ts";
import { lineCount } from "../merge/diffstat.ts";
import { droppedBytes } from "../memory/garbage.ts";
import { release } from "../memory/release.ts";
import { HeldPaths } from "./ignored.ts";
import { scanNotebook } from "./scan.ts";
import type { CheckoutSession } from "./session.ts";
import { baselineOrNothing } from "./session-baseline.ts";
import { StatCache } from "./stat-cache.ts";
import { scanWatched } from "./watched-scan.ts";

/**
 * Scan the visible files into the checkout, and keep their blobs as the
 * snapshot recovery needs. The stat cache spares reading files unchanged
 * since the last scan; `useCache: false` reads everything (a repair).
 * `held`: the files no ignore rule hides, once the call knows more of them
 * than the baseline's (a pull, the accepted state's).
 */
export async function scanLocal(checkout: CheckoutSession, useCache = true, held?: HeldPaths): Promise<void> {
  await checkout.deps.onStage("scan");
  checkout.held = held ?? checkout.held ?? new HeldPaths(await baselineOrNothing(checkout));
  const takenMs = checkout.deps.now().getTime();
  const cache = useCache ? checkout.state.loadStatCache() : StatCache.empty();
  const contents = new Map<string, Uint8Array>();
  let kept = 0;
  // Each file read is stored as it is read (a file that still hashes to its
  // recorded blob already is), and its bytes kept for the merge and the
  // marker check only up to a bound: the rest are read back from the object
  // cache, so a notebook is never in memory all at once.
  const absorb = (path: string, bytes: Uint8Array): string => {
    const oid = blobId(bytes);
    if (oid !== cache.recorded(path)) checkout.git.writeBlobNow(bytes, oid);
    // Counted while at hand: the diffstat of a file this call adds reads no blob back (a first commit's are all of them).
    checkout.lineCounts.set(oid, lineCount(bytes));
    if (kept + bytes.byteLength <= SCAN_KEEPS_BYTES && !contents.has(oid)) {
      contents.set(oid, bytes);
      kept += bytes.byteLength;
    } else release(bytes); // read for this alone (scan.ts): a big file's bytes are freed now, not at the next collection
    // The bytes read (unless kept) and their deflated loose copy, dead now.
    droppedBytes(bytes.byteLength);
    return oid;
  };
  const options = { known: cache.known, held: checkout.held, maxFileBytes: checkout.deps.maxFileBytes, absorb };
  // In a server, a watcher narrows the scan to what changed (watched-scan.ts); a repair reads everything.
  const watcher = useCache ? (checkout.deps.memory.watchers?.for(checkout.dir) ?? null) : null;
  const { files: scanned, ignored } =
    watcher === null ? scanNotebook(checkout.dir, options) : await scanWatched(watcher, { ...options, recorded: (path) => cache.recorded(path) }, checkout.deps);
  checkout.deps.progress?.("files scanned", scanned.size, scanned.size);
  checkout.ignored = ignored;
  const local: FlatTree = new Map();
  // Read again: files the cache could not vouch for. Changed: files whose
  // stamp or content differs from what the cache records, or that came or
  // went — what the cache must learn.
  let reread = false;
  let changed = Math.abs(cache.size - scanned.size);
  for (const [path, file] of scanned) {
    // Every file has its id: from the stat cache, or from `absorb` (`read`).
    const oid = file.oid!;
    local.set(path, oid);
    if (!("read" in file)) continue;
    reread = true;
    if (!cache.records(path, file.stamp, oid)) changed++;
  }
  checkout.local = local;
  checkout.localContents = contents;
  checkout.statCache = cache;
  // Nothing new: the cache, in memory and on disk, already says all of this.
  if (!reread && changed === 0) return;
  cache.recordScan(scanned, local, takenMs);
  rememberOrSave(checkout, changed);
}

/**
 * The bytes of files read by one scan kept in memory (localContents),
 * beyond which they are read back from the object cache. They stay alive
 * through the packing, where a big first commit peaks: 8 MiB rather than
 * 16 took a server's first commit of 50,000 files from 252 to 248 MB, and
 * still holds the files of any commit an agent makes by hand.
 */
export const SCAN_KEEPS_BYTES = 8 << 20;

/** An operation's outcome with how many entries its scan ignored, when any. */
export function withIgnoredCount(outcome: OperationOutcome, checkout: CheckoutSession): OperationOutcome {
  return checkout.ignored.length === 0 ? outcome : { ...outcome, ignored: checkout.ignored.length };
}

/**
 * A few changed entries (a warm call: the files just edited or pulled, or
 * racily clean ones re-stamped) go into the process's copy of the stat
 * cache only: rewriting the file for the whole notebook on every call cost
 * more than another process reading those files again. More are written at
 * once; the rest when the process ends (engine/process-memory.ts, flush).
 * The file on disk is right either way — an older one only trusts fewer
 * entries.
 */
export function rememberOrSave(checkout: CheckoutSession, changed: number): void {
  if (changed <= FEW_CHANGES) checkout.state.rememberStatCache(checkout.statCache);
  else checkout.state.saveStatCache(checkout.statCache);
}

const FEW_CHANGES = 32;

/** The bytes of a visible file as scanned: from memory when read this call, else from the object cache. */
export async function localBytes(checkout: CheckoutSession, path: string): Promise<Uint8Array> {
  const oid = checkout.local.get(path)!;
  return checkout.localContents.get(oid) ?? (await checkout.git.readBlob(oid));
}
