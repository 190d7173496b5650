// One writer of test/store/sqlite-queue.test.ts: takes `turns` turns in the
// writer queue, appending "in ID" and "out ID" to the log inside each, with a
// pause between so an overlapping turn would show. "die-in-turn": SIGKILL
// itself inside its first turn.
import { appendFileSync } from "node:fs";
import { openSqliteStore } from "../../src/store/sqlite.ts";
import { queueIdentity } from "../../src/surfaces/process-identity.ts";
import { SYSTEM_CLOCK } from "../../src/surfaces/system-clock.ts";

const [file, log, id, turns, mode] = process.argv.slice(2) as [string, string, string, string, string];
const store = openSqliteStore(file, SYSTEM_CLOCK, { writer: queueIdentity() });
for (let i = 0; i < Number(turns); i++) {
  const entered = store.queue!.enter();
  process.stdout.write("queued\n");
  const turn = await entered;
  appendFileSync(log, `in ${id}\n`);
  if (mode === "die-in-turn") process.kill(process.pid, "SIGKILL");
  await Bun.sleep(3);
  appendFileSync(log, `out ${id}\n`);
  turn.end();
}
await store.close();
