// One racer of the multi-process test: opens the store, says "ready" on
// stdout, waits for the go byte on stdin (sent to all racers at once, once
// all are ready), then tries one compare-and-swap on `current` and prints
// whether it won.
import { openSqliteStore } from "../../src/store/sqlite.ts";
import { SYSTEM_CLOCK } from "../../src/surfaces/system-clock.ts";

const [file, etag, id] = process.argv.slice(2) as [string, string, string];
const store = openSqliteStore(file, SYSTEM_CLOCK);
process.stdout.write("ready\n");
const go = Bun.stdin.stream().getReader();
await go.read();
go.releaseLock();
const result = await store.putIfMatch("current", new TextEncoder().encode(`writer ${id}`), etag);
process.stdout.write(result.ok ? "won" : "lost");
await store.close();
