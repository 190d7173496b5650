/**
 * The crash-point fuzzer, for the instants the named stages of
 * crash.test.ts miss: `pull`, `commit` and `serve` (in the middle of an MCP
 * tool call) are SIGKILLed at instants drawn uniformly over the whole run
 * of the operation — its duration is measured first, then the kill time is
 * drawn in [0, duration] — not only at named stages, on the embedded store
 * and on S3 (Ceph RGW under `npm test`).
 *
 * Two agents share one notebook. V is the victim: it edits its own file
 * `v.md`, its own files `v-N.md` and its own region of `shared.md`, and its
 * calls are the ones killed. R is the second writer: meanwhile it commits its
 * own file `r.md`, files `r-N.md` it adds and removes, and its own region
 * of `shared.md`, where it adds lines and takes some back (three unchanged lines
 * apart from V's), so no edit of one ever touches the lines of the other. An
 * iteration: V edits; R starts a commit (and now and then an operator starts
 * `gc --grace 0s`); V's call is killed at a random
 * instant; V edits again (often deleting a line it had just committed: the
 * killed commit may have landed); then, most of the time, V's next call runs
 * unkilled (otherwise the next kill lands on a call that must recover first).
 *
 * Checked after every call that completes (fresh pulls into new directories
 * see the store):
 * - the next call after a kill never waits on the dead process: no
 *   LOCAL_STATE, no 30-second lock wait (any call slower than 8 s fails);
 * - every acknowledged publication is in the store: after V's acknowledged
 *   commit the store holds exactly V's files and region, and R's content as
 *   R last acknowledged it (or is publishing), deletions included; V sees R's
 *   content exactly as acknowledged (checked for a random 40% of the
 *   acknowledgements, all of them in long mode, and for everything at the end);
 * - no unpublished edit is gone and no deletion is undone: V's visible files
 *   and region are exactly what V wrote, line for line;
 * - no conflict without a second writer on the same lines: no call of V or R
 *   ever answers a conflict.
 *
 * Prints `crash-fuzz STORE: seed S, iterations N, kills K (...)`.
 * SLIVINGDOC_FUZZ_SEED=S replays the choices (the instants themselves depend
 * on timing). SLIVINGDOC_FUZZ_LONG=1 runs the long mode: thousands of kills.
 * Without SLIVINGDOC_TEST_S3_BUCKET the S3 half FAILS — it never skips.
 */
import { afterAll, expect, test } from "bun:test";
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { freshPull, jsonOf, leftovers, readTree, type RunResult, runCli, scratchDir, startServe, type Tree, waitedOnDeadProcess } from "../support/kill-harness.ts";
import { Choices, mulberry32 } from "../support/seeded.ts";

const env = process.env as Record<string, string>;
const LONG = env.SLIVINGDOC_FUZZ_LONG === "1";
const SEED = env.SLIVINGDOC_FUZZ_SEED !== undefined ? Number(env.SLIVINGDOC_FUZZ_SEED) : Math.floor(Math.random() * 2 ** 31);
/** Iterations per store: each kills (or tries to kill) one call of V. */
const ITERATIONS = { sqlite: LONG ? 2500 : 110, s3: LONG ? 1500 : 60 };
/** The share of V's acknowledged commits checked at once by a fresh pull (all of them in long mode); the end checks everything. */
const STORE_CHECKS = LONG ? 1 : 0.4;

const bucket = env.SLIVINGDOC_TEST_S3_BUCKET;
const runId = crypto.randomUUID().slice(0, 8);
const { scratches, prefixes, remove } = leftovers();
afterAll(remove);

type Op = "commit" | "pull" | "serve-commit" | "serve-pull";
const OPS: Op[] = ["commit", "commit", "commit", "pull", "pull", "serve-commit", "serve-pull"];

const R_HEAD = "# R's region";
const GAP = ["~ unchanged one", "~ unchanged two", "~ unchanged three"];
const V_HEAD = "# V's region";

const text = (lines: string[]) => lines.map((l) => `${l}\n`).join("");
const linesOf = (t: string | undefined) => (t ?? "").split("\n").filter((l) => l !== "");

