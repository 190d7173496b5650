/**
 * One racer of the multi-process tests: pulls its own checkout, then makes
 * COMMITS commits, each editing its own file and its own line of a shared
 * file, and prints one JSON line per acknowledged commit. A commit refused
 * as retryable is called again (the edit stays in the visible files).
 */
import { appendFileSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { commit } from "../../src/engine/commit.ts";
import { pull } from "../../src/engine/pull.ts";
import { resolveConfig } from "../../src/surfaces/config.ts";
import { engineDeps, processMemory } from "../../src/surfaces/engine-deps.ts";
import { openStore } from "../../src/surfaces/stores.ts";

const [id, dir, commits] = [process.argv[2]!, process.argv[3]!, Number(process.argv[4])];
const config = resolveConfig({}, process.env, process.cwd());
const store = await openStore(config.store);
const deps = engineDeps(config, store, processMemory().get());
await pull(deps, { path: dir });
let retried = 0;
for (let j = 0; j < commits; j++) {
  appendFileSync(join(dir, `agent-${id}.md`), `agent ${id} commit ${j}\n`);
  const shared = join(dir, "shared.md");
  const text = readFileSync(shared, "utf8").replace(new RegExp(`^slot ${id}: .*$`, "m"), `slot ${id}: ${j}`);
  writeFileSync(shared, text);
  for (;;) {
    try {
      const r = await commit(deps, { path: dir, message: `agent ${id} commit ${j}` });
      process.stdout.write(`${JSON.stringify({ id, j, generation: r.generation })}\n`);
      break;
    } catch (e) {
      const err = e as { retryable?: boolean; reason?: string };
      if (!err.retryable) throw e;
      retried++;
    }
  }
}
process.stderr.write(`retried ${retried}\n`);
await store.close();
