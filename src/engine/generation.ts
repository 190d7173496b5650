/** The accepted generation, read-only: the one object `current` says it, and 0 when the store holds no notebook yet. */
import type { ObjectStore } from "../store/object-store.ts";
import { readManifest } from "./publish/accepted-state.ts";

export async function acceptedGeneration(store: ObjectStore): Promise<number> {
  const { manifest } = await readManifest(store);
  return manifest?.generation ?? 0;
}
