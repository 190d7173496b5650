/**
 * What `doctor` says of the notebook the store holds, from `current` alone
 * (one read, never a write, no pack downloaded): its format, id,
 * generation and the packs it keeps; or that it holds none yet, that a newer
 * slivingdoc wrote it, or that its manifest is damaged — each a problem with
 * what to do, since every command would refuse such a store.
 */
import { DomainError } from "../contract/errors.ts";
import { MANIFEST_KEY, NEWEST_FORMAT, NewerStoreFormat } from "../contract/store-formats.ts";
import { parseManifest } from "../engine/publish/manifest.ts";
import type { ObjectStore } from "../store/object-store.ts";

export type NotebookFacts =
  | { state: "none" }
  | {
      state: "held";
      format: number;
      /** Null for a manifest written before notebooks had ids (format 1 to 3). */
      notebook: string | null;
      generation: number;
      /** The packs a pull downloads, and those of older retained history that only the history commands read. */
      packs: number;
      historyPacks: number;
      bytes: number;
    }
  | { state: "newer"; format: number }
  | { state: "damaged" }
  | { state: "unreadable" };

export async function notebookFacts(store: ObjectStore): Promise<NotebookFacts> {
  let current;
  try {
    current = await store.get(MANIFEST_KEY);
  } catch {
    // The examination above names why the store does not answer.
    return { state: "unreadable" };
  }
  if (current === null) return { state: "none" };
  try {
    const m = parseManifest(current.body);
    const all = [...m.packs, ...(m.history ?? [])];
    return {
      state: "held",
      format: m.format,
      notebook: m.notebook ?? null,
      generation: m.generation,
      packs: m.packs.length,
      historyPacks: m.history?.length ?? 0,
      bytes: all.reduce((sum, p) => sum + p.size, 0),
    };
  } catch (e) {
    if (e instanceof NewerStoreFormat) return { state: "newer", format: e.storeFormat };
    if (e instanceof DomainError && e.reason === "MANIFEST_INVALID") return { state: "damaged" };
    throw e;
  }
}

/** What every command would answer of this notebook, as a problem with what to do (doctor.ts's Problem, which judges it beside the rest). */
export function notebookProblems(facts: NotebookFacts): Array<{ level: "fail"; text: string }> {
  switch (facts.state) {
    case "newer":
      return [
        {
          level: "fail",
          text: `a newer version of slivingdoc wrote this store (store format ${facts.format}; this version reads formats 1 to ${NEWEST_FORMAT}): every command refuses it (INCOMPATIBLE_STORE). It is not damaged: upgrade slivingdoc`,
        },
      ];
    case "damaged":
      return [
        {
          level: "fail",
          text: "the store's manifest (current) is damaged: every command refuses it (STORAGE_INTEGRITY · MANIFEST_INVALID). Restore it from a backup, or start the notebook again with attach --replace-damaged-manifest, which keeps every checkout's files as local edits",
        },
      ];
    default:
      return [];
  }
}
