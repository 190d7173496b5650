/**
 * The manifest `current`: the one mutable object, naming the accepted state
 * (docs/storage-protocol.md). It is validated strictly on every read and
 * fails closed: an unknown field, a wrong type or an inconsistent pack list
 * makes the whole store untrusted (STORAGE_INTEGRITY · MANIFEST_INVALID).
 */
import { z } from "zod";
import { DomainError } from "../contract/errors.ts";
import { randomHex } from "../contract/random-hex.ts";

export const MANIFEST_KEY = "current";
/**
 * Format 1: the packs a pull downloads. Format 2 adds `history`, the packs
 * of older retained history that only the history commands download
 * (docs/storage-protocol.md, "History packs"). A manifest carries format 2
 * exactly when it lists history packs, so a store that never had any stays
 * readable by binaries that know format 1 only; those refuse a format 2
 * manifest (MANIFEST_INVALID) and so fail closed — their gc deletes nothing.
 */
export const FORMAT_VERSION = 1;
export const FORMAT_WITH_HISTORY = 2;

const hex = (n: number) => z.string().regex(new RegExp(`^[0-9a-f]{${n}}$`));

const PackSchema = z
  .object({
    key: z.string(),
    size: z.number().int().positive(),
    sha256: hex(64),
  })
  .strict();

/** A history pack: a pack, and the time of the newest commit it holds (seconds since the epoch), by which it expires. */
const HistoryPackSchema = z
  .object({
    key: z.string(),
    size: z.number().int().positive(),
    sha256: hex(64),
    newest: z.number().int().nonnegative(),
  })
  .strict();

const ManifestSchema = z
  .object({
    format: z.union([z.literal(FORMAT_VERSION), z.literal(FORMAT_WITH_HISTORY)]),
    generation: z.number().int().positive(),
    head: hex(40),
    publication: hex(32),
    packs: z.array(PackSchema).min(1),
    history: z.array(HistoryPackSchema).min(1).optional(),
  })
  .strict()
  .superRefine((m, ctx) => {
    if ((m.format === FORMAT_WITH_HISTORY) !== (m.history !== undefined)) {
      ctx.addIssue({ code: "custom", message: "format 2 exactly when history packs are listed" });
    }
    const seen = new Set<string>();
    for (const p of [...m.packs, ...(m.history ?? [])]) {
      if (p.key !== packKey(p.sha256)) ctx.addIssue({ code: "custom", message: "pack key does not match its digest" });
      if (seen.has(p.key)) ctx.addIssue({ code: "custom", message: "pack listed twice" });
      seen.add(p.key);
    }
  });

export type PackDescriptor = z.infer<typeof PackSchema>;
export type HistoryPackDescriptor = z.infer<typeof HistoryPackSchema>;
export type Manifest = z.infer<typeof ManifestSchema>;

/** Packs are content-addressed by the SHA-256 of their bytes. */
export function packKey(sha256: string): string {
  return `packs/${sha256}.pack`;
}

export function newPublicationId(): string {
  return randomHex(16);
}

export function parseManifest(body: Uint8Array): Manifest {
  let json: unknown;
  try {
    json = JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(body));
  } catch (cause) {
    throw new DomainError("MANIFEST_INVALID", "The store's manifest is not valid JSON; an operator must inspect the store.", { cause });
  }
  const parsed = ManifestSchema.safeParse(json);
  if (!parsed.success) {
    throw new DomainError("MANIFEST_INVALID", "The store's manifest failed validation; an operator must inspect the store.", {
      cause: parsed.error,
    });
  }
  return parsed.data;
}

/** The format a manifest with (or without) history packs carries. */
export function formatFor(history: readonly HistoryPackDescriptor[] | undefined): 1 | 2 {
  return history !== undefined && history.length > 0 ? FORMAT_WITH_HISTORY : FORMAT_VERSION;
}

export function serializeManifest(m: Manifest): Uint8Array {
  const history = m.history !== undefined && m.history.length > 0 ? m.history : undefined;
  const ordered: Manifest = {
    format: formatFor(history),
    generation: m.generation,
    head: m.head,
    publication: m.publication,
    packs: m.packs.map((p) => ({ key: p.key, size: p.size, sha256: p.sha256 })),
    ...(history !== undefined ? { history: history.map((p) => ({ key: p.key, size: p.size, sha256: p.sha256, newest: p.newest })) } : {}),
  };
  return new TextEncoder().encode(`${JSON.stringify(ordered, null, 2)}\n`);
}
