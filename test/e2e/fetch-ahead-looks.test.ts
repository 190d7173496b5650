/**
 * When a server looks ahead (surfaces/mcp/fetch-ahead.ts): never while a
 * call runs; a call waits for a look's import, never for its store half;
 * a look that failed says so once. The looks' download is a function here
 * that records what it was asked, so each rule is seen whatever the
 * machine's speed: the engine's half is tested on real stores in
 * test/engine/fetch-ahead.test.ts.
 */
import { expect, test } from "bun:test";
import type { Downloaded, Looked } from "../../src/engine/fetch-ahead.ts";
import { fetchAheadLooks } from "../../src/surfaces/mcp/fetch-ahead.ts";
import type { Log } from "../../src/surfaces/log.ts";

const WAITS = { shortestMs: 2, longestMs: 8 };

function recordingLog(): Log & { warnings: string[] } {
  const warnings: string[] = [];
  return { warnings, info: () => {}, error: () => {}, warn: (msg) => void warnings.push(msg) };
}

/** A promise and the function that settles it. */
function gate<T = void>(): { promise: Promise<T>; open: (value: T) => void } {
  let open!: (value: T) => void;
  const promise = new Promise<T>((resolve) => (open = resolve));
  return { promise, open };
}

test("no look starts while a call runs; the looks start again once it ended", async () => {
  let looks = 0;
  const first = gate();
  const looksAhead = fetchAheadLooks({ download: async () => (looks++ === 0 && first.open(), "unchanged" as Looked), waits: WAITS, log: recordingLog() });
  try {
    await first.promise;
    await looksAhead.callStarts();
    const during = looks;
    await Bun.sleep(60);
    expect(looks).toBe(during);
    const again = gate();
    const seen = looks;
    const poll = setInterval(() => looks > seen && again.open(), 1);
    looksAhead.callEnded();
    await again.promise;
    clearInterval(poll);
    expect(looks).toBeGreaterThan(seen);
  } finally {
    looksAhead.stop();
  }
});

test("a call that starts while a look imports waits for the import; one that starts during the store half drops what it downloaded", async () => {
  const importing = gate<Looked>();
  const imported = gate();
  let imports = 0;
  const downloaded: Downloaded = {
    import: () => {
      imports++;
      imported.open();
      return importing.promise;
    },
  };
  const looksAhead = fetchAheadLooks({ download: async () => downloaded, waits: WAITS, log: recordingLog() });
  try {
    await imported.promise;
    let started = false;
    const call = looksAhead.callStarts().then(() => (started = true));
    await Bun.sleep(20);
    expect(started).toBe(false);
    importing.open("fetched");
    await call;
    looksAhead.callEnded();
  } finally {
    looksAhead.stop();
  }
  // The store half answers only after a call began: its download is dropped, not imported.
  const storeHalf = gate<Downloaded>();
  const asked = gate();
  let dropped = 0;
  const second = fetchAheadLooks({ download: () => (asked.open(), storeHalf.promise), waits: WAITS, log: recordingLog() });
  try {
    await asked.promise;
    await second.callStarts();
    storeHalf.open({ import: async () => (dropped++, "fetched") });
    await Bun.sleep(20);
    expect(dropped).toBe(0);
  } finally {
    second.stop();
  }
  expect(imports).toBe(1);
});

test("a look that fails warns once, naming no more than the failure's token, and the looks go on", async () => {
  let looks = 0;
  const enough = gate();
  const log = recordingLog();
  const looksAhead = fetchAheadLooks({
    download: async () => {
      if (++looks === 4) enough.open();
      throw new Error("s3://bucket/secret-prefix: denied");
    },
    waits: WAITS,
    log,
  });
  try {
    await enough.promise;
  } finally {
    looksAhead.stop();
  }
  expect(log.warnings).toEqual(["looking ahead at the store failed; the next call catches up itself"]);
});

test("a call's end that made a compaction due compacts at once, before any look; a call that starts meanwhile waits for it", async () => {
  let due = false;
  let looks = 0;
  const compacting = gate<"compacted">();
  const begun = gate();
  const order: string[] = [];
  const looksAhead = fetchAheadLooks({
    // Long waits: a look comes only when the scheduler asks for one at once.
    waits: { shortestMs: 10_000, longestMs: 10_000 },
    log: recordingLog(),
    download: async () => (looks++, "unchanged" as Looked),
    compactionDue: () => due,
    compact: () => {
      due = false;
      order.push("compact");
      begun.open();
      return compacting.promise;
    },
  });
  try {
    await looksAhead.callStarts();
    due = true;
    looksAhead.callEnded();
    await begun.promise;
    let started = false;
    const call = looksAhead.callStarts().then(() => (started = true));
    await Bun.sleep(20);
    expect(started).toBe(false);
    compacting.open("compacted");
    await call;
    order.push("call");
    looksAhead.callEnded();
    await Bun.sleep(20);
    // Nothing due any more: the call's end schedules a look, not another compaction.
    expect(order).toEqual(["compact", "call"]);
    expect(looks).toBe(0);
  } finally {
    looksAhead.stop();
  }
});

test("a compaction that fails warns in words naming no more than the failure's kind, and is not tried again at once", async () => {
  const log = recordingLog();
  const failed = gate();
  let tries = 0;
  const looksAhead = fetchAheadLooks({
    waits: { shortestMs: 10_000, longestMs: 10_000 },
    log,
    download: async () => "unchanged" as Looked,
    compactionDue: () => true,
    compact: async () => {
      tries++;
      setTimeout(() => failed.open(), 5);
      throw new Error("s3://bucket/secret-prefix: denied");
    },
  });
  try {
    await looksAhead.callStarts();
    looksAhead.callEnded();
    await failed.promise;
    await Bun.sleep(20);
  } finally {
    looksAhead.stop();
  }
  expect(log.warnings).toEqual(["compacting between calls failed; a commit compacts instead"]);
  expect(tries).toBe(1);
});

test("stopping waits for a compaction that runs, so the server's end does not cut it off", async () => {
  const compacting = gate<"compacted">();
  const begun = gate();
  const looksAhead = fetchAheadLooks({
    waits: { shortestMs: 10_000, longestMs: 10_000 },
    log: recordingLog(),
    download: async () => "unchanged" as Looked,
    compactionDue: () => true,
    compact: () => (begun.open(), compacting.promise),
  });
  await looksAhead.callStarts();
  looksAhead.callEnded();
  await begun.promise;
  let stopped = false;
  const stopping = looksAhead.stop().then(() => (stopped = true));
  await Bun.sleep(20);
  expect(stopped).toBe(false);
  compacting.open("compacted");
  await stopping;
  expect(stopped).toBe(true);
});
