/**
 * The store registry: one entry per kind of store, keyed by its URL scheme
 * (docs/decisions/0001-two-tools-one-entry-per-operation.md,
 * docs/decisions/0002-settings-flags-and-environment.md). Each kind's entry
 * lives beside its store in src/store/ (store/kind.ts says what it holds):
 * how its URL and settings are parsed and validated, its flags, its
 * secret-free identity (which keys each checkout's private state), the
 * environment variables holding its credentials, how it is opened, what it
 * does beyond every store's requests, and whether the start-up probe must
 * prove it first. This file lists the kinds, picks one for a configuration,
 * and opens a store with what the process gives it: the system's clock and
 * who this process is. Help, the parser, the refusals and the scrubbing of
 * secrets read the kinds from here. Adding a store is its ObjectStore and
 * its kind's file in src/store/ plus one line here; the store must pass
 * test/store/conformance.ts with the capabilities its entry declares.
 */
import type { ExaminedWords, StoreKind } from "../store/kind.ts";
import type { ObjectStore, StoreClock } from "../store/object-store.ts";
import { S3_KIND, type S3Spec } from "../store/s3-kind.ts";
import { SQLITE_KIND, type SqliteSpec } from "../store/sqlite-kind.ts";
import { queueIdentity } from "./process-identity.ts";
import { invalid, nonEmpty, type SettingSources } from "./settings.ts";
import { SYSTEM_CLOCK } from "./system-clock.ts";

export type StoreSpec = S3Spec | SqliteSpec;

/** Every kind of store, by the `kind` of its spec, in the order refusals list them. */
export const STORES: { [K in StoreSpec["kind"]]: StoreKind<Extract<StoreSpec, { kind: K }>> } = { s3: S3_KIND, sqlite: SQLITE_KIND };

/** Every kind, in the order refusals and help list them. */
export const STORE_KINDS = Object.values(STORES) as StoreKind<StoreSpec>[];

/** The kind of store a configuration that names none gets. Exactly one kind has `byDefault`. */
export const DEFAULT_STORE_KIND = STORE_KINDS.find((kind) => kind.byDefault)!;

/** Doctor's words for the kind of store an ObjectStore's `kind` names. */
export function examinedWords(kind: string): ExaminedWords {
  return (STORES as Record<string, StoreKind<StoreSpec> | undefined>)[kind]?.examined ?? { name: "the store" };
}

/** The store URLs of every kind, as refusals and help give them: "s3://BUCKET[/PREFIX] or sqlite:PATH". */
export function storeUsages(): string {
  return STORE_KINDS.map((k) => k.usage).join(" or ");
}

export function storeKind<S extends StoreSpec>(spec: S): StoreKind<S> {
  return STORES[spec.kind] as unknown as StoreKind<S>;
}

/** The configured store: `--store` or SLIVINGDOC_STORE, else what the environment names, else the default. */
export function parseStore(from: SettingSources): StoreSpec {
  const url = nonEmpty(from.flags.store) ?? nonEmpty(from.env.SLIVINGDOC_STORE);
  if (url === undefined) {
    for (const kind of STORE_KINDS) {
      const spec = kind.fromEnvironment?.(from);
      if (spec !== undefined) return spec;
    }
    return DEFAULT_STORE_KIND.byDefault!(from);
  }
  const kind = STORE_KINDS.find((k) => url.startsWith(k.scheme));
  if (kind === undefined) throw invalid(`the store must be ${storeUsages()}`);
  // A query or a fragment would be taken for part of the prefix or the file
  // name and kept in each checkout's state; a query is where a pasted
  // pre-signed URL carries its credential, so it is not repeated here.
  if (/[?#]/.test(url)) {
    throw invalid(`the store URL must not carry a query string or a fragment ('?' or '#'); give ${storeUsages()}`);
  }
  return kind.parse(url.slice(kind.scheme.length), from);
}

/** A secret-free identity of the store location; it keys each checkout's private state. */
export function storeIdentity(spec: StoreSpec): string {
  return storeKind(spec).identity(spec);
}

/**
 * Open the store, unprobed (verified-store.ts proves it first where its
 * kind asks), on the system's clock unless a test gives it another.
 */
export function openStore(spec: StoreSpec, clock: StoreClock = SYSTEM_CLOCK): Promise<ObjectStore> {
  return storeKind(spec).open(spec, { clock, queueIdentity });
}
