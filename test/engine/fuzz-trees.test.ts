/**
 * Fuzz of notebook trees, since hand-picked cases miss the odd names and
 * bytes users meet: seeded random trees in checkout A — Unicode and odd
 * names (spaces, emoji, NFC next to NFD, leading dots, names of exactly 255
 * bytes, deep paths), empty files, CRLF and lone CR, a BOM, 100 KB lines,
 * no final newline — committed from A and pulled into B, over several
 * rounds of edits, deletions, renames and file/directory swaps in both
 * checkouts. Every valid file must round-trip byte for byte.
 *
 * Most rounds also plant entries the notebook must refuse — binaries,
 * invalid UTF-8, symlinks, FIFOs, `.git` directories and files, names that
 * are not UTF-8 — and the commit (and a pull) must answer INVALID_REQUEST ·
 * INVALID_CONTENT naming exactly those entries, computed here from what was
 * planted, with the store and the visible files untouched.
 *
 * The seed is printed; SLIVINGDOC_TREE_SEED=N replays a run.
 *
 * Until the scan's BOM bug is fixed (see the last test of this file), the
 * round trip fails on most seeds: names beginning with U+FEFF vanish.
 */
import { afterAll, expect, test } from "bun:test";
import { existsSync, readdirSync, readFileSync, rmdirSync, rmSync } from "node:fs";
import { basename, dirname, join } from "node:path";
import { commit } from "../../src/engine/commit.ts";
import { pull } from "../../src/engine/pull.ts";
import { makeWorld, read, refusal, snapshotStore, type World, write } from "../support/fixture.ts";
import { createInvalid, emptyDirectories, INVALID_KINDS, type InvalidEntry, readTree, removeEntry, TreeGen, writeFile } from "../support/fuzz-tree.ts";
import { mulberry32 } from "../support/seeded.ts";

/** The same text with `#` before every line that has any character: comments only. */
function asComments(bytes: Uint8Array): Uint8Array {
  const text = Buffer.from(bytes).toString("utf8");
  return new TextEncoder().encode(text.replace(/(^|\r\n|\r|\n)(?=[^\r\n])/g, "$1#"));
}

const SEED = process.env.SLIVINGDOC_TREE_SEED !== undefined ? Number(process.env.SLIVINGDOC_TREE_SEED) : Math.floor(Math.random() * 2 ** 31);
const ROUNDS = 12;
console.log(`fuzz-trees: seed ${SEED} (replay with SLIVINGDOC_TREE_SEED=${SEED})`);

let world: World | undefined;
afterAll(async () => {
  await world?.close();
});

type Tree = Map<string, Uint8Array>;

const hexOf = (b: Uint8Array) => new Bun.CryptoHasher("sha1").update(b).digest("hex").slice(0, 12);

/** Differences between the expected and the actual files, as readable lines; empty when equal byte for byte. */
function treeDiff(expected: Tree, actual: Map<string, Buffer>): string[] {
  const out: string[] = [];
  for (const [path, bytes] of expected) {
    const got = actual.get(path);
    if (got === undefined) out.push(`missing ${JSON.stringify(path)}`);
    else if (!got.equals(bytes)) out.push(`differs ${JSON.stringify(path)}: ${bytes.byteLength} bytes ${hexOf(bytes)} → ${got.byteLength} bytes ${hexOf(got)}`);
  }
  for (const path of actual.keys()) if (!expected.has(path)) out.push(`extra ${JSON.stringify(path)}`);
  return out;
}

/** Delete a visible file and the directories it leaves empty, as a user tidying up would. */
function deleteFile(root: string, path: string): void {
  rmSync(join(root, path));
  for (let d = dirname(path); d !== "." && d !== ""; d = dirname(d)) {
    if (readdirSync(join(root, d)).length > 0) break;
    rmdirSync(join(root, d));
  }
}

/** Whether `path` can be a file next to the files of `tree`: no file is its ancestor, and it is no file's ancestor. */
function fits(tree: Tree, path: string, root: string): boolean {
  if (Buffer.byteLength(join(root, path)) > 3800) return false; // stay well inside PATH_MAX
  const segments = path.split("/");
  for (let i = 1; i < segments.length; i++) if (tree.has(segments.slice(0, i).join("/"))) return false;
  for (const other of tree.keys()) if (other.startsWith(`${path}/`)) return false;
  return true;
}

