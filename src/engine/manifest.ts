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
export const FORMAT_VERSION = 1;

const hex = (n: number) => z.string().regex(new RegExp(`^[0-9a-f]{${n}}$`));

const PackSchema = z
  .object({
    key: z.string(),
    size: z.number().int().positive(),
    sha256: hex(64),
  })
  .strict();

const ManifestSchema = z
  .object({
    format: z.literal(FORMAT_VERSION),
    generation: z.number().int().positive(),
    head: hex(40),
    publication: hex(32),
    packs: z.array(PackSchema).min(1),
  })
  .strict()
  .superRefine((m, ctx) => {
    const seen = new Set<string>();
    for (const p of m.packs) {
      if (p.key !== packKey(p.sha256)) ctx.addIssue({ code: "custom", message: "pack key does not match its digest" });
      if (seen.has(p.key)) ctx.addIssue({ code: "custom", message: "pack listed twice" });
      seen.add(p.key);
    }
  });

export type PackDescriptor = z.infer<typeof PackSchema>;
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

export function serializeManifest(m: Manifest): Uint8Array {
  const ordered: Manifest = {
    format: m.format,
    generation: m.generation,
    head: m.head,
    publication: m.publication,
    packs: m.packs.map((p) => ({ key: p.key, size: p.size, sha256: p.sha256 })),
  };
  return new TextEncoder().encode(`${JSON.stringify(ordered, null, 2)}\n`);
}
