/**
 * The store conformance suite: every ObjectStore (the embedded SQLite store,
 * S3, test wrappers) must pass it, so the engine can rely on exactly these
 * semantics and nothing else
 * (docs/decisions/0006-one-pointer-over-immutable-packs.md).
 *
 * `open` returns a store isolated from every other call's keys (a fresh
 * prefix or a fresh file), so suites may share one server.
 *
 * What a store does beyond that is declared (object-store.ts
 * StoreCapabilities; a kind's entry, src/store/*-kind.ts): a
 * store offers exactly what is declared, and each declared capability is
 * checked for what it promises.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { type ConditionalWrite, type ObjectStore, type StoreCapabilities, StoreError } from "../../src/store/object-store.ts";
import { waitFor } from "../support/wait.ts";

export interface ConformanceOptions {
  /** What the store declares it does beyond every store's requests. */
  capabilities: StoreCapabilities;
  /** How many writers race for one key in the concurrency tests. */
  concurrentWriters?: number;
}

const text = (s: string) => new TextEncoder().encode(s);

/**
 * The outcome of a race as the interface allows it: each writer either won,
 * lost, or could not know (a StoreError with outcome "unknown" — Ceph RGW
 * answers 500 to some losers). Exactly one writer's bytes must be stored;
 * no other writer may claim the win, and the winner must not claim a loss.
 */
async function checkRace(store: ObjectStore, key: string, settled: PromiseSettledResult<ConditionalWrite>[]): Promise<void> {
  for (const r of settled) {
    if (r.status === "rejected") {
      expect(r.reason).toBeInstanceOf(StoreError);
      expect((r.reason as StoreError).outcome).toBe("unknown");
    }
  }
  const stored = await store.get(key);
  expect(stored).not.toBeNull();
  const match = /^writer (\d+)$/.exec(str(stored!.body));
  expect(match).not.toBeNull();
  const winner = Number(match![1]);
  const claimed = settled.flatMap((r, i) => (r.status === "fulfilled" && r.value.ok ? [i] : []));
  expect(claimed.filter((i) => i !== winner)).toEqual([]);
  const own = settled[winner]!;
  if (own.status === "fulfilled") {
    expect(own.value.ok).toBe(true);
    if (own.value.ok) expect(stored!.etag).toBe(own.value.etag);
  }
}
const str = (b: Uint8Array) => new TextDecoder().decode(b);

