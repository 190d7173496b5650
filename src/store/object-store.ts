/**
 * The object store the engine needs, and nothing more
 * (docs/decisions/0006-one-pointer-over-immutable-packs.md): read (also
 * only if changed), create-only write, compare-and-swap on the ETag, list,
 * delete.
 *
 * Absence is a value (`null`), and so is a lost precondition
 * (`{ ok: false }`): both are normal outcomes the engine branches on.
 * Everything else — network faults, denied access, a write whose outcome
 * is unknown — throws a `StoreError`, which the engine maps to tokens.
 */
import type { Clock } from "../contract/clock.ts";

/**
 * The clocks a store reads, given by whoever opens it (the surfaces pass
 * the system's): the wall clock of the times it records and compares, and
 * the monotonic one of how long something took. A store reads no clock of
 * its own, so a test can give it one.
 */
export type StoreClock = Pick<Clock, "now" | "monotonic">;

export interface StoredObject {
  body: Uint8Array;
  /** Opaque, unquoted entity tag of this exact version of the object. */
  etag: string;
}

/** One answer's times, in milliseconds since the epoch: this machine's when it was sent and answered, and the server's `Date` (whole seconds). */
export interface ServerAnswer {
  sentAt: number;
  answeredAt: number;
  serverDate: number;
}

export type ConditionalWrite = { ok: true; etag: string } | { ok: false };

/**
 * What `getIfNoneMatch` answers: "unchanged" when the object's ETag is still
 * the one the caller holds (no body sent), else the object as `get` reads
 * it, or null when there is none.
 */
export type ConditionalRead = StoredObject | null | "unchanged";

export interface ListedObject {
  key: string;
  size: number;
  /** Last modification, used only for grace periods of clean-up. */
  modified: Date;
}

/**
 * What a kind of store does beyond the requests every store serves: each is
 * an optional member of ObjectStore, which a store of a kind that declares
 * it (its kind's entry, sqlite-kind.ts, s3-kind.ts) offers, and one of a kind that
 * does not, never. The conformance suite (test/store/conformance.ts) checks
 * both, and what each promises.
 */
export interface StoreCapabilities {
  /** `queue`: the store orders its writers. */
  queue: boolean;
  /** `putWith`: the store writes new objects and a conditional write together, as one atomic step. */
  putWith: boolean;
}

/** A store that does only what every store does (S3). */
export const NO_CAPABILITIES: StoreCapabilities = { queue: false, putWith: false };

/**
 * Every request takes an optional `signal`: once it aborts (a call's
 * deadline passed, store/deadline.ts), a store that talks to a server ends
 * the request and its connection. A write ended so may have landed.
 */
export interface ObjectStore {
  /** A short, secret-free description for logs ("sqlite", "s3"). */
  readonly kind: string;
  get(key: string, signal?: AbortSignal): Promise<StoredObject | null>;
  /**
   * Read `key` only if its current ETag is not `etag` (S3: `If-None-Match`,
   * answered 304 Not Modified): "unchanged" costs one request and no body,
   * so a reader that holds an object can ask again and again whether it
   * moved. Fails as `get` does (operation "get").
   */
  getIfNoneMatch(key: string, etag: string, signal?: AbortSignal): Promise<ConditionalRead>;
  /** Create `key` only if it does not exist (S3: `If-None-Match: *`). */
  putIfAbsent(key: string, body: Uint8Array, signal?: AbortSignal): Promise<ConditionalWrite>;
  /** Replace `key` only if its current ETag is `etag` (S3: `If-Match`). A missing key loses. */
  putIfMatch(key: string, body: Uint8Array, etag: string, signal?: AbortSignal): Promise<ConditionalWrite>;
  /** Every key that starts with `prefix`, in lexicographic order. */
  list(prefix: string, signal?: AbortSignal): Promise<ListedObject[]>;
  /** Remove `key`; removing an absent key is not an error. */
  delete(key: string, signal?: AbortSignal): Promise<void>;
  /** Release connections and handles. */
  close(): Promise<void>;
  /**
   * The last answer from a store behind a server (S3), with the server's
   * clock as its `Date` header gave it: how `doctor` measures clock skew.
   * Absent where the store is on this machine.
   */
  lastAnswer?(): ServerAnswer | null;
  /**
   * Who the store's requests go as, for the start-up probe's record
   * (callerDigest): a store behind credentials (S3) answers the digest of
   * the access key id its credentials chain gives, or null when the chain
   * gives none. Absent where there are no credentials (the embedded store).
   */
  caller?(): Promise<string | null>;
  /**
   * Where a store can order its writers (the embedded store: every writer is
   * on this machine), writers line up here before reading `current` and
   * leave once their conditional write is answered, so they take turns
   * instead of losing races to each other. Only an optimisation: the
   * conditional write stays the proof, and a writer that does not queue (an
   * older version) is still safe. Absent on S3, where nothing may
   * coordinate writers (docs/decisions/0006-one-pointer-over-immutable-packs.md);
   * and where a store that declares it could not set it up (the embedded
   * store's queue database would not open): writers then race.
   */
  readonly queue?: WriterQueue;
  /**
   * Where a store can do it as one atomic step (the embedded store: one
   * transaction, one flush to disk), create `creates` (create-only, as
   * putIfAbsent) and conditionally write `key` together: all or nothing,
   * `{ ok: false }` when the condition fails (`etag` null: `key` must be
   * absent). Absent on S3, where the caller uploads first.
   *
   * `committed` runs once the write is visible to every other writer and
   * before it is flushed to disk, which the returned promise waits for:
   * the moment a writer can end its turn (`queue`) without waiting for the
   * disk.
   *
   * Once `signal` aborts, a write not yet begun is not begun, and the
   * promise fails: the step is local, and only its wait for the store's
   * write lock can be cut, so one the signal ends never wrote.
   */
  putWith?(
    creates: Array<{ key: string; body: Uint8Array }>,
    key: string,
    body: Uint8Array,
    etag: string | null,
    committed?: () => void,
    signal?: AbortSignal,
  ): Promise<ConditionalWrite>;
}

