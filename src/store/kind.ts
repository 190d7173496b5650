/**
 * What a kind of store declares about itself, so that the surfaces name no
 * kind (docs/decisions/0001-two-tools-one-entry-per-operation.md): each
 * kind's file beside its store (`s3-kind.ts`, `sqlite-kind.ts`) parses and
 * validates its own URL and flags, says how it is opened, and what it does
 * beyond every store's requests. The surfaces' store registry
 * (src/surfaces/stores.ts) lists the kinds and gives each what it opens a
 * store with: the clock and who this process is.
 */
import type { Env, SettingSources } from "../contract/settings.ts";
import type { ObjectStore, StoreCapabilities, StoreClock } from "./object-store.ts";
import type { QueueIdentity } from "./sqlite-queue.ts";

/** A command-line flag of a kind's settings (beside its URL), as help and the parser take it. */
export interface StoreFlag {
  type: "string" | "boolean";
  description: string;
  valueHint?: string;
}

/** What a store is opened with, from the composition root. */
export interface StoreOpening {
  clock: StoreClock;
  /** Who this process is, for a store whose writers take turns. */
  queueIdentity: () => QueueIdentity;
}

/** Every kind's spec carries its kind's name, the registry's key. */
export interface KindSpec {
  kind: string;
}

export interface StoreKind<S extends KindSpec> {
  /** What a store URL starts with. */
  scheme: string;
  /** The URL's form, for refusals and help. */
  usage: string;
  /** What prose calls the kind: "the S3 compatibility probe", "the embedded store". */
  label: string;
  /** What its stores do beyond every store's requests (object-store.ts); the conformance suite holds them to it. */
  capabilities: StoreCapabilities;
  /** Its settings' flags, by long name, each also an environment variable its `parse` reads (docs/cli.md). */
  flags?: Record<string, StoreFlag>;
  /** The environment variables that hold its credentials: no diagnostic or result carries their values. */
  secretEnv?: readonly string[];
  /**
   * Who asks, where the environment alone says it without loading the
   * store's library: the digest (callerDigest) of the access key id its
   * credentials chain takes from `env`; undefined where the chain would look
   * elsewhere, and the opened store's `caller` says.
   */
  caller?(env: Env): string | undefined;
  /** The spec from the URL after the scheme, or a start-up refusal. */
  parse(rest: string, from: SettingSources): S;
  /** The store the environment names when no URL is given (S3_BUCKET), if any. */
  fromEnvironment?(from: SettingSources): S | undefined;
  /** The store with nothing configured. Exactly one kind has it. */
  byDefault?(from: SettingSources): S;
  identity(spec: S): string;
  open(spec: S, opening: StoreOpening): Promise<ObjectStore>;
  /**
   * How often a server idle between calls looks whether `current` moved
   * (surfaces/mcp/fetch-ahead.ts): what one look costs is the kind's — a
   * read of a local file, or a request to a server.
   */
  looks: LookWaits;
  /** Whether the start-up probe must prove the store enforces conditional writes (store/probe.ts). */
  probe: boolean;
  /** The local file the store lives in, which must stay outside the workspace root. */
  file?(spec: S): string;
  /** How `doctor` names the store and what it asks of the credentials (surfaces/doctor.ts). */
  examined: ExaminedWords;
}

/** The waits between a server's looks at `current`: the shortest after a call or a look that found something, doubling up to the longest while nothing moves (ms). */
export interface LookWaits {
  shortestMs: number;
  longestMs: number;
}

/** Doctor's words for a kind of store. */
export interface ExaminedWords {
  /** "the S3 store". */
  name: string;
  /**
   * The permission an operator grants for each request doctor tries, and
   * where the policies that grant them are; absent for a store in a file of
   * this user's, on this machine, which has no credentials and no clock of
   * its own.
   */
  permissions?: { read: string; list: string; write: string; delete: string; policies: string };
}