export function describeStoreConformance(name: string, open: () => Promise<ObjectStore>, options: ConformanceOptions): void {
  const writers = options.concurrentWriters ?? 32;
  const opened: ObjectStore[] = [];
  const fresh = async () => {
    const store = await open();
    opened.push(store);
    return store;
  };

  describe(`store conformance: ${name}`, () => {
    afterAll(async () => {
      await Promise.all(opened.map((s) => s.close()));
    });

    test("an absent key reads as null, and deleting it is not an error", async () => {
      const store = await fresh();
      expect(await store.get("nothing/here")).toBeNull();
      await store.delete("nothing/here");
      expect(await store.list("nothing/")).toEqual([]);
    });

    test("create-only write creates, and then loses to the existing key", async () => {
      const store = await fresh();
      const first = await store.putIfAbsent("packs/a", text("one"));
      expect(first.ok).toBe(true);
      const second = await store.putIfAbsent("packs/a", text("two"));
      expect(second.ok).toBe(false);
      const got = await store.get("packs/a");
      expect(got).not.toBeNull();
      expect(str(got!.body)).toBe("one");
      if (first.ok) expect(got!.etag).toBe(first.etag);
    });

    test("bytes round-trip exactly, including empty bodies and every byte value", async () => {
      const store = await fresh();
      const all = new Uint8Array(256).map((_, i) => i);
      expect((await store.putIfAbsent("bin/all", all)).ok).toBe(true);
      expect((await store.putIfAbsent("bin/empty", new Uint8Array())).ok).toBe(true);
      expect(Array.from((await store.get("bin/all"))!.body)).toEqual(Array.from(all));
      expect((await store.get("bin/empty"))!.body.length).toBe(0);
    });

    test("compare-and-swap wins on the current ETag and loses to a changed one", async () => {
      const store = await fresh();
      const created = await store.putIfAbsent("current", text("v1"));
      if (!created.ok) throw new Error("create lost on a fresh store");
      const swapped = await store.putIfMatch("current", text("v2"), created.etag);
      expect(swapped.ok).toBe(true);
      if (!swapped.ok) return;
      expect(swapped.etag).not.toBe(created.etag);
      // The ETag we held is stale now: the swap must lose and change nothing.
      const stale = await store.putIfMatch("current", text("v3"), created.etag);
      expect(stale.ok).toBe(false);
      const got = await store.get("current");
      expect(str(got!.body)).toBe("v2");
      expect(got!.etag).toBe(swapped.etag);
    });

    test("conditional read: unchanged on the held ETag; the object on a stale or another object's ETag; null once deleted", async () => {
      const store = await fresh();
      const created = await store.putIfAbsent("current", text("v1"));
      const other = await store.putIfAbsent("other", new Uint8Array());
      if (!created.ok || !other.ok) throw new Error("create lost on a fresh store");
      expect(await store.getIfNoneMatch("current", created.etag)).toBe("unchanged");
      const swapped = await store.putIfMatch("current", text("v2"), created.etag);
      if (!swapped.ok) throw new Error("swap lost on a quiet store");
      const moved = await store.getIfNoneMatch("current", created.etag);
      expect(moved === "unchanged" || moved === null ? moved : { body: str(moved.body), etag: moved.etag }).toEqual({ body: "v2", etag: swapped.etag });
      expect(await store.getIfNoneMatch("current", swapped.etag)).toBe("unchanged");
      // Another object's ETag is no version of this one; an empty body is an object, not "unchanged".
      const crossed = await store.getIfNoneMatch("current", other.etag);
      expect(crossed === "unchanged" || crossed === null ? crossed : str(crossed.body)).toBe("v2");
      const empty = await store.getIfNoneMatch("other", swapped.etag);
      expect(empty === "unchanged" || empty === null ? empty : { length: empty.body.length, etag: empty.etag }).toEqual({ length: 0, etag: other.etag });
      expect(await store.getIfNoneMatch("other", other.etag)).toBe("unchanged");
      await store.delete("current");
      expect(await store.getIfNoneMatch("current", swapped.etag)).toBeNull();
      expect(await store.getIfNoneMatch("never", other.etag)).toBeNull();
    });

    test("compare-and-swap on a missing key loses", async () => {
      const store = await fresh();
      const result = await store.putIfMatch("missing", text("x"), "0123456789abcdef0123456789abcdef");
      expect(result.ok).toBe(false);
      expect(await store.get("missing")).toBeNull();
    });

    test(`${writers} concurrent create-only writers: exactly one winner, and its bytes are stored`, async () => {
      const store = await fresh();
      const settled = await Promise.allSettled(
        Array.from({ length: writers }, (_, i) => store.putIfAbsent("race/create", text(`writer ${i}`))),
      );
      await checkRace(store, "race/create", settled);
    });

    test(`${writers} concurrent compare-and-swap writers on one ETag: exactly one winner, and its bytes are stored`, async () => {
      const store = await fresh();
      const created = await store.putIfAbsent("race/cas", text("start"));
      if (!created.ok) throw new Error("create lost on a fresh store");
      const settled = await Promise.allSettled(
        Array.from({ length: writers }, (_, i) => store.putIfMatch("race/cas", text(`writer ${i}`), created.etag)),
      );
      await checkRace(store, "race/cas", settled);
    });

    test("list returns exactly the keys under a prefix, in order, with sizes", async () => {
      const store = await fresh();
      for (const key of ["packs/b", "packs/a", "packsx", "current", "packs/c/d"]) {
        expect((await store.putIfAbsent(key, text(key))).ok).toBe(true);
      }
      const listed = await store.list("packs/");
      expect(listed.map((o) => o.key)).toEqual(["packs/a", "packs/b", "packs/c/d"]);
      expect(listed.map((o) => o.size)).toEqual([7, 7, 9]);
      for (const o of listed) expect(o.modified).toBeInstanceOf(Date);
      expect((await store.list("")).map((o) => o.key)).toEqual(["current", "packs/a", "packs/b", "packs/c/d", "packsx"]);
    });

    // gc removes packs older than a grace period by this time (src/engine/gc.ts):
    // a store that listed a constant or a made-up time would let it delete a
    // pack just written, or never delete anything.
    test("listed objects carry a real modification time: near now when fresh, later for a later write", async () => {
      const store = await fresh();
      const near = (d: Date) => expect(Math.abs(d.getTime() - Date.now())).toBeLessThan(5 * 60_000);
      expect((await store.putIfAbsent("mtime/a", text("a"))).ok).toBe(true);
      const created = await store.putIfAbsent("mtime/swapped", text("v1"));
      if (!created.ok) throw new Error("create lost on a fresh store");
      const first = new Map((await store.list("mtime/")).map((o) => [o.key, o.modified.getTime()]));
      for (const o of await store.list("mtime/")) near(o.modified);
      // S3 keeps LastModified to the second: a later write must be a second later to show.
      // Until the store dates a write of its own later than those, by its own clock.
      const firstWritten = Math.max(...first.values());
      let probes = 0;
      const laterNow = async () => {
        await store.putIfAbsent(`clock/${probes++}`, text("probe"));
        return Math.max(...(await store.list("clock/")).map((o) => o.modified.getTime())) > firstWritten;
      };
      await waitFor(laterNow, "a write the store dates later than the first ones", 10_000, 100);
      expect((await store.putIfAbsent("mtime/b", text("b"))).ok).toBe(true);
      expect((await store.putIfMatch("mtime/swapped", text("v2"), created.etag)).ok).toBe(true);
      const second = new Map((await store.list("mtime/")).map((o) => [o.key, o.modified.getTime()]));
      expect(second.get("mtime/a")).toBe(first.get("mtime/a")!);
      expect(second.get("mtime/b")!).toBeGreaterThan(first.get("mtime/a")!);
      expect(second.get("mtime/swapped")!).toBeGreaterThan(first.get("mtime/swapped")!);
      near(new Date(second.get("mtime/b")!));
    });

    test("delete removes a key, and create-only then succeeds again", async () => {
      const store = await fresh();
      expect((await store.putIfAbsent("gone", text("1"))).ok).toBe(true);
      await store.delete("gone");
      expect(await store.get("gone")).toBeNull();
      expect((await store.putIfAbsent("gone", text("2"))).ok).toBe(true);
      expect(str((await store.get("gone"))!.body)).toBe("2");
    });

    test(`offers exactly the capabilities it declares: queue ${options.capabilities.queue}, putWith ${options.capabilities.putWith}`, async () => {
      const store = await fresh();
      expect(store.queue !== undefined).toBe(options.capabilities.queue);
      expect(store.putWith !== undefined).toBe(options.capabilities.putWith);
    });

    if (options.capabilities.queue) describeQueue(fresh);
    if (options.capabilities.putWith) describePutWith(fresh);
  });
}

