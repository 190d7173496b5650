/**
 * What `slivingdoc doctor` measures on a store (docs/doctor.md): which of
 * the requests the product makes these credentials may send, whether the
 * conditional writes hold (the start-up probe, probe.ts), how long each
 * kind of request takes, how many conditional writes one writer gets a
 * second, whether a listing shows what was just written, and how far the
 * server's clock is from this machine's.
 *
 * Everything is done under scratch keys of its own (`probe/<16 hex>/…`),
 * which no notebook uses and the engine never reads, and deleted at the
 * end: the notebook's keys are never read or written, and the start-up
 * probe's record on this machine is not touched. The examination answers
 * within the call's deadline whatever the store does: its requests end a
 * little before it (RESERVE), which leaves the clean-up its time.
 *
 * Only numbers and fixed sentences come out: no key, no endpoint, nothing
 * a credential could hide in (probe.ts `operationalCause`).
 */
import { randomHex } from "../contract/random-hex.ts";
import { boundedStore, type Deadline } from "./deadline.ts";
import { type ObjectStore, type ServerAnswer, type StoreClock, StoreError } from "./object-store.ts";
import { deniesAccess, operationalFailure, operationalSentence, probeStore } from "./probe.ts";

/** What these credentials may do, request by request: untried where an earlier failure left no way to tell. */
export type Permission = "allowed" | "denied" | "untried";

export interface Permissions {
  /** GetObject: a read of an object the examination wrote, or of a missing key. */
  read: Permission;
  /** ListBucket: a listing of the scratch prefix. */
  list: Permission;
  /** PutObject: a create-only write of a scratch key. */
  write: Permission;
  /** DeleteObject: the delete of that key. */
  delete: Permission;
}

/** One kind of request's latency, in milliseconds. */
export interface LatencyStat {
  samples: number;
  p50Ms: number;
  p99Ms: number;
}

export interface Examination {
  /** The store's kind ("s3", "sqlite"). */
  kind: string;
  permissions: Permissions;
  /** The start-up probe's verdict; null when it was not run (these credentials may not write, or the examination stopped before it). */
  conditionalWrites: { proved: true } | { proved: false; cause: string } | null;
  latency: {
    get: LatencyStat | null;
    /** A create-only write (`If-None-Match: *`), as a commit's pack upload. */
    put: LatencyStat | null;
    /** A compare-and-swap (`If-Match`), as a commit's write of `current`. */
    conditionalPut: LatencyStat | null;
  };
  /** Compare-and-swaps one writer gets a second, back to back on one scratch key. */
  conditionalWritesPerSecond: number | null;
  /** Rounds of write-then-list and delete-then-list, and how many listings missed the change. */
  listAfterWrite: { rounds: number; missed: number } | null;
  /**
   * The server's clock less this machine's (ms), within ± `uncertaintyMs`
   * (the server's `Date` has whole seconds); null on a store without a
   * server clock (the embedded store) or without an answer.
   */
  clockSkew: { offsetMs: number; uncertaintyMs: number } | null;
  /** Why the examination stopped early (the endpoint cannot be reached, the deadline passed…); null when it ran to the end. */
  stopped: string | null;
  /** Scratch keys the clean-up could not delete (harmless: never read; `probe/` keys may be deleted by hand). */
  leftovers: number;
}

export interface ExamineOptions {
  /** The call's deadline: the examination answers by then. */
  deadline: Deadline;
  /** Requests of each kind timed. */
  samples: number;
  /** How long the conditional-write rate is measured (default 1 s). */
  rateMs?: number;
  /** Rounds of list-after-write (default 5). */
  listRounds?: number;
  /** The monotonic clock the requests and loops are timed on. */
  clock: Pick<StoreClock, "monotonic">;
}

const DEFAULT_RATE_MS = 1_000;
/** The rate's measurement ends after this many writes too: a store this fast needs no more to be told. */
const RATE_MAX_WRITES = 500;
const DEFAULT_LIST_ROUNDS = 5;
/** Kept of the call's deadline for the clean-up: at most this much, and a fifth of the deadline. */
const RESERVE_MS = 5_000;

const bytes = (s: string) => new TextEncoder().encode(s);

/** Examine `store` (the caller closes it). */
export async function examineStore(store: ObjectStore, options: ExamineOptions): Promise<Examination> {
  const run = new Examiner(store, options);
  try {
    await run.all();
  } catch (e) {
    run.stop(e);
  }
  await run.cleanUp();
  return run.result();
}

/** A failure that ends the examination: the store's answer says nothing more can be learnt. */
class Stop extends Error {}

class Examiner {
  private readonly base = `probe/${randomHex(8)}/`;
  /** Every key a write may have landed on: deleted at the end. */
  private readonly written = new Set<string>();
  /** Of those, the keys a write is known to have landed on. */
  private readonly landed = new Set<string>();
  private readonly answers: ServerAnswer[] = [];
  private readonly store: ObjectStore;
  private readonly samples: number;
  /**
   * How long one loop of requests (a latency's samples, the rate, the
   * list-after-write rounds) may take: an eighth of the time left to
   * measure — five loops, the probe and the permissions fit with room — so
   * that a slow store gets fewer samples rather than a verdict of the
   * deadline doctor itself ran out of.
   */
  private readonly share: number;
  private readonly out: Examination;

