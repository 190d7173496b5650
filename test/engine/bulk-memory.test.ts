/**
 * A large notebook is never held in memory all at once: the scan hands each
 * file it reads to the object cache as it reads it and keeps none of their
 * bytes, the checkout keeps a bounded amount of them (SCAN_KEEPS_BYTES) for
 * the merge and the marker check, and what it did not keep is read back
 * when needed — the commit still publishes every file as it was, and still
 * refuses a marker block in a file whose bytes were not kept.
 */
import { afterAll, expect, test } from "bun:test";
import { scanNotebook } from "../../src/engine/checkout/scan.ts";
import { commit } from "../../src/engine/commit.ts";
import { SCAN_KEEPS_BYTES, scanLocal } from "../../src/engine/checkout/session-scan.ts";
import { withCheckout } from "../../src/engine/with-checkout.ts";
import { blobId } from "../../src/engine/git/objects.ts";
import { pull } from "../../src/engine/pull.ts";
import { DomainError } from "../../src/contract/errors.ts";
import { git, withPacksInGit } from "../support/cgit.ts";
import { mulberry32 } from "../support/seeded.ts";
import { makeWorld, read, write } from "../support/fixture.ts";

const world = makeWorld();
afterAll(() => world.close());

/** Text of `bytes` bytes that deflate cannot shrink much (so a pack of it is as large as the files). */
function noise(seed: number, bytes: number): string {
  const rand = mulberry32(seed);
  let s = "";
  while (s.length < bytes) s += `${Math.floor(rand() * 2 ** 52).toString(36)}${rand() < 0.1 ? "\n" : " "}`;
  return `${s.slice(0, bytes - 1)}\n`;
}

// More bytes than the checkout keeps: 40 files of 512 KiB, 20 MiB in all.
const FILES = 40;
const SIZE = 512 << 10;

test("the scan stores each file as it reads it and returns none of their bytes", async () => {
  const dir = world.checkout("scan");
  const absorbed = new Map<string, string>();
  for (let i = 0; i < 5; i++) write(dir, `d/f${i}.md`, noise(i, 4096));
  const { files } = scanNotebook(dir, {
    absorb: (path, bytes) => {
      absorbed.set(path, blobId(bytes));
      return absorbed.get(path)!;
    },
  });
  expect(files.size).toBe(5);
  for (const [path, file] of files) {
    expect(file.bytes).toBeNull();
    expect(file.oid).toBe(absorbed.get(path)!);
  }
});

test("a commit keeps a bounded amount of the files it read in memory, and publishes every one of them as it was", async () => {
  const a = world.checkout("a");
  await pull(world.deps(), { path: a });
  const texts = Array.from({ length: FILES }, (_, i) => noise(100 + i, SIZE));
  texts.forEach((t, i) => write(a, `big/f${String(i).padStart(2, "0")}.md`, t));
  expect(FILES * SIZE).toBeGreaterThan(SCAN_KEEPS_BYTES);

  await withCheckout(world.deps(), a, { create: false }, async (checkout) => {
    await scanLocal(checkout);
    expect(checkout.local.size).toBe(FILES);
    let kept = 0;
    for (const bytes of checkout.localContents.values()) kept += bytes.byteLength;
    expect(kept).toBeLessThanOrEqual(SCAN_KEEPS_BYTES);
    expect(checkout.localContents.size).toBeLessThan(FILES);
    // What was not kept is in the object cache.
    for (const oid of checkout.local.values()) expect((await checkout.git.readBlob(oid)).byteLength).toBe(SIZE);
  });

  const out = await commit(world.deps(), { path: a, message: "big" });
  expect(out.files.length).toBe(FILES);
  expect(out.files.every((f) => f.insertions > 0 && f.deletions === 0)).toBe(true);
  const b = world.checkout("b");
  await pull(world.deps(), { path: b });
  texts.forEach((t, i) => expect(read(b, `big/f${String(i).padStart(2, "0")}.md`)).toBe(t));
  // The pack, written to a file a megabyte at a time, is one C git reads.
  await withPacksInGit(world.store, ({ repo }) => {
    expect(git(repo, "ls-tree", "-r", "--name-only", "main").out.trim().split("\n")).toHaveLength(FILES);
  });
});

test("a marker block in a file whose bytes the scan did not keep is still refused", async () => {
  const c = world.checkout("c");
  await pull(world.deps(), { path: c });
  // The last file in path order: the kept bytes are spent before the scan reaches it.
  for (let i = 0; i < FILES; i++) write(c, `m/f${String(i).padStart(2, "0")}.md`, noise(900 + i, SIZE));
  write(c, "z.md", "<<<<<<< ours\nmine\n=======\ntheirs\n>>>>>>> theirs\n");
  const refused = await commit(world.deps(), { path: c, message: "markers" }).catch((e) => e);
  expect(refused).toBeInstanceOf(DomainError);
  expect((refused as DomainError).reason).toBe("UNRESOLVED_MARKERS");
  expect((refused as DomainError).files.map((f) => f.path)).toEqual(["z.md"]);
});

test("the scan counts the lines of each file it reads, so the diffstat of files a commit adds reads none of them back", async () => {
  const d = world.checkout("d");
  await pull(world.deps(), { path: d });
  const texts = Array.from({ length: 5 }, (_, i) => noise(700 + i, 4096 * (i + 1)));
  texts.forEach((t, i) => write(d, `n/f${i}.md`, t));
  const lines = (t: string) => t.split("\n").length - 1;
  await withCheckout(world.deps(), d, { create: false }, async (checkout) => {
    await scanLocal(checkout);
    texts.forEach((t, i) => expect(checkout.lineCounts.get(checkout.local.get(`n/f${i}.md`)!)).toBe(lines(t)));
  });
  const out = await commit(world.deps(), { path: d, message: "counted" });
  expect(out.files.map((f) => [f.path, f.insertions, f.deletions])).toEqual(texts.map((t, i) => [`n/f${i}.md`, lines(t), 0]));
});
