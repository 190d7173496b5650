/**
 * History kept by time, so that pulls do not pay for it: commits that leave
 * compaction's base go into history packs, listed in the manifest's
 * `history` (format 2), which pulls never download and the history commands
 * do; a history pack past the period is dropped from the list, oldest
 * first; a period of 0 keeps only the base's commits and lists no history
 * packs, as before.
 */
import { afterEach, expect, test } from "bun:test";
import { commit } from "../../src/engine/commit.ts";
import { collectGarbage } from "../../src/engine/gc.ts";
import { historyLog } from "../../src/engine/history/log.ts";
import { closeHistory, openHistory, readGenerationTree } from "../../src/engine/history/read.ts";
import { MANIFEST_KEY, type Manifest, parseManifest, serializeManifest } from "../../src/engine/publish/manifest.ts";
import { pull } from "../../src/engine/pull.ts";
import type { ObjectStore } from "../../src/store/object-store.ts";
import { makeWorld, read, type World, write } from "../support/fixture.ts";
import { SYSTEM_CLOCK, SYSTEM_RANDOM } from "../../src/surfaces/engine-deps.ts";

let world: World;
afterEach(async () => {
  await world?.close();
});

const DAY = 86_400_000;
const manifestOf = async (store: ObjectStore): Promise<Manifest> => parseManifest((await store.get(MANIFEST_KEY))!.body);
const rawManifest = async (store: ObjectStore) => JSON.parse(new TextDecoder().decode((await store.get(MANIFEST_KEY))!.body));

/** `n` commits, one a `stepMs` apart from `start`, each rewriting one file. */
async function commits(a: string, n: number, start: number, stepMs: number, extra: Partial<Parameters<World["deps"]>[0]> = {}) {
  for (let i = 0; i < n; i++) {
    const when = new Date(start + i * stepMs);
    write(a, "log.md", `${read(a, "log.md") ?? ""}entry ${i}\n`);
    write(a, `notes/${i % 5}.md`, `note ${i}\n`);
    await commit(world.deps({ now: () => when, ...extra }), { path: a, message: `entry ${i}` });
  }
}

test("within the period every commit stays retained; pulls download only the base and recent packs", async () => {
  world = makeWorld();
  const a = world.checkout("a");
  await pull(world.deps(), { path: a });
  const start = Date.now() - 2 * DAY;
  await commits(a, 100, start, 60_000);
  const raw = await rawManifest(world.store);
  // Format 4, for the notebook id this version always writes (format 2 is a manifest with history packs and without the id).
  expect(raw.format).toBe(4);
  expect(raw.history.length).toBeGreaterThan(0);
  for (const h of raw.history) expect(Object.keys(h).sort()).toEqual(["key", "newest", "sha256", "size"]);
  const manifest = await manifestOf(world.store);
  expect(manifest.packs.length).toBeLessThanOrEqual(32);

  // A cold pull reads `packs` only: counting the store's reads of history packs.
  const historyKeys = new Set(manifest.history!.map((h) => h.key));
  let historyReads = 0;
  const counting: ObjectStore = {
    ...world.store,
    kind: "counting",
    get: async (key) => {
      if (historyKeys.has(key)) historyReads++;
      return world.store.get(key);
    },
  };
  const cold = world.checkout("cold");
  await pull(world.deps({ store: counting }), { path: cold });
  expect(read(cold, "log.md")).toBe(read(a, "log.md"));
  expect(historyReads).toBe(0);

  // The history commands read everything back to generation 1.
  const history = await openHistory(world.deps());
  try {
    expect(history.publications.map((p) => p.generation)).toEqual(Array.from({ length: 100 }, (_, i) => 100 - i));
    expect(history.boundary).toBeNull();
    expect((await readGenerationTree(history, 1)).has("log.md")).toBe(true);
    const log = await historyLog(world.deps(), {});
    expect(log.entries.at(-1)!.files).toEqual([
      { path: "log.md", status: "added", insertions: 1, deletions: 0 },
      { path: "notes/0.md", status: "added", insertions: 1, deletions: 0 },
    ]);
    for (const e of log.entries) expect(e.files).not.toBeNull();
  } finally {
    closeHistory(history);
  }
  // gc keeps history packs: the manifest names them.
  const report = await collectGarbage({ ...SYSTEM_CLOCK, ...SYSTEM_RANDOM, store: world.store }, { graceMs: 0 });
  for (const h of manifest.history!) expect(report.deleted).not.toContain(h.key);
  const again = await openHistory({ ...world.deps(), privateRoot: `${world.privateRoot}-fresh` });
  try {
    expect(again.publications.length).toBe(100);
  } finally {
    closeHistory(again);
  }
});

