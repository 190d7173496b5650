/**
 * A writer waiting for its turn in the embedded store's queue looks at
 * `current` now and then, to download what others published before its
 * turn comes (src/engine/publish/turn.ts). A look that finds `current`
 * unchanged is a conditional read, which reads no body; one that finds it
 * moved reads it, and prepares from it as before.
 */
import { afterEach, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { commit } from "../../src/engine/commit.ts";
import type { ObjectStore } from "../../src/store/object-store.ts";
import { openSqliteStore } from "../../src/store/sqlite.ts";
import { asAgent, pulledAtOne } from "../support/agents.ts";
import { makeWorld, read, type World, write } from "../support/fixture.ts";
import { waitFor } from "../support/wait.ts";
import { SYSTEM_CLOCK } from "../../src/surfaces/system-clock.ts";

let world: World | undefined;
const dirs: string[] = [];
afterEach(async () => {
  await world?.close();
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

test("a writer waiting for its turn looks again at `current` without its body while it has not moved, and reads it once it has", async () => {
  const dir = mkdtempSync(join(tmpdir(), "slivingdoc-turn-looks-"));
  dirs.push(dir);
  const file = join(dir, "store.db");
  const inner = openSqliteStore(file, SYSTEM_CLOCK);
  // What the waiting writer's looks get: a get, or a conditional read and what it answered.
  const looks: string[] = [];
  const watched = (peek: ObjectStore): ObjectStore => ({
    ...peek,
    get: (key) => (looks.push(`get ${key}`), peek.get(key)),
    getIfNoneMatch: async (key, etag) => {
      const answer = await peek.getIfNoneMatch(key, etag);
      looks.push(`${answer === "unchanged" ? "unchanged" : "moved"} ${key}`);
      return answer;
    },
  });
  const store: ObjectStore = {
    ...inner,
    queue: { enter: (whileWaiting, signal, placed) => inner.queue!.enter(whileWaiting && ((peek) => whileWaiting(watched(peek))), signal, placed) },
  };
  world = makeWorld(store, `sqlite:${file}`);
  const [a, b] = (await pulledAtOne(world, "a", "b")) as [string, string];

  // Another writer's turn, held while bo's commit waits in line.
  const held = await inner.queue!.enter();
  write(b, "b.md", "from bo\n");
  const committing = commit(asAgent(world, "bo"), { path: b, message: "bo's" });
  await waitFor(() => looks.filter((l) => l === "unchanged current").length >= 2, "two looks at an unchanged `current`");

  // ann publishes without a turn (as an older version would): the next look reads what she wrote.
  const { queue: _queue, ...racing } = inner;
  write(a, "a.md", "from ann\n");
  expect((await commit(asAgent(world, "ann", { store: racing as ObjectStore }), { path: a, message: "ann's" })).generation).toBe(2);
  await waitFor(() => looks.includes("moved current"), "a look at the `current` ann wrote");
  held.end();
  expect((await committing).generation).toBe(3);
  expect(read(b, "a.md")).toBe("from ann\n");
  // The first look read `current` whole (and the preparation it led to);
  // from then until it moved, every look was unchanged and read nothing.
  expect(looks[0]).toBe("get current");
  const quiet = looks.slice(looks.indexOf("unchanged current"), looks.indexOf("moved current"));
  expect(quiet.length).toBeGreaterThanOrEqual(2);
  expect(new Set(quiet)).toEqual(new Set(["unchanged current"]));
});
