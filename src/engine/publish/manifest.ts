/**
 * The manifest `current`: the one mutable object, naming the accepted state
 * (docs/storage-protocol.md). It is validated strictly on every read and
 * fails closed: an unknown field, a wrong type or an inconsistent pack list
 * makes the whole store untrusted (STORAGE_INTEGRITY · MANIFEST_INVALID).
 */
import { array, check, hex, type Infer, int, oneOf, optional, refine, string, strictObject } from "../shapes/schema.ts";
import { DomainError } from "../../contract/errors.ts";
import { createHash } from "../git/hash.ts";
import type { RandomSource } from "../../contract/clock.ts";
import { FORMAT_VERSION, FORMAT_WITH_COMBINED, FORMAT_WITH_HISTORY, FORMAT_WITH_NOTEBOOK, refuseNewerFormat } from "../../contract/store-formats.ts";

export { MANIFEST_KEY } from "../../contract/store-formats.ts";
/**
 * Format 1: the packs a pull downloads. Format 2 adds `history`, the packs
 * of older retained history that only the history commands download
 * (docs/storage-protocol.md, "History packs"). A manifest carries format 2
 * exactly when it lists history packs, so a store that never had any stays
 * readable by binaries that know format 1 only; those refuse a format 2
 * manifest (MANIFEST_INVALID) and so fail closed — their gc deletes nothing.
 * Format 3 adds `combined`, the publications of other writers that commits
 * published along with their own in the last COMBINED_WINDOW generations
 * (docs/storage-protocol.md, "Combining"); it is carried exactly when that
 * list is, with or without history packs, and binaries that know formats 1
 * and 2 only refuse it the same way.
 * Format 4 adds `notebook`, the notebook's id: minted with generation 1 and
 * carried by every later manifest, so that a checkout can tell another
 * notebook from an older state of its own (went-backwards.ts). Every manifest
 * this version writes carries it, whatever else it lists; binaries that know
 * formats 1 to 3 only refuse it, so they fail closed on a store this version
 * wrote to.
 */
export { FORMAT_VERSION, FORMAT_WITH_COMBINED, FORMAT_WITH_HISTORY, FORMAT_WITH_NOTEBOOK };

/**
 * How many generations a combined publication stays listed: its writer,
 * or the next call of its checkout when the writer died, learns from the
 * list where it landed. Far longer than a proposal lives (combine.ts).
 */
export const COMBINED_WINDOW = 192;

const PackSchema = strictObject({
  key: string(),
  size: int(1),
  sha256: hex(64),
});

/** A history pack: a pack, and the time of the newest commit it holds (seconds since the epoch), by which it expires. */
const HistoryPackSchema = strictObject({
  key: string(),
  size: int(1),
  sha256: hex(64),
  newest: int(0),
});

/** A publication of another writer that a commit published (combined): the generation and commit it landed as. */
const CombinedSchema = strictObject({
  publication: hex(32),
  generation: int(1),
  head: hex(40),
});

const ManifestSchema = refine(
  strictObject({
    format: oneOf(FORMAT_VERSION, FORMAT_WITH_HISTORY, FORMAT_WITH_COMBINED, FORMAT_WITH_NOTEBOOK),
    /** The notebook's id (format 4); absent in manifests written before it existed. */
    notebook: optional(hex(32)),
    generation: int(1),
    head: hex(40),
    publication: hex(32),
    packs: array(PackSchema, 1),
    history: optional(array(HistoryPackSchema, 1)),
    combined: optional(array(CombinedSchema, 1)),
  }),
  (m) => {
    if (m.format !== formatFor(m.history, m.combined, m.notebook)) {
      return "format 4 exactly when the notebook id is given, else 3 exactly when combined publications are listed, else 2 exactly when history packs are";
    }
    const combined = new Set<string>();
    for (const c of m.combined ?? []) {
      if (c.generation > m.generation) return "a combined publication after the manifest's generation";
      if (combined.has(c.publication)) return "a combined publication listed twice";
      combined.add(c.publication);
    }
    const seen = new Set<string>();
    for (const p of [...m.packs, ...(m.history ?? [])]) {
      if (p.key !== packKey(p.sha256)) return "pack key does not match its digest";
      if (seen.has(p.key)) return "pack listed twice";
      seen.add(p.key);
    }
    return null;
  },
);

