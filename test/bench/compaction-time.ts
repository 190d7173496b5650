/**
 * How long one compaction takes (publish/compact.ts compactPacks) on a
 * cache of 33 packs — 33 commits of 150 files of about 1 KB each, 4,950
 * files — the work a commit past 32 packs does in its turn, or a server
 * between calls. Prints one line of JSON. To compare two builds, run it
 * in turn against this tree and another checkout of the project (a git
 * worktree with its own `npm ci`):
 *
 *   bun test/bench/compaction-time.ts            # this tree
 *   bun test/bench/compaction-time.ts ../other   # the other tree's code
 */
const ROOT = process.argv[2] ? (await import("node:path")).resolve(process.argv[2]) : (await import("node:path")).join(import.meta.dir, "../..");
const { mkdtempSync, rmSync } = await import("node:fs");
const { join } = await import("node:path");
const { tmpdir } = await import("node:os");
const { ObjectCache } = await import(`${ROOT}/src/engine/git/object-cache.ts`);
const { ProcessMemory } = await import(`${ROOT}/src/engine/process-memory.ts`);
const { SYSTEM_RANDOM } = await import(`${ROOT}/src/surfaces/engine-deps.ts`);
const { SYSTEM_CLOCK } = await import(`${ROOT}/src/surfaces/system-clock.ts`);
const { compactPacks } = await import(`${ROOT}/src/engine/publish/compact.ts`);
const { packDescriptor } = await import(`${ROOT}/src/engine/publish/manifest.ts`);
const { openSqliteStore } = await import(`${ROOT}/src/store/sqlite.ts`);
const dir = mkdtempSync(join(tmpdir(), "ct-"));
const store = openSqliteStore(join(dir, "s.db"), SYSTEM_CLOCK);
const cache = await ObjectCache.open(join(dir, "git"), new ProcessMemory(SYSTEM_RANDOM).objects, SYSTEM_RANDOM.randomId);
const packs: any[] = [];
let parent: string | null = null;
const files = new Map<string, string>();
for (let c = 0; c < 33; c++) {
  const blobs: string[] = [];
  for (let i = 0; i < 150; i++) {
    const oid = await cache.writeBlob(Buffer.from(`file ${c}-${i} `.repeat(60) + "\n"));
    files.set(`d${i % 10}/f${c}-${i}.md`, oid);
    blobs.push(oid);
  }
  const { tree, trees } = await cache.writeFlatTree(files);
  const head: string = await cache.writeCommit({ tree, parent, message: `c${c}`, when: new Date(1_700_000_000_000 + c * 1000), agent: "a", base: c });
  const { pack, idx } = await cache.packObjects([...blobs, ...trees, head]);
  const d = packDescriptor(pack);
  await cache.importPack(d.sha256, pack, idx);
  packs.push(d);
  parent = head;
}
const t = performance.now();
const r = await compactPacks({ store, git: cache, head: parent!, packs, policy: {}, history: [], now: new Date(), randomId: SYSTEM_RANDOM.randomId });
const ms = performance.now() - t;
console.log(JSON.stringify({ ms: +ms.toFixed(1), objects: r?.objects }));
cache.close();
await store.close();
rmSync(dir, { recursive: true, force: true });