test("history packs past the period leave the list, oldest first; what remains reads back to a shallow boundary", async () => {
  world = makeWorld();
  const a = world.checkout("a");
  await pull(world.deps(), { path: a });
  // 200 commits six hours apart (50 days), with a 30-day period: the oldest drop out.
  const start = Date.now() - 50 * DAY;
  const step = DAY / 4;
  await commits(a, 200, start, step);
  const last = start + 199 * step;
  const manifest = await manifestOf(world.store);
  expect(manifest.history).toBeDefined();
  const cutoff = (last - 30 * DAY) / 1000;
  // Dropped at compactions only: a pack may outlive the period by the commits since the last one (8 of 32 packs stay, so under 25 commits).
  for (const h of manifest.history!) expect(h.newest).toBeGreaterThanOrEqual(Math.floor(cutoff - (25 * step) / 1000));
  const history = await openHistory(world.deps());
  try {
    const oldest = history.publications.at(-1)!;
    expect(history.boundary).not.toBeNull();
    // At least the period is kept (and at most the period plus one compaction's worth of commits more).
    expect(new Date(oldest.time).getTime()).toBeLessThanOrEqual(last - 30 * DAY);
    expect(new Date(oldest.time).getTime()).toBeGreaterThan(last - 40 * DAY);
    expect(oldest.generation).toBeGreaterThan(1);
    expect(history.publications.length).toBeLessThan(200);
    // Every retained generation's tree reads whole.
    for (const p of history.publications) await readGenerationTree(history, p.generation);
  } finally {
    closeHistory(history);
  }
});

test("a period of 0 keeps only the base's commits and lists no history packs, as before them", async () => {
  world = makeWorld();
  const a = world.checkout("a");
  await pull(world.deps(), { path: a });
  await commits(a, 40, Date.now() - DAY, 60_000, { compaction: { periodMs: 0 } });
  const raw = await rawManifest(world.store);
  expect(raw.format).toBe(4);
  expect(raw.history).toBeUndefined();
  const history = await openHistory(world.deps());
  try {
    expect(history.boundary).not.toBeNull();
    expect(history.publications.length).toBeLessThan(40);
    expect(history.publications.length).toBeGreaterThanOrEqual(32);
  } finally {
    closeHistory(history);
  }
  // Turning the period back on starts keeping history again; turning it off drops the history packs.
  await commits(a, 30, Date.now() - DAY / 2, 60_000);
  expect((await rawManifest(world.store)).history.length).toBeGreaterThan(0);
  await commits(a, 30, Date.now() - DAY / 4, 60_000, { compaction: { periodMs: 0 } });
  expect((await rawManifest(world.store)).history).toBeUndefined();
});

/** "OK" when `m` parses as a manifest, else the reason it is refused. */
function parse(m: unknown): string | undefined {
  try {
    parseManifest(new TextEncoder().encode(JSON.stringify(m)));
    return "OK";
  } catch (e) {
    return (e as { reason?: string }).reason;
  }
}

test("manifest validation: format 2 exactly with history packs; history keys checked like pack keys", async () => {
  const pack = { key: `packs/${"a".repeat(64)}.pack`, size: 1, sha256: "a".repeat(64) };
  const hist = { key: `packs/${"b".repeat(64)}.pack`, size: 1, sha256: "b".repeat(64), newest: 5 };
  const base = { generation: 1, head: "c".repeat(40), publication: "d".repeat(32), packs: [pack] };
  expect(parse({ format: 1, ...base })).toBe("OK");
  expect(parse({ format: 2, ...base, history: [hist] })).toBe("OK");
  expect(parse({ format: 1, ...base, history: [hist] })).toBe("MANIFEST_INVALID");
  expect(parse({ format: 2, ...base })).toBe("MANIFEST_INVALID");
  expect(parse({ format: 2, ...base, history: [] })).toBe("MANIFEST_INVALID");
  expect(parse({ format: 2, ...base, history: [{ ...hist, newest: -1 }] })).toBe("MANIFEST_INVALID");
  expect(parse({ format: 2, ...base, history: [{ ...hist, key: pack.key, sha256: pack.sha256 }] })).toBe("MANIFEST_INVALID");
  expect(parse({ format: 2, ...base, history: [{ ...hist, extra: 1 }] })).toBe("MANIFEST_INVALID");
  expect(parse({ format: 3, ...base, history: [hist] })).toBe("MANIFEST_INVALID");
});

test("manifest validation: format 4 exactly with the notebook id; binaries that know formats 1 to 3 fail closed on it", () => {
  const base = { generation: 1, head: "c".repeat(40), publication: "d".repeat(32), packs: [{ key: `packs/${"a".repeat(64)}.pack`, size: 1, sha256: "a".repeat(64) }] };
  const hist = { key: `packs/${"b".repeat(64)}.pack`, size: 1, sha256: "b".repeat(64), newest: 5 };
  const notebook = "e".repeat(32);
  expect(parse({ format: 4, notebook, ...base })).toBe("OK");
  expect(parse({ format: 4, notebook, ...base, history: [hist] })).toBe("OK");
  expect(parse({ format: 4, ...base })).toBe("MANIFEST_INVALID");
  expect(parse({ format: 1, notebook, ...base })).toBe("MANIFEST_INVALID");
  expect(parse({ format: 2, notebook, ...base, history: [hist] })).toBe("MANIFEST_INVALID");
  expect(parse({ format: 4, notebook: "not hex", ...base })).toBe("MANIFEST_INVALID");
  // What a binary that knows formats 1 to 3 does with it: its strict schema knows neither the format nor the field.
  expect(parse({ format: 5, notebook, ...base })).toBe("MANIFEST_INVALID");
  expect(parse({ format: 1, ...base, extra: notebook })).toBe("MANIFEST_INVALID");
  // What this version writes: format 4, the id first after it.
  const written = new TextDecoder().decode(serializeManifest({ format: 4, notebook, ...base }));
  expect(Object.keys(JSON.parse(written))).toEqual(["format", "notebook", "generation", "head", "publication", "packs"]);
});
