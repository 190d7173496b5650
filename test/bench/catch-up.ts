/**
 * The cost of catching up: a checkout of a 100-file notebook (embedded
 * store) pulls after another made 16 publications, of one file each or
 * all of the same file, twelve rounds; the median of the last ten of its
 * `fetch` and `materialize` stages and of the whole pull, the files it
 * wrote and the pack indexes its cache gained per round. "serve" keeps the
 * process memory across pulls, as a server does; "cli" starts each pull
 * with an empty one, as a process per call does.
 *
 *   bun test/bench/catch-up.ts [SOURCE_TREE ...]
 *
 * Each SOURCE_TREE (default: this one) is a checkout of the project's
 * source whose engine is measured, in turn, twice over — e.g. main's,
 * from `git archive main | tar -x -C DIR` with node_modules linked in.
 */
import { existsSync, readdirSync } from "node:fs";
import { join, resolve } from "node:path";

const trees = process.argv.slice(2).map((t) => resolve(t));
if (trees.length === 0) trees.push(resolve(import.meta.dir, "../.."));

const ROUNDS = 12;
const median = (xs: number[]) => [...xs].sort((x, y) => x - y)[xs.length >> 1]!;

/** Pack indexes in every object cache under `dir`. */
function indexes(dir: string): number {
  if (!existsSync(dir)) return 0;
  let n = 0;
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    if (e.isDirectory()) n += indexes(join(dir, e.name));
    else if (e.name.endsWith(".idx")) n++;
  }
  return n;
}

async function measure(tree: string, sameFile: boolean, mode: "serve" | "cli"): Promise<Record<string, number>> {
  const { makeWorld, seedNotebook, write } = await import(join(tree, "test/support/fixture.ts"));
  const { pull } = await import(join(tree, "src/engine/pull.ts"));
  const { commit } = await import(join(tree, "src/engine/commit.ts"));
  const { ProcessMemory } = await import(join(tree, "src/engine/process-memory.ts"));
  const { SYSTEM_RANDOM } = await import(join(tree, "src/surfaces/engine-deps.ts"));
  const world = makeWorld();
  const [a, b] = [world.checkout("a"), world.checkout("b")];
  await seedNotebook(world.deps(), a, Object.fromEntries(Array.from({ length: 100 }, (_, i) => [`f${i}.md`, `file ${i}\n`.repeat(20)])));
  await pull(world.deps(), { path: b });
  const got: Record<string, number[]> = { fetch: [], materialize: [], pull: [], written: [], indexes: [] };
  for (let round = 0; round < ROUNDS; round++) {
    for (let i = 0; i < 16; i++) {
      write(a, `f${sameFile ? 0 : i}.md`, `round ${round}, edit ${i}\n`.repeat(20));
      await commit(world.deps(), { path: a, message: `edit ${i}` });
    }
    const stages: Record<string, number> = {};
    let [last, at] = [performance.now(), "start"];
    const onStage = (stage: string) => {
      const now = performance.now();
      stages[at] = (stages[at] ?? 0) + now - last;
      [last, at] = [now, stage];
    };
    let written = 0;
    const before = indexes(world.privateRoot);
    const memory = mode === "cli" ? { memory: new ProcessMemory(SYSTEM_RANDOM) } : {};
    const started = performance.now();
    await pull(world.deps({ onStage, afterWrite: () => void written++, ...memory }), { path: b });
    onStage("end");
    if (round < 2) continue;
    for (const [k, v] of [["fetch", stages.fetch ?? 0], ["materialize", stages.materialize ?? 0], ["pull", performance.now() - started], ["written", written], ["indexes", indexes(world.privateRoot) - before]] as const) got[k]!.push(v);
  }
  await world.close();
  return Object.fromEntries(Object.entries(got).map(([k, v]) => [k, Math.round(median(v) * 10) / 10]));
}

console.log("| source | publications | mode | fetch ms | materialize ms | pull ms | files written | pack indexes added |");
console.log("|---|---|---|---|---|---|---|---|");
for (let pass = 0; pass < 2; pass++) {
  for (const tree of trees) {
    for (const sameFile of [false, true]) {
      for (const mode of ["serve", "cli"] as const) {
        const m = await measure(tree, sameFile, mode);
        console.log(`| ${tree} | 16 × ${sameFile ? "the same file" : "one file each"} | ${mode} | ${m.fetch} | ${m.materialize} | ${m.pull} | ${m.written} | ${m.indexes} |`);
      }
    }
  }
}
