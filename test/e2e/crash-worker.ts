/**
 * Runs one pull or commit on the real engine and SIGKILLs itself at a named
 * stage, or after the Nth visible file write ("write:N"): what a crash, an
 * OOM kill or a host shutting down the agent does at that point.
 */
import { commit } from "../../src/engine/commit.ts";
import { pull } from "../../src/engine/pull.ts";
import { resolveConfig } from "../../src/surfaces/config.ts";
import { engineDeps } from "../../src/surfaces/engine-deps.ts";
import { openStore } from "../../src/surfaces/stores.ts";

const [op, dir, killAt] = process.argv.slice(2) as ["pull" | "commit", string, string];
const config = resolveConfig({}, process.env, process.cwd());
const store = await openStore(config.store);
const die = () => {
  process.kill(process.pid, "SIGKILL");
};
let writes = 0;
const deps = {
  ...engineDeps(config, store),
  onStage: (stage: string) => {
    if (stage === killAt) die();
  },
  afterWrite: () => {
    writes++;
    if (killAt === `write:${writes}`) die();
  },
};
if (op === "pull") await pull(deps, dir);
else await commit(deps, dir, "from the crash worker");
// Reaching here means the stage never came: the test treats exit 0 as "not killed".
await store.close();