/** shared.md split into R's region and V's region; null when its frame is not intact. */
function regions(t: string | undefined): { r: string[]; v: string[] } | null {
  const ls = linesOf(t);
  const rh = ls.indexOf(R_HEAD);
  const g = ls.indexOf(GAP[0]!);
  const vh = ls.indexOf(V_HEAD);
  if (rh !== 0 || g < 0 || vh !== g + GAP.length || ls.slice(g, vh).join("\n") !== GAP.join("\n")) return null;
  return { r: ls.slice(rh + 1, g), v: ls.slice(vh + 1) };
}

/** Replace one agent's region of the shared.md on disk, keeping the other's as it is there. */
function writeRegion(dir: string, who: "r" | "v", own: string[]): void {
  const file = join(dir, "shared.md");
  const now = regions(existsSync(file) ? readFileSync(file, "utf8") : undefined);
  if (now === null) throw new Error(`shared.md in ${dir} lost its frame:\n${existsSync(file) ? readFileSync(file, "utf8") : "(absent)"}`);
  const r = who === "r" ? own : now.r;
  const v = who === "v" ? own : now.v;
  writeFileSync(file, text([R_HEAD, ...r, ...GAP, V_HEAD, ...v]));
}

class FuzzFailure extends Error {}

/** What the lock files under a private root hold: a wedge's evidence. */
function lockFiles(privateRoot: string): string {
  const base = join(privateRoot, "checkouts");
  if (!existsSync(base)) return "no checkouts";
  return readdirSync(base)
    .filter((id) => existsSync(join(base, id, "lock")))
    .map((id) => `lock ${id.slice(0, 8)}… holds ${JSON.stringify(readFileSync(join(base, id, "lock"), "utf8"))}`)
    .join("; ") || "no lock file left";
}

