/**
 * warm-commit and warm-pull: warm calls on a 1,000-file notebook through a running MCP
 * server (the built binary, driven by the SDK's Client as a host drives it).
 *
 * warm-commit — a commit of one changed file, against the commit floor: read
 *      `current`, write a pack of the size the commit wrote, one conditional
 *      write (bar ≤ 2×).
 * warm-pull — a pull of one change another checkout published, against the pull
 *      floor: read `current` and that pack (bar ≤ 2×).
 *
 * Floor samples are taken between the calls (interleaved), so drift in the
 * server's latency hits both sides alike. C git doing the same jobs (commit
 * + push over file://, and pull) is reported beside them as a reference.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { commit } from "../../src/engine/commit.ts";
import { MANIFEST_KEY, parseManifest } from "../../src/engine/publish/manifest.ts";
import { pull } from "../../src/engine/pull.ts";
import type { ProxyCounts, TcpProxy } from "../support/tcp-proxy.ts";
import * as L from "./lib.ts";
import type { Row } from "./report.ts";

export const WARM_FILES = 1000;
const BYTES_PER_FILE = 4096;

interface GitRefs {
  commitPush: number[];
  pull: number[];
}

/** C git: commit + push of one changed file, and a pull of it in a second clone, on the same tree. */
async function gitReference(files: Map<string, string>, reps: number): Promise<GitRefs> {
  const dir = L.tempDir("warm-git");
  try {
    const w = L.gitWorld(dir, files);
    const other = join(dir, "other");
    L.git(w.env, dir, "clone", "-q", w.url, other);
    const refs: GitRefs = { commitPush: [], pull: [] };
    for (let i = 0; i < reps + 1; i++) {
      const path = `d00${i % 10}/f00${i % 10}0${i % 10}.md`;
      L.writeTree(w.work, new Map([[path, `${readFileSafe(join(w.work, path))}line ${i}\n`]]));
      const t0 = performance.now();
      await L.timeProcess("git", ["commit", "-q", "-a", "-m", `change ${i}`], { cwd: w.work, env: w.env });
      await L.timeProcess("git", ["push", "-q", "origin", "main"], { cwd: w.work, env: w.env });
      const commitPush = performance.now() - t0;
      const pull = await L.timeProcess("git", ["pull", "-q", "--ff-only", "origin", "main"], { cwd: other, env: w.env });
      // The first round warms the page cache and git's own files; it is not counted.
      if (i > 0) {
        refs.commitPush.push(commitPush);
        refs.pull.push(pull);
      }
    }
    return refs;
  } finally {
    L.removeDir(dir);
  }
}

let gitRefs: Promise<GitRefs> | null = null;

/**
 * The same rows through a proxy in front of the store (latency.bench.ts):
 * each call and each floor sample is counted there, and the rows carry
 * `label` after their scenario's name and their own bar.
 */
export interface WarmOptions {
  proxy: TcpProxy;
  label: string;
  /** The bar on call ÷ floor. */
  bar: number;
}

/** The round trips of a sample, counted at the proxy (none without one). */
async function counted(proxy: TcpProxy | undefined, into: ProxyCounts[], fn: () => Promise<number>): Promise<number> {
  proxy?.resetCounts();
  const ms = await fn();
  if (proxy) into.push(proxy.counts());
  return ms;
}

/** "3 in turn (4 requests)": the median sample's round trips, as the proxy counted them. */
function roundTrips(counts: ProxyCounts[]): string {
  const sequential = L.median(counts.map((c) => c.sequential));
  const requests = L.median(counts.map((c) => c.requests));
  const connections = L.median(counts.map((c) => c.connections));
  return `${sequential} round trips in turn (${requests} requests${connections > 0 ? `, ${connections} new connections` : ""})`;
}

/** Longer than the stat cache's racy window (src/engine/checkout/stat-cache.ts). */
export const RACY_PAUSE_MS = 250;