export type PackDescriptor = Infer<typeof PackSchema>;
export type HistoryPackDescriptor = Infer<typeof HistoryPackSchema>;
export type CombinedPublication = Infer<typeof CombinedSchema>;
export type Manifest = Infer<typeof ManifestSchema>;

/** Packs are content-addressed by the SHA-256 of their bytes. */
export function packKey(sha256: string): string {
  return `packs/${sha256}.pack`;
}

/** The manifest's entry for a pack of these bytes: its key, size and digest. */
export function packDescriptor(bytes: Uint8Array): PackDescriptor {
  const sha256 = createHash("sha256").update(bytes).digest("hex");
  return { key: packKey(sha256), size: bytes.byteLength, sha256 };
}

export function newPublicationId(randomId: RandomSource["randomId"]): string {
  return randomId(16);
}

/** A new notebook's id, minted with its generation 1 (or by the first commit of this version to a store without one). */
export function newNotebookId(randomId: RandomSource["randomId"]): string {
  return randomId(16);
}

export { declaredFormat, NEWEST_FORMAT } from "../../contract/store-formats.ts";

export function parseManifest(body: Uint8Array): Manifest {
  // A newer format is read before validation: it is a newer binary's store, never damage.
  refuseNewerFormat(body);
  let json: unknown;
  try {
    json = JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(body));
  } catch (cause) {
    throw new DomainError("MANIFEST_INVALID", "The store's manifest is not valid JSON; an operator must inspect the store.", { cause });
  }
  const parsed = check(ManifestSchema, json, "manifest");
  if (!parsed.ok) {
    throw new DomainError("MANIFEST_INVALID", "The store's manifest failed validation; an operator must inspect the store.", {
      cause: parsed.error,
    });
  }
  return parsed.value;
}

/** The format a manifest with (or without) history packs, combined publications and a notebook id carries. */
export function formatFor(
  history: readonly HistoryPackDescriptor[] | undefined,
  combined?: readonly CombinedPublication[],
  notebook?: string,
): 1 | 2 | 3 | 4 {
  if (notebook !== undefined) return FORMAT_WITH_NOTEBOOK;
  if (combined !== undefined && combined.length > 0) return FORMAT_WITH_COMBINED;
  return history !== undefined && history.length > 0 ? FORMAT_WITH_HISTORY : FORMAT_VERSION;
}

/**
 * The combined publications a manifest at `generation` lists: those of
 * `previous` still inside the window, then `added`.
 */
export function combinedList(previous: Manifest | null, generation: number, added: readonly CombinedPublication[] = []): CombinedPublication[] {
  return [...(previous?.combined ?? []), ...added].filter((c) => c.generation > generation - COMBINED_WINDOW);
}

export function serializeManifest(m: Manifest): Uint8Array {
  const history = m.history !== undefined && m.history.length > 0 ? m.history : undefined;
  const combined = m.combined !== undefined && m.combined.length > 0 ? m.combined : undefined;
  const ordered: Manifest = {
    format: formatFor(history, combined, m.notebook),
    ...(m.notebook !== undefined ? { notebook: m.notebook } : {}),
    generation: m.generation,
    head: m.head,
    publication: m.publication,
    packs: m.packs.map((p) => ({ key: p.key, size: p.size, sha256: p.sha256 })),
    ...(history !== undefined ? { history: history.map((p) => ({ key: p.key, size: p.size, sha256: p.sha256, newest: p.newest })) } : {}),
    ...(combined !== undefined ? { combined: combined.map((c) => ({ publication: c.publication, generation: c.generation, head: c.head })) } : {}),
  };
  return new TextEncoder().encode(`${JSON.stringify(ordered, null, 2)}\n`);
}
