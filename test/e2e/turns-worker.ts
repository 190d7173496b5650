// One writer of the "writers take turns" test: pulls its own checkout, then
// commits COMMITS times to its own file, and prints how many races it lost
// (the engine's "retry" stage) and how many publications it wrote beyond
// one per commit (a write built on a stale guess of `current`) — on the
// embedded store, with its writer queue, none. A commit offered from the
// line and carried by another writer's turn writes none of its own (group
// commit), so fewer writes than commits is fine.
import { appendFileSync } from "node:fs";
import { join } from "node:path";
import { commit } from "../../src/engine/commit.ts";
import { pull } from "../../src/engine/pull.ts";
import { resolveConfig } from "../../src/surfaces/config.ts";
import { engineDeps, processMemory } from "../../src/surfaces/engine-deps.ts";
import { openStore } from "../../src/surfaces/stores.ts";

const [id, dir, commits] = [process.argv[2]!, process.argv[3]!, Number(process.argv[4])];
const config = resolveConfig({}, process.env, process.cwd());
const store = await openStore(config.store);
let publishes = 0;
let retries = 0;
const onStage = (stage: string) => {
  if (stage === "publish") publishes++;
  if (stage === "retry") retries++;
};
const deps = { ...engineDeps(config, store, processMemory().get()), onStage };
await pull(deps, { path: dir });
for (let j = 0; j < commits; j++) {
  appendFileSync(join(dir, `agent-${id}.md`), `agent ${id} commit ${j}\n`);
  await commit(deps, { path: dir, message: `agent ${id} commit ${j}` });
}
process.stdout.write(`${retries} ${Math.max(0, publishes - commits)}\n`);
await store.close();