/** Random edits in one checkout, mirrored in the model: add, rewrite, touch line endings, delete, rename, file ⇄ directory. */
function edit(gen: TreeGen, root: string, tree: Tree, adds: number): void {
  const add = (path: string, given: Uint8Array) => {
    // A `.gitignore`'s lines are rules, which leave files out as they should
    // (their own differential tests check them): here the name still goes
    // round trip with random bytes, every line a comment.
    const bytes = basename(path) === ".gitignore" ? asComments(given) : given;
    writeFile(root, path, bytes);
    tree.set(path, bytes);
  };
  const remove = (path: string) => {
    deleteFile(root, path);
    tree.delete(path);
  };
  for (let i = 0; i < adds; i++) {
    const path = gen.path(30);
    if (!tree.has(path) && fits(tree, path, root)) add(path, gen.content());
  }
  for (const [path, bytes] of [...tree]) {
    const r = gen.rnd();
    if (r < 0.1) {
      remove(path);
    } else if (r < 0.25) {
      const text = Buffer.from(bytes).toString("utf8");
      const variants = [
        () => gen.content(),
        () => Buffer.concat([bytes, new TextEncoder().encode(`${gen.line()}\n`)]),
        () => new TextEncoder().encode(text.replace(/\r?\n/g, "\r\n")),
        () => new TextEncoder().encode(text.replace(/\r\n/g, "\n")),
        () => new TextEncoder().encode(text.replace(/\r?\n$/, "")),
        () => new TextEncoder().encode(text.startsWith("\ufeff") ? text.slice(1) : `\ufeff${text}`),
        () => new Uint8Array(0),
      ];
      add(path, gen.pick(variants)());
    } else if (r < 0.28) {
      // Rename: same bytes under a new name.
      const to = gen.path(6);
      remove(path);
      if (!tree.has(to) && fits(tree, to, root)) add(to, bytes);
      else add(path, bytes);
    } else if (r < 0.3) {
      // The file becomes a directory of the same name.
      remove(path);
      const inner = `${path}/${gen.segment()}`;
      if (fits(tree, inner, root)) add(inner, gen.content());
    }
  }
  // A directory becomes a file of the same name.
  const dirs = [...new Set([...tree.keys()].filter((p) => p.includes("/")).map((p) => p.slice(0, p.indexOf("/"))))];
  if (dirs.length > 0 && gen.chance(0.5)) {
    const d = gen.pick(dirs);
    for (const p of [...tree.keys()]) if (p.startsWith(`${d}/`)) remove(p);
    if (fits(tree, d, root) && !existsSync(join(root, d))) add(d, gen.content());
  }
}

/** Plant 1 to 6 invalid entries in existing or new directories; returns them. */
function plantInvalid(gen: TreeGen, root: string, tree: Tree, round: number): InvalidEntry[] {
  const planted: InvalidEntry[] = [];
  const dirs = ["", ...new Set([...tree.keys()].filter((p) => p.includes("/")).map((p) => `${dirname(p)}/`))];
  const count = 1 + gen.int(6);
  for (let k = 0; k < count; k++) {
    const kind = gen.pick(INVALID_KINDS);
    // Sometimes in a directory of its own that holds nothing valid.
    const dir = gen.chance(0.2) ? `fresh-${round}-${k}/${gen.segment()}/` : gen.pick(dirs);
    let name = `${kind}-${round}-${k}-${gen.segment()}`;
    if (Buffer.byteLength(name) > 255) name = `${kind}-${round}-${k}`;
    if (!fits(tree, `${dir}${name}/x`, root)) continue;
    if ((kind === "git-dir" || kind === "git-file") && [".git", ".GIT", ".Git"].some((g) => existsSync(join(root, dir, g)))) continue;
    planted.push(createInvalid(gen, root, dir, name, kind));
  }
  return planted;
}