async function fuzz(kind: "sqlite" | "s3"): Promise<void> {
  const scratch = scratchDir(`crash-fuzz-${kind}`);
  scratches.push(scratch);
  let store: string;
  if (kind === "sqlite") store = `sqlite:${join(scratch, "store.db")}`;
  else {
    const prefix = `slivingdoc-test/crash-fuzz-${runId}`;
    prefixes.push(prefix);
    store = `s3://${bucket}/${prefix}`;
  }
  const workspace = join(scratch, "ws");
  const V = join(workspace, "v");
  const R = join(scratch, "r");
  mkdirSync(workspace, { recursive: true });
  const envV = { ...env, SLIVINGDOC_STORE: store, SLIVINGDOC_PRIVATE_ROOT: join(scratch, "private-v") };
  const envR = { ...env, SLIVINGDOC_STORE: store, SLIVINGDOC_PRIVATE_ROOT: join(scratch, "private-r") };
  const choose = new Choices(mulberry32(SEED ^ (kind === "s3" ? 0x5e3 : 0)));
  const counts = { slowestNext: 0, gcs: 0, iterations: 0, kills: 0, finishedFirst: 0, nextCalls: 0, vAcks: 0, rAcks: 0, storeChecks: 0, byOp: {} as Record<string, number> };
  const log: string[] = [];
  const fail = (what: string, r?: RunResult | { answer: unknown }): never => {
    const detail = r ? `\n${"stdout" in r ? `exit ${r.code}\n${r.stdout}\n${r.stderr}` : JSON.stringify(r.answer)}` : "";
    throw new FuzzFailure(`crash-fuzz ${kind}, seed ${SEED}, iteration ${counts.iterations}: ${what}${detail}\nlast steps:\n${log.slice(-12).join("\n")}`);
  };

  // V's truth: what V wrote. R's truth: R's lines, and which of them are acknowledged.
  const v = { md: [] as string[], region: [] as string[], files: new Map<string, string>() };
  const r = { md: [] as string[], region: [] as string[], acked: new Set<string>(), ackedMd: [] as string[], ackedRegion: [] as string[], files: new Map<string, string>() };
  const writeV = () => {
    writeFileSync(join(V, "v.md"), text(v.md));
    writeRegion(V, "v", v.region);
  };

  // Seed: R makes the notebook's frame; V pulls it.
  let res = await runCli(["pull", "--json", R], envR);
  if (res.code !== 0) fail("R's first pull", res);
  writeFileSync(join(R, "shared.md"), text([R_HEAD, ...GAP, V_HEAD]));
  writeFileSync(join(R, "r.md"), "");
  res = await runCli(["commit", "--json", "-m", "frame", R], envR);
  if (res.code !== 0) fail("R's first commit", res);
  res = await runCli(["pull", "--json", V], envV);
  if (res.code !== 0) fail("V's first pull", res);
  for (let k = 0; k < 8; k++) v.md.push(`v seed ${k}`);
  writeV();
  res = await runCli(["commit", "--json", "-m", "v seed", V], envV);
  if (res.code !== 0) fail("V's seed commit", res);

  // One tool call of a fresh `serve`, killed after `killAfterMs` if given.
  const serveCall = async (tool: "notes_commit" | "notes_pull", message: string, killAfterMs?: number) => {
    const s = await startServe(["--workspace-root", workspace], envV);
    const out = await s.call(tool, tool === "notes_commit" ? { message, path: V } : { path: V }, killAfterMs);
    if (!out.killed) await s.stop();
    return out;
  };
  const runOp = async (op: Op, message: string, killAfterMs?: number): Promise<{ killed: boolean; ok: boolean; ms: number; detail: RunResult | { answer: unknown } }> => {
    if (op === "commit" || op === "pull") {
      const args = op === "commit" ? ["commit", "--json", "-m", message, V] : ["pull", "--json", V];
      const out = await runCli(args, envV, killAfterMs !== undefined ? { killAfterMs } : {});
      const wedged = waitedOnDeadProcess(out);
      if (wedged) fail(`V's ${op} waited on a dead process: ${wedged}; ${lockFiles(envV.SLIVINGDOC_PRIVATE_ROOT)}`, out);
      if (out.code === 4) fail(`V's ${op} answered a conflict, but no other writer touched V's lines`, out);
      return { killed: out.killed, ok: out.code === 0, ms: out.ms, detail: out };
    }
    const out = await serveCall(op === "serve-commit" ? "notes_commit" : "notes_pull", message, killAfterMs);
    const result = (out.answer?.result ?? null) as { isError?: boolean; structuredContent?: Record<string, unknown> } | null;
    if (!out.killed && result === null) fail(`serve ended without answering ${op}`, out);
    const reason = result?.structuredContent?.reason;
    if (reason === "LOCAL_STATE") fail(`V's ${op} waited on a dead process: answered LOCAL_STATE after ${Math.round(out.ms)} ms`, out);
    if (result?.structuredContent?.code === "CONTENT_CONFLICT") fail(`V's ${op} answered a conflict, but no other writer touched V's lines`, out);
    return { killed: out.killed, ok: result !== null && result.isError !== true, ms: out.ms, detail: out };
  };

  // Measure each operation's duration first: kill instants are drawn over [0, duration].
  const duration: Record<Op, number> = { commit: 0, pull: 0, "serve-commit": 0, "serve-pull": 0 };
  for (const op of ["commit", "pull", "serve-commit", "serve-pull"] as Op[]) {
    const samples: number[] = [];
    for (let k = 0; k < 3; k++) {
      v.md.push(`v measure ${op} ${k}`);
      writeV();
      const out = await runOp(op, `measure ${op} ${k}`);
      if (!out.ok) fail(`measuring ${op}`, out.detail);
      samples.push(out.ms);
    }
    duration[op] = samples.sort((a, b) => a - b)[1]!;
  }
  // Publish what the pulls measured left unpublished; V is now in sync.
  if (!(await runOp("commit", "measured")).ok) fail("committing after measuring");

  /** V's visible files are exactly what V wrote; R's region holds at least R's acknowledged lines. */
  const expectVisible = (when: string) => {
    const t = readTree(V);
    // R's commits have all ended by now: its files are all acknowledged, so V has exactly them.
    const want = new Set(["shared.md", "r.md", "v.md", ...v.files.keys(), ...r.files.keys()]);
    const extra = [...t.keys()].filter((p) => !want.has(p));
    const missing = [...want].filter((p) => !t.has(p));
    if (extra.length + missing.length > 0) fail(`${when}: V's checkout has files ${JSON.stringify(extra)} it should not, lacks ${JSON.stringify(missing)}`);
    if (t.get("v.md") !== text(v.md)) fail(`${when}: v.md is not what V wrote\n want ${JSON.stringify(text(v.md))}\n have ${JSON.stringify(t.get("v.md"))}`);
    for (const [p, c] of v.files) if (t.get(p) !== c) fail(`${when}: ${p} is not what V wrote: ${JSON.stringify(t.get(p))}`);
    for (const [p, c] of r.files) if (t.get(p) !== c) fail(`${when}: R's ${p} reached V as ${JSON.stringify(t.get(p))}`);
    const g = regions(t.get("shared.md"));
    if (g === null) fail(`${when}: shared.md lost its frame: ${JSON.stringify(t.get("shared.md"))}`);
    if (g!.v.join("\n") !== v.region.join("\n")) fail(`${when}: V's region of shared.md is not what V wrote\n want ${JSON.stringify(v.region)}\n have ${JSON.stringify(g!.v)}`);
    return { t, g: g! };
  };
  /** The store, through a fresh pull: V's files exactly as V wrote them, and every acknowledged line of R. */
  const expectStore = async (when: string, exact: boolean) => {
    counts.storeChecks++;
    const { tree } = await freshPull(envV, scratch);
    const seen: Tree = tree;
    if (seen.get("v.md") !== text(v.md)) fail(`${when}: the store's v.md is not V's acknowledged one\n want ${JSON.stringify(text(v.md))}\n have ${JSON.stringify(seen.get("v.md"))}`);
    const vNames = [...seen.keys()].filter((p) => /^v-\d+\.md$/.test(p)).sort();
    if (vNames.join() !== [...v.files.keys()].sort().join()) fail(`${when}: the store holds V's files ${JSON.stringify(vNames)}, V acknowledged ${JSON.stringify([...v.files.keys()].sort())}`);
    const g = regions(seen.get("shared.md"));
    if (g === null) fail(`${when}: the store's shared.md lost its frame: ${JSON.stringify(seen.get("shared.md"))}`);
    if (g!.v.join("\n") !== v.region.join("\n")) fail(`${when}: the store's V region is not V's acknowledged one\n want ${JSON.stringify(v.region)}\n have ${JSON.stringify(g!.v)}`);
    const rmd = linesOf(seen.get("r.md"));
    // R's commit may be in flight: the store holds what R last acknowledged, or what it is publishing.
    const rNow = `${r.md.join("|")}#${r.region.join("|")}`;
    const rAcked = `${r.ackedMd.join("|")}#${r.ackedRegion.join("|")}`;
    const rSeen = `${rmd.join("|")}#${g!.r.join("|")}`;
    if (rSeen !== rNow && (exact || rSeen !== rAcked)) fail(`${when}: the store's R content is not what R acknowledged\n want r.md ${JSON.stringify(r.md)} and region ${JSON.stringify(r.region)}\n have r.md ${JSON.stringify(rmd)} and region ${JSON.stringify(g!.r)}`);
    const rNames = [...seen.keys()].filter((p) => /^r-\d+\.md$/.test(p)).sort();
    if (exact && (rNames.join() !== [...r.files.keys()].sort().join() || rNames.some((p) => seen.get(p) !== r.files.get(p)))) fail(`${when}: the store's R files are ${JSON.stringify(rNames)}, R has ${JSON.stringify([...r.files.keys()].sort())}`);
  };

  const started = performance.now();
  let lineNo = 0;
  for (let i = 0; i < ITERATIONS[kind]; i++) {
    counts.iterations = i + 1;
    // 1. V's local edits, unpublished.
    const added: Array<{ where: "md" | "region"; line: string }> = [];
    const add = (where: "md" | "region") => {
      const line = `v ${i}.${lineNo++}`;
      (where === "md" ? v.md : v.region).push(line);
      added.push({ where, line });
    };
    add("md");
    if (choose.chance(0.5)) add("region");
    if (choose.chance(0.3) && v.md.length > 3) v.md.splice(choose.int(v.md.length - 1), 1);
    if (choose.chance(0.15)) v.files.set(`v-${i}.md`, `v file ${i}\n`);
    else if (choose.chance(0.12) && v.files.size > 0) {
      const victim = choose.pick([...v.files.keys()]);
      v.files.delete(victim);
      rmSync(join(V, victim), { force: true });
    }
    writeV();
    for (const [p, c] of v.files) if (!existsSync(join(V, p))) writeFileSync(join(V, p), c);

    // 2. R commits meanwhile.
    let remote: Promise<RunResult> | null = null;
    let rLine = "";
    if (choose.chance(0.7)) {
      rLine = `r ${i}`;
      r.md.push(rLine);
      r.region.push(rLine);
      // R takes back one of its own lines now and then: nobody else may bring it back.
      if (choose.chance(0.2) && r.region.length > 2) r.region.splice(choose.int(r.region.length - 1), 1);
      writeFileSync(join(R, "r.md"), text(r.md));
      writeRegion(R, "r", r.region);
      // R adds and removes whole files too: V's killed calls are then creating and removing files.
      if (choose.chance(0.2)) {
        const name = `r-${i}.md`;
        const body = text(Array.from({ length: 40 + choose.int(400) }, (_, k) => `r file ${i} line ${k}`));
        r.files.set(name, body);
        writeFileSync(join(R, name), body);
      } else if (choose.chance(0.15) && r.files.size > 0) {
        const gone = choose.pick([...r.files.keys()]);
        r.files.delete(gone);
        rmSync(join(R, gone));
      }
      remote = runCli(["commit", "--json", "-m", rLine, R], envR);
    }

    // Now and then an operator's gc runs too, with no grace period: it must never take a pack anyone can still use.
    const collector = choose.chance(0.1) ? runCli(["gc", "--json", "--grace", "0s"], envR) : null;

    // 3. V's call, killed at an instant drawn over its measured duration.
    const op = choose.pick(OPS);
    const killAt = choose.rnd() * duration[op];
    const out = await runOp(op, `v ${i}`, killAt);
    log.push(`#${i} ${op} kill at ${killAt.toFixed(1)}/${duration[op].toFixed(1)} ms: ${out.killed ? "killed" : out.ok ? "finished first, OK" : "finished first, refused"}${rLine ? `; R commits ${rLine}` : ""}`);
    if (out.killed) {
      counts.kills++;
      counts.byOp[op] = (counts.byOp[op] ?? 0) + 1;
    } else {
      counts.finishedFirst++;
      if (!out.ok) fail(`V's ${op} failed without being killed`, out.detail);
      duration[op] = duration[op] * 0.8 + out.ms * 0.2;
    }
    if (!out.killed && op.endsWith("commit")) {
      counts.vAcks++;
      if (choose.chance(STORE_CHECKS)) await expectStore(`after V's ${op} that finished before the kill`, false);
    }

    // 4. V edits again: often it takes back a line the killed call may have published.
    if (choose.chance(0.5)) {
      const back = choose.pick(added);
      const list = back.where === "md" ? v.md : v.region;
      list.splice(list.indexOf(back.line), 1);
      log.push(`#${i} V deletes ${back.line}`);
    }
    if (choose.chance(0.3)) add("md");
    // ... and it edits shared.md, a file a killed pull may have been writing.
    if (choose.chance(0.3)) add("region");
    writeV();

    // 5. R's commit ends: acknowledged, never a conflict (nobody touched R's lines).
    if (remote) {
      const rr = await remote;
      if (waitedOnDeadProcess(rr)) fail(`R's commit waited: ${waitedOnDeadProcess(rr)}`, rr);
      if (rr.code !== 0) fail(`R's commit of ${rLine} failed (${rr.code === 4 ? "a conflict without a second writer on its lines" : "refused"})`, rr);
      r.acked.add(rLine);
      r.ackedMd = [...r.md];
      r.ackedRegion = [...r.region];
      counts.rAcks++;
    }

    if (collector) {
      const gc = await collector;
      counts.gcs++;
      if (gc.code !== 0) fail("gc failed", gc);
    }

    // 6. Most of the time, V's next call runs to the end; otherwise the next kill lands on a recovering call.
    if (choose.chance(0.75)) {
      const next: Op = choose.chance(0.6) ? "commit" : "pull";
      const n = await runOp(next, `v ${i} next`);
      counts.nextCalls++;
      log.push(`#${i} next ${next}: ${n.ok ? "OK" : "refused"} in ${n.ms.toFixed(0)} ms`);
      if (!n.ok) fail(`V's ${next} after the kill failed`, n.detail);
      duration[next] = duration[next] * 0.8 + n.ms * 0.2;
      counts.slowestNext = Math.max(counts.slowestNext, n.ms);
      const { t, g } = expectVisible(`after V's ${next} following the kill`);
      // R's commits have all ended: V has R's region exactly as R acknowledged it, deletions included.
      if (g.r.join("\n") !== r.region.join("\n")) fail(`after V's ${next}: R's region on V is not what R acknowledged\n want ${JSON.stringify(r.region)}\n have ${JSON.stringify(g.r)}`);
      if (t.get("r.md") !== text(r.md)) fail(`after V's ${next}: r.md on V is not what R acknowledged`);
      if (next === "commit") {
        counts.vAcks++;
        if (choose.chance(STORE_CHECKS)) await expectStore(`after V's acknowledged commit`, false);
      }
    }
  }

  // The end: V publishes, R syncs; the store holds exactly both agents' content.
  const last = await runOp("commit", "final");
  if (!last.ok) fail("V's final commit", last.detail);
  expectVisible("after the final commit");
  await expectStore("at the end", true);
  const rSync = await runCli(["pull", "--json", R], envR);
  if (rSync.code !== 0) fail("R's final pull", rSync);
  const rTree = readTree(R);
  expect(rTree.get("v.md")).toBe(text(v.md));
  expect(regions(rTree.get("shared.md"))?.v).toEqual(v.region);
  const seconds = (performance.now() - started) / 1000;
  console.log(
    `crash-fuzz ${kind}: seed ${SEED}, iterations ${counts.iterations}, kills ${counts.kills} (${Object.entries(counts.byOp)
      .map(([k, n]) => `${k} ${n}`)
      .join(", ")}), finished before the kill ${counts.finishedFirst}, next calls ${counts.nextCalls} (slowest ${Math.round(counts.slowestNext)} ms), V acknowledged ${counts.vAcks}, R acknowledged ${counts.rAcks}, store checks ${counts.storeChecks}, gc runs ${counts.gcs}, measured ms ${JSON.stringify(Object.fromEntries(Object.entries(duration).map(([k, d]) => [k, Math.round(d)])))}, ${seconds.toFixed(1)} s`,
  );
  // The fuzzer really killed: most draws land inside the call.
  expect(counts.kills).toBeGreaterThan(ITERATIONS[kind] / 3);
  expect(counts.vAcks).toBeGreaterThan(0);
  expect(counts.rAcks).toBeGreaterThan(0);
}

test(`crash fuzz on the embedded store: ${ITERATIONS.sqlite} random kills of pull, commit and serve, nothing acknowledged or unpublished lost`, async () => {
  console.log(`crash-fuzz: seed ${SEED} (replay the choices with SLIVINGDOC_FUZZ_SEED=${SEED}${LONG ? ", long mode" : ""})`);
  await fuzz("sqlite");
}, LONG ? 3_600_000 : 300_000);

if (!bucket) {
  test("S3 test server is configured", () => {
    throw new Error("SLIVINGDOC_TEST_S3_BUCKET is not set, so the crash fuzzer cannot run on S3. Run `npm test` (it starts a throwaway Ceph RGW); see docs/s3.md.");
  });
} else {
  test(`crash fuzz on S3: ${ITERATIONS.s3} random kills of pull, commit and serve, nothing acknowledged or unpublished lost`, async () => {
    await fuzz("s3");
  }, LONG ? 3_600_000 : 300_000);
}
