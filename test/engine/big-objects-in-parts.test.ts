/**
 * A big object is deflated a slice at a time (src/engine/git/zlib.ts
 * deflateInParts), its loose file written and its pack entry added as each
 * slice is made, so that neither a wrapped copy of the content nor its whole
 * stream is in memory. What comes out must still be one zlib stream per
 * object that C git reads: the loose object through `git cat-file` and
 * `git fsck`, the pack through `git index-pack` and `git verify-pack`.
 */
import { afterAll, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { inflateSync } from "node:zlib";
import { ObjectCache } from "../../src/engine/git/object-cache.ts";
import { adler32Combine, deflateInParts } from "../../src/engine/git/zlib.ts";
import { ProcessMemory } from "../../src/engine/process-memory.ts";
import { SYSTEM_RANDOM } from "../../src/surfaces/engine-deps.ts";
import { git } from "../support/cgit.ts";
import { mulberry32 } from "../support/seeded.ts";

const root = mkdtempSync(join(tmpdir(), "slivingdoc-parts-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));

/** Lines of words, `bytes` long: text that compresses as notes do. */
function text(bytes: number, seed: number): Buffer {
  const rand = mulberry32(seed);
  const words = "the agent notes plan decided ship review merge commit pull store pack tree file line".split(" ");
  const out = Buffer.alloc(bytes);
  for (let at = 0; at < bytes; ) {
    const line = `${Array.from({ length: 4 + Math.floor(rand() * 10) }, () => words[Math.floor(rand() * words.length)]).join(" ")}\n`;
    at += out.write(line, at);
  }
  return out;
}

const SLICE = 4 << 20;

test("a content over a slice is deflated in parts, none near its size, that join into one zlib stream of prefix and content", () => {
  for (const size of [10, SLICE, SLICE + 1, 3 * SLICE + 12345]) {
    const content = text(size, size);
    for (const prefix of [null, Buffer.from(`blob ${size}\0`)]) {
      const parts: Buffer[] = [];
      deflateInParts(prefix, content, 1, (part) => parts.push(part));
      // node:zlib checks the Adler-32 trailer: a wrong sum throws.
      const back = inflateSync(Buffer.concat(parts));
      expect(Buffer.compare(back, prefix === null ? content : Buffer.concat([prefix, content]))).toBe(0);
      if (size <= SLICE) expect(parts.length).toBe(1);
      else {
        // Header, one part per slice (and one for the prefix), trailer.
        expect(parts.length).toBe(2 + Math.ceil(size / SLICE) + (prefix === null ? 0 : 1));
        expect(Math.max(...parts.map((p) => p.length))).toBeLessThan(SLICE);
      }
    }
  }
});

test("Adler-32 combined from two halves is the sum of the whole", () => {
  const rand = mulberry32(3);
  for (let i = 0; i < 50; i++) {
    const whole = text(1 + Math.floor(rand() * 200_000), i);
    const cut = Math.floor(rand() * whole.length);
    const a = whole.subarray(0, cut);
    const b = whole.subarray(cut);
    expect(adler32Combine(Bun.hash.adler32(a), Bun.hash.adler32(b), b.length)).toBe(Bun.hash.adler32(whole));
  }
});

test("a big blob's loose object and pack entry, written in parts, are what C git reads and verifies", async () => {
  const gitdir = join(root, "cache");
  const cache = await ObjectCache.open(gitdir, new ProcessMemory(SYSTEM_RANDOM).objects, SYSTEM_RANDOM.randomId);
  const big = text(2 * SLICE + 777, 11);
  const small = text(1000, 12);
  const oids = [await cache.writeBlob(big), await cache.writeBlob(small)];
  // The cache is a minimal bare repository; C git wants a refs directory to take it as one.
  mkdirSync(join(gitdir, "refs"), { recursive: true });
  expect(Buffer.compare(Buffer.from(git(gitdir, "cat-file", "blob", oids[0]!).out, "utf8"), big)).toBe(0);
  // fsck inflates and hashes every loose object, reachable or not (nothing is: no refs).
  const fsck = git(gitdir, "fsck", "--strict");
  expect(fsck.err).not.toMatch(/error|corrupt|bad|missing/i);
  expect(fsck.code).toBe(0);

  // Packed into a repository of its own, the pack alone holds the objects.
  const { pack, idx } = await cache.packObjects(oids);
  const repo = join(root, "repo");
  expect(git(root, "init", "-q", "--bare", repo).code).toBe(0);
  const file = join(repo, "objects", "pack", "incoming.pack");
  writeFileSync(file, pack);
  expect(git(repo, "index-pack", file).code).toBe(0);
  const verified = git(repo, "verify-pack", "-v", file.replace(/\.pack$/, ".idx"));
  expect(verified.code).toBe(0);
  expect(verified.out).toContain(": ok");
  expect(Buffer.compare(Buffer.from(git(repo, "cat-file", "blob", oids[0]!).out, "utf8"), big)).toBe(0);
  expect(readFileSync(file).length).toBe(pack.byteLength);
  // The index made as the pack was written is the one C git makes from the pack, byte for byte.
  expect(Buffer.compare(readFileSync(file.replace(/\.pack$/, ".idx")), idx!)).toBe(0);
});
