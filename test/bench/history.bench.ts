/**
 * long-history: a cold pull after 1,000 small commits, against a cold pull of the same
 * tree published as one commit (bar ≤ 1.25×). Both through a fresh MCP
 * server each time.
 *
 * The commits are real engine commits (one checkout, each appending a line
 * to one file of the 1,000-file notebook), so the store holds exactly what
 * 1,000 publications leave. Compaction is not wired into commit yet, so the
 * scenario then applies src/engine/publish/compact.ts the way gc would (same head,
 * one conditional write) and measures again: once keeping the whole history,
 * once keeping the newest 32 commits.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { loadAcceptedState } from "../../src/engine/publish/accepted-state.ts";
import { commit } from "../../src/engine/commit.ts";
import { compactPacks, type CompactionPolicy } from "../../src/engine/publish/compact.ts";
import { ObjectCache } from "../../src/engine/git/object-cache.ts";
import { ProcessMemory } from "../../src/engine/process-memory.ts";
import { MANIFEST_KEY, type Manifest, newPublicationId, parseManifest, serializeManifest } from "../../src/engine/publish/manifest.ts";
import { pull } from "../../src/engine/pull.ts";
import type { ObjectStore } from "../../src/store/object-store.ts";
import * as L from "./lib.ts";
import type { Row } from "./report.ts";

const FILES = 1000;
const BYTES_PER_FILE = 4096;

async function manifestOf(store: ObjectStore): Promise<{ manifest: Manifest; etag: string }> {
  const got = (await store.get(MANIFEST_KEY))!;
  return { manifest: parseManifest(got.body), etag: got.etag };
}

function describeState(m: Manifest): string {
  const bytes = m.packs.reduce((n, p) => n + p.size, 0);
  return `${m.packs.length} packs, ${(bytes / 1e6).toFixed(1)} MB`;
}

interface Pulls {
  ms: number[];
  records: L.Completion[];
}

/** One cold pull through a fresh server, added to `into`; its files are removed after. */
async function coldPull(loc: L.Location, root: string, tag: string, into: Pulls): Promise<void> {
  const ws = join(root, `${tag}-ws-${into.ms.length}`);
  const priv = join(root, `${tag}-private-${into.ms.length}`);
  const server = await L.startServer(loc, { privateRoot: priv, workspace: ws, home: join(root, "home") });
  try {
    into.ms.push((await L.timed(() => server.call("notes_pull", {}))).ms);
    into.records.push(...server.completions);
  } finally {
    await server.close();
    L.removeDir(ws);
    L.removeDir(priv);
  }
}

export async function historyScenario(
  longLoc: L.Location,
  oneLoc: L.Location,
  reps: number,
  commits: number,
): Promise<Row[]> {
  const root = L.tempDir(`history-${longLoc.kind}`);
  const long = longLoc.open();
  const one = oneLoc.open();
  try {
    const files = L.notebookFiles(FILES, BYTES_PER_FILE, 5);
    const writer = join(root, "writer");
    const deps = L.engineDepsFor(long, longLoc, join(root, "writer-private"));
    await L.seedNotebook(deps, writer, files);
    const t0 = performance.now();
    for (let i = 0; i < commits; i++) {
      const index = (i * 37) % FILES;
      const path = `d${String(Math.floor(index / 100)).padStart(3, "0")}/f${String(index).padStart(5, "0")}.md`;
      L.writeTree(writer, new Map([[path, `${readFileSync(join(writer, path), "utf8")}small change ${i}\n`]]));
      await commit(deps, { path: writer, message: `small change ${i}` });
    }
    L.log(`  ${commits} commits on ${longLoc.label} in ${((performance.now() - t0) / 1000).toFixed(1)} s`);

    // The same final tree, published once, on its own location.
    const finalTree = new Map<string, string>();
    for (const path of files.keys()) finalTree.set(path, readFileSync(join(writer, path), "utf8"));
    await L.seedNotebook(L.engineDepsFor(one, oneLoc, join(root, "one-private")), join(root, "one"), finalTree);

    const original = await manifestOf(long);
    const oneState = describeState((await manifestOf(one)).manifest);
    const longState = describeState(original.manifest);
    // Alternating, so that each side's pulls meet the same file-system state
    // (each follows the removal of the other's files; see cold.bench.ts).
    const baseline: Pulls = { ms: [], records: [] };
    const asIs: Pulls = { ms: [], records: [] };
    for (let i = 0; i < reps; i++) {
      await coldPull(oneLoc, root, "one", baseline);
      await coldPull(longLoc, root, "long", asIs);
    }

    // Sanity: the compacted notebook still pulls to the writer's tree.
    const check = join(root, "check");
    await pull(L.engineDepsFor(long, longLoc, join(root, "check-private")), { path: check });
    for (const [path, text] of finalTree) {
      if (readFileSync(join(check, path), "utf8") !== text) throw new Error(`compacted pull differs at ${path}`);
    }

    const b = L.median(baseline.ms);
    const row = (scenario: string, what: string, pulls: Pulls, state: string, note?: string): Row => {
      const m = L.median(pulls.ms);
      return {
        scenario,
        store: longLoc.label,
        what,
        median: m,
        unit: "ms",
        comparison: `cold pull after 1 commit (${oneState})`,
        comparisonMedian: b,
        ratio: m / b,
        bar: "≤ 1.25×",
        met: m / b <= 1.25,
        samples: reps,
        values: pulls.ms,
        comparisonValues: baseline.ms,
        note: note ? `${state}; ${note}` : state,
        profile: L.stageMedians(pulls.records),
        comparisonProfile: L.stageMedians(baseline.records),
      };
    };
    return [
      row("long-history", `cold pull after ${commits.toLocaleString("en")} commits, MCP`, asIs, longState, "commits compact past 32 packs"),
    ];
  } finally {
    await long.close();
    await one.close();
    await longLoc.dispose();
    await oneLoc.dispose();
    L.removeDir(root);
  }
}