export async function warmScenarios(loc: L.Location, reps: number, through?: WarmOptions): Promise<Row[]> {
  const proxy = through?.proxy;
  const callCounts = { s1: [] as ProxyCounts[], s1Floor: [] as ProxyCounts[], s2: [] as ProxyCounts[], s2Floor: [] as ProxyCounts[] };
  const root = L.tempDir(`warm-${loc.kind}`);
  const files = L.notebookFiles(WARM_FILES, BYTES_PER_FILE, 11);
  // C git first, alone: nothing else runs while either side is measured.
  // Through a proxy the rows compare with the floor only.
  const refs = through ? null : await (gitRefs ??= gitReference(files, reps));
  const store = loc.open();
  let server: L.Server | null = null;
  try {
    const writerDeps = L.engineDepsFor(store, loc, join(root, "writer-private"));
    const writerDir = join(root, "writer");
    await L.seedNotebook(writerDeps, writerDir, files);
    const ws = join(root, "ws");
    server = await L.startServer(loc, { privateRoot: join(root, "server-private"), workspace: ws, home: join(root, "home") });
    await server.call("notes_pull", {});
    // Warm-up, not counted: the first calls after a cold pull read again
    // the files it wrote in its last 100 ms (the stat cache's racy window),
    // and the first floor request opens the connection. Then a pause past
    // that window, as an agent's work between calls gives it: "warm" is the
    // steady state, in which a call reads only what changed.
    L.writeTree(ws, new Map([["d009/f00999.md", "warm-up\n"]]));
    await server.call("notes_commit", { message: "warm-up" });
    await server.call("notes_pull", {});
    await L.commitFloor(store, 8192);
    await Bun.sleep(RACY_PAUSE_MS);

    // warm-commit: warm commit of one changed file.
    const s1: number[] = [];
    const s1Floor: number[] = [];
    const s1First = server.completions.length;
    for (let i = 0; i < reps; i++) {
      // One existing file per round (index k·100 + k), one line appended.
      const path = `d00${i % 10}/f00${i % 10}0${i % 10}.md`;
      L.writeTree(ws, new Map([[path, `${readFileSafe(join(ws, path))}line ${i}\n`]]));
      s1.push(await counted(proxy, callCounts.s1, async () => (await L.timed(() => server!.call("notes_commit", { message: `s1 ${i}` }))).ms));
      const got = await store.get(MANIFEST_KEY);
      const packSize = parseManifest(got!.body).packs.at(-1)!.size;
      s1Floor.push(await counted(proxy, callCounts.s1Floor, () => L.commitFloor(store, packSize)));
    }
    const s1Profile = L.stageMedians(server.completions.slice(s1First));

    // warm-pull: warm pull of one change published by another checkout.
    const s2: number[] = [];
    const s2Floor: number[] = [];
    const s2First = server.completions.length;
    await pull(writerDeps, { path: writerDir });
    for (let i = 0; i < reps; i++) {
      L.writeTree(writerDir, new Map([[`d00${i % 10}/f00${i % 10}1${i % 10}.md`, `remote change ${i}\n`]]));
      await commit(writerDeps, { path: writerDir, message: `s2 ${i}` });
      const newest = parseManifest((await store.get(MANIFEST_KEY))!.body).packs.at(-1)!.key;
      s2.push(await counted(proxy, callCounts.s2, async () => (await L.timed(() => server!.call("notes_pull", {}))).ms));
      s2Floor.push(await counted(proxy, callCounts.s2Floor, () => L.pullFloor(store, newest)));
    }
    const s2Profile = L.stageMedians(server.completions.slice(s2First));

    const bar = through?.bar ?? 2;
    /** A warm call against its floor, measured in the same rounds (and, through the proxy, the round trips of each). */
    const againstFloor = (
      scenario: string,
      what: string,
      comparison: string,
      values: number[],
      floor: number[],
      calls: { call: string; counts: ProxyCounts[]; floorCounts: ProxyCounts[] },
      profile: Record<string, number>,
    ): Row => {
      const median = L.median(values);
      const floorMedian = L.median(floor);
      return {
        scenario: through ? `${scenario} ${through.label}` : scenario,
        store: loc.label,
        what,
        median,
        unit: "ms",
        comparison,
        comparisonMedian: floorMedian,
        ratio: median / floorMedian,
        bar: `≤ ${bar}×`,
        met: median / floorMedian <= bar,
        samples: reps,
        values,
        comparisonValues: floor,
        ...(through ? { note: `the ${calls.call}: ${roundTrips(calls.counts)}; the floor: ${roundTrips(calls.floorCounts)}` } : {}),
        profile,
      };
    };
    const s1m = L.median(s1);
    const s2m = L.median(s2);
    const s1Row = againstFloor("warm-commit", "warm commit, 1 of 1,000 files, MCP", "commit floor (get + put pack + CAS)", s1, s1Floor, { call: "commit", counts: callCounts.s1, floorCounts: callCounts.s1Floor }, s1Profile);
    const s2Row = againstFloor("warm-pull", "warm pull of 1 remote change, MCP", "pull floor (get current + pack)", s2, s2Floor, { call: "pull", counts: callCounts.s2, floorCounts: callCounts.s2Floor }, s2Profile);
    if (refs === null) return [s1Row, s2Row];
    return [
      s1Row,
      {
        scenario: "warm-commit ref",
        store: loc.label,
        what: "same warm commit",
        median: s1m,
        unit: "ms",
        comparison: "C git commit + push (file://)",
        comparisonMedian: L.median(refs.commitPush),
        ratio: s1m / L.median(refs.commitPush),
        bar: "—",
        met: null,
        samples: reps,
        comparisonValues: refs.commitPush,
      },
      s2Row,
      {
        scenario: "warm-pull ref",
        store: loc.label,
        what: "same warm pull",
        median: s2m,
        unit: "ms",
        comparison: "C git pull --ff-only (file://)",
        comparisonMedian: L.median(refs.pull),
        ratio: s2m / L.median(refs.pull),
        bar: "—",
        met: null,
        samples: reps,
        comparisonValues: refs.pull,
      },
    ];
  } finally {
    await server?.close();
    await store.close();
    await loc.dispose();
    L.removeDir(root);
  }
}

function readFileSafe(file: string): string {
  try {
    return readFileSync(file, "utf8");
  } catch {
    return "";
  }
}