  constructor(
    private readonly raw: ObjectStore,
    private readonly options: ExamineOptions,
  ) {
    const call = options.deadline;
    const reserve = Math.min(RESERVE_MS, call.ms / 5);
    // The same deadline, ended `reserve` sooner: what the messages name is still the call's.
    const measuring: Deadline = { ms: call.ms, remaining: () => Math.max(0, call.remaining() - reserve), signal: AbortSignal.timeout(Math.max(0, call.remaining() - reserve)) };
    const bounded = boundedStore(raw, measuring);
    this.store = {
      ...bounded,
      putIfAbsent: (key, body) => this.noted(key, () => bounded.putIfAbsent(key, body)),
      putIfMatch: (key, body, etag) => this.noted(key, () => bounded.putIfMatch(key, body, etag)),
    };
    this.samples = Math.max(1, options.samples);
    this.share = measuring.remaining() / 8;
    this.out = {
      kind: raw.kind,
      permissions: { read: "untried", list: "untried", write: "untried", delete: "untried" },
      conditionalWrites: null,
      latency: { get: null, put: null, conditionalPut: null },
      conditionalWritesPerSecond: null,
      listAfterWrite: null,
      clockSkew: null,
      stopped: null,
      leftovers: 0,
    };
  }

  async all(): Promise<void> {
    await this.permissions();
    const { read, write } = this.out.permissions;
    if (write === "allowed") {
      const probed = await probeStore(this.store);
      // The probe could not finish (the endpoint went away, the deadline passed): nothing more can be measured.
      if (!probed.ok && probed.operational) throw new Stop(probed.advice === undefined ? probed.cause : operationalSentence({ cause: probed.cause, advice: probed.advice }));
      this.out.conditionalWrites = probed.ok ? { proved: true } : { proved: false, cause: probed.cause };
    }
    // Writes are timed only where their conditions hold: elsewhere they are not what a commit would meet.
    const writes = this.out.conditionalWrites?.proved === true;
    if (read === "allowed") this.out.latency.get = await this.sample(() => this.store.get(write === "allowed" ? `${this.base}object` : `${this.base}absent`));
    if (!writes) return;
    await this.writeLatencies();
    this.out.conditionalWritesPerSecond = await this.rate();
    if (this.out.permissions.list === "allowed" && this.out.permissions.delete === "allowed") this.out.listAfterWrite = await this.listAfterWrite();
  }

  /** Each request the product makes, tried once on a scratch key. */
  private async permissions(): Promise<void> {
    const p = this.out.permissions;
    const object = `${this.base}object`;
    // A missing key reads as absent only with ListBucket too (S3 answers 403 without it); an object read below settles GetObject alone.
    p.read = await this.allowed(() => this.store.get(`${this.base}absent`));
    p.list = await this.allowed(() => this.store.list(this.base));
    p.write = await this.allowed(() => this.create(object));
    if (p.write === "allowed") p.read = await this.allowed(() => this.store.get(object));
    p.delete = await this.allowed(() => this.store.delete(object));
    // Put back, for the reads timed later.
    if (p.write === "allowed" && p.delete === "allowed") await this.create(object);
  }

  /** "allowed" when `request` is answered, "denied" when the store refuses it for access; anything else stops the examination. */
  private async allowed(request: () => Promise<unknown>): Promise<Permission> {
    try {
      await this.timed(request);
      return "allowed";
    } catch (e) {
      if (deniesAccess(e)) return "denied";
      throw e;
    }
  }

  private async writeLatencies(): Promise<void> {
    const { latency } = this.out;
    let n = 0;
    latency.put = await this.sample(async () => {
      const key = `${this.base}put${n++}`;
      await this.create(key);
    });
    const swap = `${this.base}swap`;
    let etag = await this.create(swap);
    latency.conditionalPut = await this.sample(async () => {
      etag = await this.swap(swap, etag);
    });
  }

  /** Compare-and-swaps on a scratch key of their own, back to back, for `rateMs`: how many a second. */
  private async rate(): Promise<number> {
    const key = `${this.base}rate`;
    let etag = await this.create(key);
    const ms = Math.min(this.options.rateMs ?? DEFAULT_RATE_MS, this.share);
    const started = this.now();
    let writes = 0;
    while (this.now() - started < ms && writes < RATE_MAX_WRITES) {
      etag = await this.timed(() => this.swap(key, etag));
      writes++;
    }
    return Math.round((writes / ((this.now() - started) / 1000)) * 10) / 10;
  }

