/** The accepted generation, read-only: the one object `current` says it, and 0 when the store holds no notebook yet. */
import type { EngineDeps } from "./engine.ts";
import { readManifest } from "./publish/accepted-state.ts";

export async function acceptedGeneration(deps: Pick<EngineDeps, "store">): Promise<number> {
  const { manifest } = await readManifest(deps.store);
  return manifest?.generation ?? 0;
}
