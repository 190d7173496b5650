/**
 * A server's watcher (checkout/watcher.ts) only narrows the scan: after any
 * mix of edits, renames, deletes, directory moves, `.gitignore` changes,
 * refused files and a simulated overflow of the kernel's queue, the watched
 * scan answers exactly as a full scan of the same directory does.
 */
import { afterEach, expect, test } from "bun:test";
import fc from "fast-check";
import { mkdirSync, mkdtempSync, realpathSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { randomHex } from "../../src/contract/random-hex.ts";
import { blobId } from "../../src/engine/git/objects.ts";
import { HeldPaths } from "../../src/engine/checkout/ignored.ts";
import { MAX_FILE_BYTES, scanNotebook, WATCH_COOKIE_PREFIX } from "../../src/engine/checkout/scan.ts";
import { scanWatched, type WatchedScanOptions } from "../../src/engine/checkout/watched-scan.ts";
import { CheckoutWatcher, watchable, WatcherMemory } from "../../src/engine/checkout/watcher.ts";

const watchers: CheckoutWatcher[] = [];
let parent = "";
afterEach(() => {
  for (const w of watchers.splice(0)) w.close();
  if (parent !== "") rmSync(parent, { recursive: true, force: true });
  parent = "";
});

/** A checkout directory in a parent of its own, where the directories moved out of it go. */
function tempDir(): string {
  if (parent === "") parent = realpathSync(mkdtempSync(join(tmpdir(), "slivingdoc-watch-")));
  return mkdtempSync(join(parent, "checkout-"));
}

function startWatcher(dir: string): CheckoutWatcher {
  const watcher = CheckoutWatcher.start(dir);
  if (watcher === null || watcher === "refused") throw new Error("the test directory's file system cannot be watched");
  watchers.push(watcher);
  return watcher;
}

const FILES = ["a.md", "b.md", "n.log", "skip.swp", "d1/x.md", "d1/y.md", "d1/keep.log", "d1/sub/w.md", "d2/z.md", "d2/d3/v.md"];
const DIRS = ["d1", "d2", "d1/sub", "d2/d3", "d4"];
const TEXTS = ["one\n", "two\n", "three lines\nof\ntext\n", "one\n".repeat(3)];

const CLOCK = { sleep: Bun.sleep, randomId: randomHex };

// A held path the rules would hide: the held answers matter too.
const options: WatchedScanOptions = {
  held: new HeldPaths(new Map([["d1/keep.log", "0".repeat(40)]])),
  absorb: (_path, bytes) => blobId(bytes),
  maxFileBytes: MAX_FILE_BYTES,
};

type Op =
  | { op: "write"; path: string; text: string }
  | { op: "binary"; path: string }
  | { op: "delete"; path: string }
  | { op: "rename"; from: string; to: string }
  | { op: "moveDir"; from: string; to: string }
  | { op: "removeDir"; path: string }
  | { op: "moveOut"; path: string }
  | { op: "ignore"; text: string }
  | { op: "overflow" }
  | { op: "scan" };

const opArb: fc.Arbitrary<Op> = fc.oneof(
  { arbitrary: fc.record({ op: fc.constant("write" as const), path: fc.constantFrom(...FILES), text: fc.constantFrom(...TEXTS) }), weight: 6 },
  { arbitrary: fc.record({ op: fc.constant("binary" as const), path: fc.constantFrom(...FILES) }), weight: 1 },
  { arbitrary: fc.record({ op: fc.constant("delete" as const), path: fc.constantFrom(...FILES) }), weight: 2 },
  { arbitrary: fc.record({ op: fc.constant("rename" as const), from: fc.constantFrom(...FILES), to: fc.constantFrom(...FILES) }), weight: 2 },
  { arbitrary: fc.record({ op: fc.constant("moveDir" as const), from: fc.constantFrom(...DIRS), to: fc.constantFrom(...DIRS) }), weight: 1 },
  { arbitrary: fc.record({ op: fc.constant("removeDir" as const), path: fc.constantFrom(...DIRS) }), weight: 1 },
  { arbitrary: fc.record({ op: fc.constant("moveOut" as const), path: fc.constantFrom(...DIRS) }), weight: 1 },
  { arbitrary: fc.record({ op: fc.constant("ignore" as const), text: fc.constantFrom("*.log\n", "", "d2/\n") }), weight: 1 },
  { arbitrary: fc.constant({ op: "overflow" as const }), weight: 1 },
  { arbitrary: fc.constant({ op: "scan" as const }), weight: 4 },
);

/** Apply one change; one the directory cannot take as it is now (a rename of a missing file) changes nothing. */
function apply(dir: string, op: Op, watcher: CheckoutWatcher): void {
  const at = (p: string) => join(dir, p);
  try {
    if (op.op === "write" || op.op === "binary") {
      mkdirSync(dirname(at(op.path)), { recursive: true });
      writeFileSync(at(op.path), op.op === "write" ? op.text : "bad\u0000bytes");
    } else if (op.op === "delete") rmSync(at(op.path), { force: true });
    else if (op.op === "rename" || op.op === "moveDir") {
      mkdirSync(dirname(at(op.to)), { recursive: true });
      renameSync(at(op.from), at(op.to));
    } else if (op.op === "removeDir") rmSync(at(op.path), { recursive: true, force: true });
    // Out of the watched tree: only the directory's own name is heard.
    else if (op.op === "moveOut") renameSync(at(op.path), `${dir}-out-${randomHex(4)}`);
    else if (op.op === "ignore") writeFileSync(at(".gitignore"), op.text);
    else if (op.op === "overflow") watcher.markLost();
  } catch {
    /* not possible in this state: nothing changed */
  }
}

/** What a scan answers, comparable: each file's blob id and the ignored entries, or the refusal's message. */
function answer(scan: () => { files: Map<string, { oid: string | null }>; ignored: string[] }): unknown {
  try {
    const { files, ignored } = scan();
    return { files: [...files].map(([path, f]) => [path, f.oid]), ignored };
  } catch (e) {
    return { refused: (e as Error).message };
  }
}

async function watchedAnswer(watcher: CheckoutWatcher, counts: { narrowed: number }): Promise<unknown> {
  try {
    const { files, ignored, narrowed } = await scanWatched(watcher, options, CLOCK);
    if (narrowed) counts.narrowed++;
    return { files: [...files].map(([path, f]) => [path, f.oid]), ignored };
  } catch (e) {
    return { refused: (e as Error).message };
  }
}

test("the watched scan answers as a full scan after any edits, renames, deletes, directory moves and overflows", async () => {
  expect(watchable(realpathSync(tmpdir()))).toBe(true);
  const counts = { narrowed: 0 };
  await fc.assert(
    fc.asyncProperty(fc.array(opArb, { minLength: 1, maxLength: 40 }), async (ops) => {
      const dir = tempDir();
      for (const path of FILES.slice(0, 8)) apply(dir, { op: "write", path, text: "seed\n" }, null as never);
      const watcher = startWatcher(dir);
      try {
        expect(await watchedAnswer(watcher, counts)).toEqual(answer(() => scanNotebook(dir, options)));
        for (const op of [...ops, { op: "scan" } as const]) {
          apply(dir, op, watcher);
          if (op.op === "scan") expect(await watchedAnswer(watcher, counts)).toEqual(answer(() => scanNotebook(dir, options)));
        }
      } finally {
        watcher.close();
        rmSync(dir, { recursive: true, force: true });
      }
    }),
    { numRuns: 100 },
  );
  // The property is about narrowing: most warm scans must have been narrowed, not answered by a full scan.
  expect(counts.narrowed).toBeGreaterThan(20);
}, 120_000);

test("a file written just before the call is seen, and the cookie is never a notebook file", async () => {
  const dir = tempDir();
  writeFileSync(join(dir, "a.md"), "one\n");
  const watcher = startWatcher(dir);
  const counts = { narrowed: 0 };
  await watchedAnswer(watcher, counts);
  for (let i = 0; i < 20; i++) {
    writeFileSync(join(dir, "a.md"), `edit ${i}\n`);
    writeFileSync(join(dir, `${WATCH_COOKIE_PREFIX}${"0".repeat(16)}`), "left by a killed server\n");
    expect(await watchedAnswer(watcher, counts)).toEqual(answer(() => scanNotebook(dir, options)));
    expect((await scanWatched(watcher, options, CLOCK)).files.get("a.md")?.oid).toBe(blobId(new TextEncoder().encode(`edit ${i}\n`)));
  }
  expect(counts.narrowed).toBe(20);
});

test("after a simulated overflow the next scan is a full one, then narrowing resumes", async () => {
  const dir = tempDir();
  writeFileSync(join(dir, "a.md"), "one\n");
  const watcher = startWatcher(dir);
  expect((await scanWatched(watcher, options, CLOCK)).narrowed).toBe(false);
  expect((await scanWatched(watcher, options, CLOCK)).narrowed).toBe(true);
  watcher.markLost();
  writeFileSync(join(dir, "b.md"), "two\n");
  const after = await scanWatched(watcher, options, CLOCK);
  expect(after.narrowed).toBe(false);
  expect([...after.files.keys()]).toEqual(["a.md", "b.md"]);
  expect((await scanWatched(watcher, options, CLOCK)).narrowed).toBe(true);
});

test("a held path answered differently, or a blob the stat cache no longer records, makes the next scan a full one", async () => {
  const dir = tempDir();
  writeFileSync(join(dir, ".gitignore"), "*.log\n");
  writeFileSync(join(dir, "keep.log"), "held\n");
  writeFileSync(join(dir, "a.md"), "one\n");
  const watcher = startWatcher(dir);
  const held = new HeldPaths(new Map([["keep.log", "0".repeat(40)]]));
  const first = await scanWatched(watcher, { ...options, held }, CLOCK);
  expect([...first.files.keys()]).toEqual([".gitignore", "a.md", "keep.log"]);
  // After a pull whose accepted state no longer holds it, the rule hides it again.
  const released = await scanWatched(watcher, { ...options, held: new HeldPaths() }, CLOCK);
  expect(released.narrowed).toBe(false);
  expect(released.ignored).toEqual(["keep.log"]);
  expect((await scanWatched(watcher, { ...options, held: new HeldPaths() }, CLOCK)).narrowed).toBe(true);
  // The stat cache forgot a file (an object went missing): the view does not vouch for it.
  const forgotten = await scanWatched(watcher, { ...options, held: new HeldPaths(), recorded: () => null }, CLOCK);
  expect(forgotten.narrowed).toBe(false);
});

test("a file in a directory just made, edited right after the scan that found it, is seen", async () => {
  const dir = tempDir();
  const watcher = startWatcher(dir);
  await scanWatched(watcher, options, CLOCK);
  for (let i = 0; i < 30; i++) {
    // The runtime adds a new directory's watch as it handles the directory's creation, before the
    // cookie that follows it is heard: an edit right after the full scan that found it is heard.
    mkdirSync(join(dir, `d${i}`, "e"), { recursive: true });
    writeFileSync(join(dir, `d${i}`, "e", "f.md"), "aaaa\n");
    await scanWatched(watcher, options, CLOCK);
    writeFileSync(join(dir, `d${i}`, "e", "f.md"), "bbbb\n");
    expect(await watchedAnswer(watcher, { narrowed: 0 })).toEqual(answer(() => scanNotebook(dir, options)));
  }
});

test("not watched where a change could go unheard: another file system mounted below, or one inotify may not report", () => {
  // /dev is a tmpfs (trusted) with other file systems mounted below it (/dev/shm, /dev/pts).
  expect(watchable("/dev/shm")).toBe(true);
  expect(watchable("/dev")).toBe(false);
  expect(watchable("/proc/self")).toBe(false);
  const memory = new WatcherMemory(2);
  expect(memory.for("/dev")).toBeNull();
  expect(memory.for("/proc/self")).toBeNull();
});