test(`${ROUNDS} rounds of random trees: every valid file round-trips byte for byte, every invalid entry is refused by name`, async () => {
  const gen = new TreeGen(mulberry32(SEED));
  world = makeWorld();
  const a = world.checkout("a");
  const b = world.checkout("b");
  await pull(world.deps(), { path: a });
  await pull(world.deps(), { path: b });
  const tree: Tree = new Map();
  let accepted: Tree = new Map();
  let generation = 0;
  const stats = { files: 0, refusals: 0, invalid: 0, kinds: new Set<string>() };

  /** Commit from `from`, pull into `to`; both must then hold exactly the model. */
  const publish = async (from: string, to: string, round: number) => {
    const changed = [...new Set([...tree.keys(), ...accepted.keys()])].filter((p) => {
      const x = tree.get(p);
      const y = accepted.get(p);
      return x === undefined || y === undefined || !Buffer.from(x).equals(y);
    });
    const committed = await commit(world!.deps(), { path: from, message: `round ${round}` });
    if (changed.length > 0) generation++;
    expect(treeDiff(tree, readTree(from))).toEqual([]);
    const pulled = await pull(world!.deps(), { path: to });
    // The round trip first: a file lost on the way is the failure that matters.
    expect(treeDiff(tree, readTree(to))).toEqual([]);
    expect(emptyDirectories(to)).toEqual([]);
    expect([committed.generation, pulled.generation]).toEqual([generation, generation]);
    // The diffstat names exactly the files that changed, in order.
    expect(committed.files.map((f) => f.path)).toEqual(changed.sort());
    accepted = new Map(tree);
    stats.files = Math.max(stats.files, tree.size);
  };

  for (let round = 0; round < ROUNDS; round++) {
    // Odd rounds edit in B and publish back to A; even rounds the other way.
    const [from, to] = round % 2 === 0 ? [a, b] : [b, a];
    edit(gen, from, tree, round === 0 ? 60 : 4 + gen.int(12));

    if (round % 4 !== 3) {
      const planted = plantInvalid(gen, from, tree, round);
      const expected = [...new Set(planted.map((p) => p.reported))].sort().map((path) => ({ path, reason: "INVALID_CONTENT" as const, ranges: [] }));
      const storeBefore = await snapshotStore(world.store);
      for (const run of [() => commit(world!.deps(), { path: from, message: `round ${round} with invalid files` }), () => pull(world!.deps(), { path: from })]) {
        const e = await refusal(run);
        expect([e.code, e.reason, e.action, e.retryable]).toEqual(["INVALID_REQUEST", "INVALID_CONTENT", "EDIT_FILES", false]);
        expect(e.files).toEqual(expected);
      }
      // Refused before anything moved: the store, and every valid visible file.
      expect(await snapshotStore(world.store)).toBe(storeBefore);
      for (const [path, bytes] of tree) expect(Buffer.from(readFileSync(join(from, path))).equals(bytes)).toBe(true);
      stats.refusals++;
      stats.invalid += planted.length;
      for (const p of planted) stats.kinds.add(p.kind);
      for (const p of planted) removeEntry(p.disk);
      // The planted entries' own fresh directories are gone with them.
      for (const d of readdirSync(from)) if (d.startsWith(`fresh-${round}-`)) rmSync(join(from, d), { recursive: true });
    }
    await publish(from, to, round);
  }
  console.log(
    `fuzz-trees: ${ROUNDS} rounds, up to ${stats.files} files, ${stats.refusals} refusals naming ${stats.invalid} invalid entries of kinds ${[...stats.kinds].sort().join(", ")}`,
  );
  expect(stats.refusals).toBeGreaterThan(0);
}, 120_000);

// Regression, found by the fuzz above: the scan decoded raw names with a
// TextDecoder that strips a leading BOM, so in a directory that also holds a
// name with U+FFFD (which sends the scan through the raw-name check) a name
// beginning with U+FEFF was dropped, and the next commit published its
// deletion.
test("a name beginning with U+FEFF next to a name with U+FFFD is still notebook content", async () => {
  const w = makeWorld();
  try {
    const a = w.checkout("a");
    const b = w.checkout("b");
    await pull(w.deps(), { path: a });
    await pull(w.deps(), { path: b });
    write(a, "\ufeffbom.md", "bom\n");
    expect((await commit(w.deps(), { path: a, message: "one" })).files.map((f) => f.path)).toEqual(["\ufeffbom.md"]);
    write(a, "replacement\ufffd.md", "r\n");
    const two = await commit(w.deps(), { path: a, message: "two" });
    expect(two.files).toEqual([{ path: "replacement\ufffd.md", insertions: 1, deletions: 0 }]);
    await pull(w.deps(), { path: b });
    expect(read(b, "\ufeffbom.md")).toBe("bom\n");
  } finally {
    await w.close();
  }
});
