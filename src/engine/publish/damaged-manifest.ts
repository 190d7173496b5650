/**
 * A damaged `current` (docs/storage-protocol.md, "A damaged manifest"):
 * empty, truncated, not JSON, or failing strict validation. Every command
 * refuses it (STORAGE_INTEGRITY · MANIFEST_INVALID), and none may take it
 * for anything: it names the accepted state, and a guess at what it meant
 * could publish over what everyone else holds. The one way on through the
 * tool is an operator's `attach --replace-damaged-manifest`: the damaged
 * manifest is moved aside, under a name of its own beside `current`, and
 * the store is then one emptied — the attach keeps every file of the
 * checkout as a local edit, and its next commit starts the notebook again
 * under a new notebook id (the store went backwards for every other
 * checkout, which an attach of its own brings along).
 *
 * A manifest of a newer format than this version reads is no damage: it is
 * refused, never moved aside.
 */
import type { Clock } from "../../contract/clock.ts";
import { DomainError } from "../../contract/errors.ts";
import type { ObjectStore } from "../../store/object-store.ts";
import { readCurrentObject } from "./accepted-state.ts";
import { NewerStoreFormat } from "../../contract/store-formats.ts";
import { MANIFEST_KEY, parseManifest } from "./manifest.ts";

/** Where a damaged manifest goes: `current.damaged-<UTC time>`, beside `current`. */
export const DAMAGED_PREFIX = `${MANIFEST_KEY}.damaged-`;

/** How many times `current` may change under the move before it gives up: only people change a damaged one. */
const TRIES = 3;

/**
 * Move `current` aside when it is damaged: copied create-only to a name of
 * its own, then deleted, once it still is the copy. The name it was moved
 * to; null when there was nothing to move (absent, or a valid manifest).
 */
export async function replaceDamagedManifest(store: ObjectStore, now: Clock["now"]): Promise<string | null> {
  for (let tries = 0; tries < TRIES; tries++) {
    const damaged = await damagedCurrent(store);
    if (damaged === null) return null;
    const aside = await copyAside(store, damaged.body, now);
    // Changed meanwhile (an operator's hand): judge it afresh, and leave the copy.
    if ((await readCurrentObject(store))?.etag !== damaged.etag) continue;
    await deleteCurrent(store, aside);
    return aside;
  }
  throw new DomainError("MANIFEST_WRITE", "The store's manifest kept changing while it was being moved aside; nothing was deleted. Call again once nobody else changes it.");
}

/** `current` when it is damaged; null when absent or valid. A newer format is refused, as no damage. */
async function damagedCurrent(store: ObjectStore): Promise<{ body: Uint8Array; etag: string } | null> {
  const current = await readCurrentObject(store);
  if (current === null) return null;
  try {
    parseManifest(current.body);
    return null;
  } catch (e) {
    // A newer format is no damage (parseManifest reads it first): refused, never moved aside.
    if (!(e instanceof DomainError) || e.reason !== "MANIFEST_INVALID" || e instanceof NewerStoreFormat) throw e;
  }
  return current;
}

/** The damaged bytes, kept create-only under `current.damaged-<time>` (a suffix when that name is taken). */
async function copyAside(store: ObjectStore, body: Uint8Array, now: Clock["now"]): Promise<string> {
  const name = `${DAMAGED_PREFIX}${now().toISOString().replace(/[-:]/g, "")}`;
  for (let n = 1; ; n++) {
    const key = n === 1 ? name : `${name}-${n}`;
    try {
      if ((await store.putIfAbsent(key, body)).ok) return key;
    } catch (cause) {
      throw new DomainError("MANIFEST_WRITE", "The damaged manifest could not be copied aside; nothing was changed.", { cause });
    }
  }
}

async function deleteCurrent(store: ObjectStore, aside: string): Promise<void> {
  try {
    await store.delete(MANIFEST_KEY);
  } catch (cause) {
    throw new DomainError("MANIFEST_WRITE", `The damaged manifest was copied aside as ${aside}, but could not be deleted; call again.`, { cause });
  }
}
