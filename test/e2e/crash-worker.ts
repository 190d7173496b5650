/**
 * Runs one pull or commit on the real engine and SIGKILLs itself at a named
 * stage, or after the Nth visible file write ("write:N"): what a crash, an
 * OOM kill or a host shutting down the agent does at that point. With
 * "stop:" before the stage it stops itself there instead (SIGSTOP, as a
 * debugger or Ctrl-Z does), to go on when continued; with "sleep:", it
 * waits there for a minute, running.
 *
 *   crash-worker.ts pull|commit DIR [stop:|sleep:]STAGE [RACE_FROM_DIR]
 */
import { commit } from "../../src/engine/commit.ts";
import { pull } from "../../src/engine/pull.ts";
import { resolveConfig } from "../../src/surfaces/config.ts";
import { engineDeps, processMemory } from "../../src/surfaces/engine-deps.ts";
import { openStore } from "../../src/surfaces/stores.ts";

const [op, dir, point, raceFrom] = process.argv.slice(2) as ["pull" | "commit", string, string, string | undefined];
const how = /^(stop|sleep):/.exec(point)?.[1] ?? "kill";
const killAt = how === "kill" ? point : point.slice(how.length + 1);
const config = resolveConfig({}, process.env, process.cwd());
const opened = await openStore(config.store);
// SLIVINGDOC_TEST_RACING=1: the embedded store without its writer queue, so that writers race as on S3.
const store = process.env.SLIVINGDOC_TEST_RACING === "1" ? { ...opened, queue: undefined } : opened;
// `raceFrom`: a checkout whose commit lands inside this one's window (at its
// first publish stage), so that this one loses the race.
let raced = raceFrom === undefined;
const die = async () => {
  if (how === "stop") process.kill(process.pid, "SIGSTOP");
  else if (how === "sleep") await Bun.sleep(60_000);
  else process.kill(process.pid, "SIGKILL");
};
let writes = 0;
const memory = processMemory().get();
const deps = {
  ...engineDeps(config, store, memory),
  // Losing to one writer is a meeting of two, which a commit answers by building on the winner at once;
  // a race driven here is to make it offer, as a crowd's loser does.
  ...(raceFrom !== undefined ? { meetAtOnce: false } : {}),
  onStage: async (stage: string) => {
    if (stage === killAt) await die();
    if (stage === "publish" && !raced) {
      raced = true;
      await commit({ ...engineDeps(config, store, memory) }, { path: raceFrom!, message: "the other writer" });
    }
  },
  afterWrite: async () => {
    writes++;
    if (killAt === `write:${writes}`) await die();
  },
};
if (op === "pull") await pull(deps, { path: dir });
else await commit(deps, { path: dir, message: "from the crash worker" });
// Reaching here means the stage never came: the test treats exit 0 as "not killed".
await store.close();