/** A declared writer queue: turns never overlap, a waiting writer may prepare, and one that gives up leaves the line. */
function describeQueue(fresh: () => Promise<ObjectStore>): void {
  test("queue: a second writer waits, preparing through `peek`, until the first ends its turn; ending again does nothing", async () => {
    const store = await fresh();
    expect((await store.putIfAbsent("queue/seen", text("before"))).ok).toBe(true);
    const first = await store.queue!.enter();
    let entered = false;
    let prepared!: (seen: string | null) => void;
    const preparing = new Promise<string | null>((resolve) => (prepared = resolve));
    const second = store.queue!.enter(async (peek) => {
      const got = await peek.get("queue/seen");
      // It reads conditionally too, as a waiting writer looks again whether `current` moved.
      const again = got === null ? null : await peek.getIfNoneMatch("queue/seen", got.etag);
      prepared(got === null || again !== "unchanged" ? null : str(got.body));
    }).then((turn) => {
      entered = true;
      return turn;
    });
    // It prepares while it waits: the first's turn is not over.
    expect(await preparing).toBe("before");
    expect(entered).toBe(false);
    const written = await store.putIfMatch("queue/seen", text("in the first turn"), (await first.get("queue/seen"))!.etag);
    expect(written.ok).toBe(true);
    first.end();
    first.end();
    const turn = await second;
    // The turn reads what get reads.
    expect(str((await turn.get("queue/seen"))!.body)).toBe("in the first turn");
    expect(await turn.get("queue/none")).toBeNull();
    turn.end();
    turn.end();
  });

  test("queue: a writer that gives up waiting leaves the line, and holds no one up", async () => {
    const store = await fresh();
    const first = await store.queue!.enter();
    const quitting = new AbortController();
    const waiting = store.queue!.enter(undefined, quitting.signal);
    quitting.abort();
    expect(await waiting.then(() => "entered", () => "gave up")).toBe("gave up");
    first.end();
    const next = await store.queue!.enter();
    next.end();
  });
}

/** A declared putWith: the creates and the conditional write land together, or nothing does. */
function describePutWith(fresh: () => Promise<ObjectStore>): void {
  test("putWith: creates and a conditional write land together, `committed` told once; a lost condition lands nothing", async () => {
    const store = await fresh();
    let committed = 0;
    const made = await store.putWith!([{ key: "with/a", body: text("a") }], "with/current", text("v1"), null, () => committed++);
    if (!made.ok) throw new Error("putWith lost on a fresh store");
    expect(committed).toBe(1);
    expect(str((await store.get("with/a"))!.body)).toBe("a");
    const current = await store.get("with/current");
    expect(str(current!.body)).toBe("v1");
    expect(current!.etag).toBe(made.etag);

    // Absent required, but it exists: lost, and its creates with it.
    const exists = await store.putWith!([{ key: "with/b", body: text("b") }], "with/current", text("v2"), null, () => committed++);
    expect(exists.ok).toBe(false);
    // A stale ETag: lost, and its creates with it.
    const stale = await store.putWith!([{ key: "with/c", body: text("c") }], "with/current", text("v3"), "0123456789abcdef0123456789abcdef", () => committed++);
    expect(stale.ok).toBe(false);
    expect(committed).toBe(1);
    expect(await store.get("with/b")).toBeNull();
    expect(await store.get("with/c")).toBeNull();
    expect(str((await store.get("with/current"))!.body)).toBe("v1");

    // The current ETag: it lands, with its creates.
    const swapped = await store.putWith!([{ key: "with/d", body: text("d") }], "with/current", text("v4"), made.etag);
    if (!swapped.ok) throw new Error("putWith lost on the current ETag");
    expect(swapped.etag).not.toBe(made.etag);
    expect(str((await store.get("with/d"))!.body)).toBe("d");
    const now = await store.get("with/current");
    expect(str(now!.body)).toBe("v4");
    expect(now!.etag).toBe(swapped.etag);
  });
}
