/**
 * The model of test/e2e/model.test.ts: what each checkout and the store must
 * hold, as plain maps of path → content, and what a pull or a commit must do
 * to them (docs/storage-protocol.md, docs/cli.md):
 *
 * - merge: base = the checkout's baseline, ours = its visible files, theirs =
 *   the accepted state. A path changed on one side takes that side; changed on
 *   both, it is merged line by line as `git merge-file` does — C git itself is
 *   the judge here, with the markers' labels `local` and `accepted`. A clean
 *   merge of a deletion that leaves nothing is a deletion.
 * - pull: writes the merge (markers included), the baseline becomes the
 *   accepted state; exit 4 on conflicts, else 0. A directory never pulled, or
 *   removed and made again, merges against nothing: a full copy.
 * - commit: PULL_REQUIRED (exit 3) for a directory never pulled; exit 3 for
 *   marker blocks in a changed file; on conflicts, the markers are written and
 *   nothing is published (exit 4); a merge equal to the accepted state is a
 *   synchronisation; else the merge is published at generation + 1.
 *
 * A killed call has two possible outcomes: it did nothing, or it finished.
 * A checkout after a kill is a set of alternatives until its next completed
 * call picks the one that happened; files whose content differs between them
 * are uncertain and the test does not edit them meanwhile.
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { Tree } from "./kill-harness.ts";

export interface Alt {
  /** Whether the directory is a checkout that was pulled (has a baseline). */
  pulled: boolean;
  base: Tree;
  visible: Tree;
}

export interface Store {
  tree: Tree;
  generation: number;
}

export interface Prediction {
  exit: 0 | 3 | 4;
  alt: Alt;
  store: Store;
  conflicts: string[];
}

const MARKER_BLOCK = /^<{7}( .*)?\n[\s\S]*?^={7}\n[\s\S]*?^>{7}( .*)?$/m;
export const hasMarkers = (text: string) => MARKER_BLOCK.test(text);
/** Resolve a conflicted file as an agent would: keep every line of both sides, drop the marker lines. */
export const keepBothSides = (text: string) =>
  text
    .split("\n")
    .filter((l) => !/^(<{7}|={7}|>{7})( .*)?$/.test(l))
    .join("\n");

export const treeKey = (t: Tree) =>
  JSON.stringify([...t.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));

export function sameTree(a: Tree, b: Tree): boolean {
  if (a.size !== b.size) return false;
  for (const [k, v] of a) if (b.get(k) !== v) return false;
  return true;
}

/** `git merge-file` as the judge of line merges; results cached. */
export class GitMerge {
  private readonly cache = new Map<string, { text: string; conflict: boolean }>();
  private n = 0;
  constructor(private readonly dir: string) {
    mkdirSync(dir, { recursive: true });
  }
  merge(base: string, ours: string, theirs: string): { text: string; conflict: boolean } {
    const key = JSON.stringify([base, ours, theirs]);
    const known = this.cache.get(key);
    if (known) return known;
    const f = (name: string, text: string) => {
      const file = join(this.dir, `${this.n}-${name}`);
      writeFileSync(file, text);
      return file;
    };
    this.n++;
    const o = f("ours", ours);
    const b = f("base", base);
    const t = f("theirs", theirs);
    const p = Bun.spawnSync(["git", "merge-file", "-p", "-L", "local", "-L", "base", "-L", "accepted", o, b, t], { stdout: "pipe", stderr: "pipe" });
    if (p.exitCode < 0 || p.exitCode > 127) throw new Error(`git merge-file failed: ${p.stderr.toString()}`);
    const out = { text: p.stdout.toString(), conflict: p.exitCode > 0 };
    this.cache.set(key, out);
    return out;
  }
}

export function merge3(git: GitMerge, base: Tree, ours: Tree, theirs: Tree): { result: Tree; conflicts: string[] } {
  if (sameTree(ours, base)) return { result: new Map(theirs), conflicts: [] };
  const result: Tree = new Map();
  const conflicts: string[] = [];
  for (const path of new Set([...base.keys(), ...ours.keys(), ...theirs.keys()])) {
    const b = base.get(path);
    const o = ours.get(path);
    const t = theirs.get(path);
    let merged: string | undefined;
    if (o === t) merged = o;
    else if (o === b) merged = t;
    else if (t === b) merged = o;
    else {
      const m = git.merge(b ?? "", o ?? "", t ?? "");
      if (m.conflict) conflicts.push(path);
      merged = m.text === "" && !(o !== undefined && t !== undefined) && !m.conflict ? undefined : m.text;
    }
    if (merged !== undefined) result.set(path, merged);
  }
  return { result, conflicts: conflicts.sort() };
}

export function predictPull(git: GitMerge, a: Alt, store: Store): Prediction {
  const m = merge3(git, a.pulled ? a.base : new Map(), a.visible, store.tree);
  return { exit: m.conflicts.length > 0 ? 4 : 0, alt: { pulled: true, base: store.tree, visible: m.result }, store, conflicts: m.conflicts };
}

export function predictCommit(git: GitMerge, a: Alt, store: Store): Prediction {
  if (!a.pulled) return { exit: 3, alt: a, store, conflicts: [] };
  for (const [p, c] of a.visible) if (a.base.get(p) !== c && hasMarkers(c)) return { exit: 3, alt: a, store, conflicts: [] };
  const m = merge3(git, a.base, a.visible, store.tree);
  if (m.conflicts.length > 0) return { exit: 4, alt: { pulled: true, base: store.tree, visible: m.result }, store, conflicts: m.conflicts };
  if (sameTree(m.result, store.tree)) return { exit: 0, alt: { pulled: true, base: store.tree, visible: m.result }, store, conflicts: [] };
  const published = { tree: m.result, generation: store.generation + 1 };
  return { exit: 0, alt: { pulled: true, base: m.result, visible: m.result }, store: published, conflicts: [] };
}

export function dedupe(alts: Alt[]): Alt[] {
  const seen = new Map<string, Alt>();
  for (const a of alts) seen.set(`${a.pulled}|${treeKey(a.base)}|${treeKey(a.visible)}`, a);
  return [...seen.values()];
}

/** Paths whose visible content is not the same in every alternative. */
export function differing(alts: Alt[]): Set<string> {
  const out = new Set<string>();
  const paths = new Set(alts.flatMap((a) => [...a.visible.keys()]));
  for (const p of paths) if (new Set(alts.map((a) => a.visible.get(p))).size > 1) out.add(p);
  return out;
}