export interface WriterQueue {
  /**
   * Wait for this writer's turn. `whileWaiting` runs now and then during the
   * wait (never twice at once): work that would otherwise lengthen the turn,
   * such as downloading what earlier writers published. It reads through
   * `peek`, whose reads need not be on disk yet (the embedded store: no
   * flush), so it may only fill caches, never act on what it read. Once
   * `signal` aborts, the writer leaves the line and `enter` fails.
   * `placed` is told, once the writer has its place, how many writers are
   * ahead of it (group commit: a writer behind others offers its commit
   * for them to carry, publish/turn.ts).
   */
  enter(whileWaiting?: (peek: ObjectStore) => Promise<void>, signal?: AbortSignal, placed?: (ahead: number) => void): Promise<WriterTurn>;
}

export interface WriterTurn {
  /** End the turn; ending it again does nothing. */
  end(): void;
  /**
   * Read as `get` does, for the turn's own use: what it returns may reach
   * the disk only by the time the turn's own write does, or the turn ends
   * (the embedded store: sqlite.ts). Anything else reads with `get`.
   */
  get(key: string): Promise<StoredObject | null>;
}

/**
 * Which store operation failed, so the engine can choose the reason token.
 * `outcome: "unknown"` marks a write that may have landed (a lost response,
 * a timeout, a 5xx after the body was sent): the caller must prove it.
 */
export type StoreOperation = "get" | "putIfAbsent" | "putIfMatch" | "list" | "delete" | "open";

/**
 * What is wrong with the store itself, where a store can tell (the
 * embedded store's file): it is not a database at all, its pages are
 * damaged, this user may not write it or its directory, its directory
 * does not exist (and may not be made), or (`gone`) its file is no longer
 * at its path, and a running process does not make it anew. Unlike a failed request, calling again cannot mend any of them: a
 * person must.
 */
export type StoreFault = "not-a-database" | "damaged" | "not-writable" | "gone" | "no-directory";

export class StoreError extends Error {
  override readonly name = "StoreError";
  readonly fault: StoreFault | undefined;
  constructor(
    readonly operation: StoreOperation,
    message: string,
    readonly outcome: "failed" | "unknown" = "failed",
    options?: { cause?: unknown; fault?: StoreFault },
  ) {
    super(message, options?.cause === undefined ? undefined : { cause: options.cause });
    this.fault = options?.fault;
  }
}

/**
 * The digest of an access key id that names who asks in the start-up
 * probe's record: the same id, the same digest; never the id itself, which
 * a record under the private root must not hold.
 */
export function callerDigest(accessKeyId: string): string {
  // Bun's hasher, not node:crypto's createHash, which costs ~2 ms to load; the same digest.
  return new Bun.CryptoHasher("sha256").update(`access key id\n${accessKeyId}`).digest("hex").slice(0, 32);
}
