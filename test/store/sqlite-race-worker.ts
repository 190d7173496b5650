// One racer of the multi-process test: waits for the start time, then tries
// one compare-and-swap on `current` and prints whether it won.
import { openSqliteStore } from "../../src/store/sqlite.ts";

const [file, etag, id, startAt] = process.argv.slice(2) as [string, string, string, string];
const store = openSqliteStore(file);
while (Date.now() < Number(startAt)) await Bun.sleep(1);
const result = await store.putIfMatch("current", new TextEncoder().encode(`writer ${id}`), etag);
process.stdout.write(result.ok ? "won" : "lost");
await store.close();