  /** Write a key, then list: is it there? Delete it, then list: is it gone? */
  private async listAfterWrite(): Promise<{ rounds: number; missed: number }> {
    const started = this.now();
    let missed = 0;
    let rounds = 0;
    const wanted = this.options.listRounds ?? DEFAULT_LIST_ROUNDS;
    for (; rounds < wanted && (rounds === 0 || this.now() - started < this.share); rounds++) {
      const key = `${this.base}list${rounds}`;
      await this.create(key);
      if (!(await this.timed(() => this.store.list(this.base))).some((o) => o.key === key)) missed++;
      await this.timed(() => this.store.delete(key));
      if ((await this.timed(() => this.store.list(this.base))).some((o) => o.key === key)) missed++;
    }
    return { rounds, missed };
  }

  private async create(key: string): Promise<string> {
    const put = await this.store.putIfAbsent(key, bytes("doctor 0"));
    if (!put.ok) throw new Stop("the store refused a create-only write of a new key (If-None-Match) that nobody else wrote");
    return put.etag;
  }

  private async swap(key: string, etag: string): Promise<string> {
    const put = await this.store.putIfMatch(key, bytes(`doctor ${randomHex(4)}`), etag);
    if (!put.ok) throw new Stop("the store refused a compare-and-swap (If-Match) with the ETag it had just answered");
    return put.etag;
  }

  /**
   * A write, the probe's among them, its key noted for the clean-up before
   * it is sent — a write whose answer is lost is not left behind — and
   * forgotten again when it provably wrote nothing (refused for access,
   * say) on a key nothing landed on before.
   */
  private async noted<T extends { ok: boolean }>(key: string, write: () => Promise<T>): Promise<T> {
    this.written.add(key);
    try {
      const result = await write();
      if (result.ok) this.landed.add(key);
      return result;
    } catch (e) {
      if (e instanceof StoreError && e.outcome === "failed" && !this.landed.has(key)) this.written.delete(key);
      throw e;
    }
  }

  /** `samples` requests, one after the other, or as many as its share of the time allows (one at least). */
  private async sample(request: () => Promise<unknown>): Promise<LatencyStat> {
    const times: number[] = [];
    const began = this.now();
    while (times.length < this.samples && (times.length === 0 || this.now() - began < this.share)) {
      const started = this.now();
      await this.timed(request);
      times.push(this.now() - started);
    }
    return { samples: times.length, p50Ms: percentile(times, 50), p99Ms: percentile(times, 99) };
  }

  /** Any request: its answer's server clock is noted. Requests are sent one at a time, so the last answer is its own (or an earlier one's, already noted). */
  private async timed<T>(request: () => Promise<T>): Promise<T> {
    try {
      return await request();
    } finally {
      // A refusal is an answer too, with the server's Date.
      const answer = this.raw.lastAnswer?.() ?? null;
      if (answer !== null && answer !== this.answers.at(-1)) this.answers.push(answer);
    }
  }

  /** The monotonic clock's reading: only differences of two mean anything. */
  private now(): number {
    return this.options.clock.monotonic();
  }

  stop(e: unknown): void {
    if (e instanceof Stop) this.out.stopped = e.message;
    else if (e instanceof StoreError) this.out.stopped = operationalSentence(operationalFailure(e));
    else throw e;
  }

  /** Delete what the examination wrote, with the call's own deadline (the measuring one ended sooner to leave it time). */
  async cleanUp(): Promise<void> {
    const store = boundedStore(this.raw, this.options.deadline);
    const left = await Promise.allSettled([...this.written].map((key) => store.delete(key)));
    this.out.leftovers = left.filter((r) => r.status === "rejected").length;
  }

  result(): Examination {
    this.out.clockSkew = clockSkew(this.answers);
    return this.out;
  }
}

/** The nearest-rank percentile of `values` (ms, to a hundredth: a local store answers in tenths of a millisecond). */
export function percentile(values: readonly number[], p: number): number {
  if (values.length === 0) throw new RangeError("percentile of no values");
  const sorted = [...values].sort((a, b) => a - b);
  const rank = Math.max(1, Math.ceil((p / 100) * sorted.length));
  return Math.round(sorted[rank - 1]! * 100) / 100;
}

/**
 * The server's clock less this machine's, from answers that each say: the
 * server's time, read somewhere between sending and answering, was its
 * `Date` (whole seconds, rounded down) or up to a second later. Each answer
 * bounds the offset; together they bound it tighter. Null without answers,
 * or when they contradict each other (a clock that jumped meanwhile).
 */
export function clockSkew(answers: readonly ServerAnswer[]): { offsetMs: number; uncertaintyMs: number } | null {
  let low = -Infinity;
  let high = Infinity;
  for (const a of answers) {
    low = Math.max(low, a.serverDate - a.answeredAt);
    high = Math.min(high, a.serverDate + 1000 - a.sentAt);
  }
  if (answers.length === 0 || low > high) return null;
  return { offsetMs: Math.round((low + high) / 2), uncertaintyMs: Math.round((high - low) / 2) };
}
