/**
 * `slivingdoc doctor`'s report for a person: the verdict in a line, what
 * was measured, a line each, the problems with what to do, and the
 * settings this store calls for. `--json` carries the same, and the
 * samples' counts.
 */
import type { LatencyStat, Permission } from "../../store/doctor.ts";
import type { DoctorReport } from "../doctor.ts";
import { seconds } from "../duration.ts";
import { examinedWords } from "../stores.ts";
import { plural } from "./render.ts";

const LABEL_WIDTH = 22;

export function renderDoctor(r: DoctorReport): string {
  const verdict =
    r.verdict === "ok" ? "is ready for a notebook" : r.verdict === "warnings" ? `works, with ${plural(r.problems.length, "warning")}` : "is not usable as configured";
  const lines = [`doctor: ${examinedWords(r.kind).name} ${verdict} (examined in ${seconds(r.durationMs)})`];
  const row = (label: string, value: string) => lines.push(`  ${label.padEnd(LABEL_WIDTH)}${value}`);
  row("access", accessLine(r));
  row("conditional writes", conditionsLine(r));
  const { get, put, conditionalPut } = r.latency;
  if (get !== null) row("GET", latencyLine(get));
  if (put !== null) row("PUT (create-only)", latencyLine(put));
  if (conditionalPut !== null) row("conditional PUT", latencyLine(conditionalPut));
  if (r.conditionalWritesPerSecond !== null) row("conditional writes/s", `${r.conditionalWritesPerSecond} (one writer, back to back, on a scratch key)`);
  if (r.listAfterWrite !== null) row("list after write", listLine(r.listAfterWrite));
  row("clock skew", skewLine(r));
  row("notebook", notebookLine(r));
  for (const level of ["fail", "warn"] as const) {
    const problems = r.problems.filter((p) => p.level === level);
    if (problems.length === 0) continue;
    lines.push(level === "fail" ? "problems:" : "warnings:");
    for (const p of problems) lines.push(`  - ${p.text}`);
  }
  if (r.recommended !== null) lines.push(recommendationLine(r));
  return `${lines.join("\n")}\n`;
}

function notebookLine(r: DoctorReport): string {
  const n = r.notebook;
  switch (n.state) {
    case "none":
      return "none yet (the first commit makes it)";
    case "newer":
      return `written by a newer slivingdoc (store format ${n.format})`;
    case "damaged":
      return "its manifest (current) is damaged";
    case "unreadable":
      return "not read (the store did not answer)";
    case "held": {
      const history = n.historyPacks > 0 ? ` and ${plural(n.historyPacks, "history pack", "history packs")}` : "";
      const id = n.notebook === null ? "no id (written before notebooks had ids)" : `id ${n.notebook}`;
      return `generation ${n.generation}, store format ${n.format}, ${id}; retained history in ${plural(n.packs, "pack", "packs")}${history}, ${megabytes(n.bytes)}`;
    }
  }
}

function megabytes(bytes: number): string {
  return bytes < 1_000_000 ? `${(bytes / 1000).toFixed(1)} kB` : `${(bytes / 1_000_000).toFixed(1)} MB`;
}

function accessLine(r: DoctorReport): string {
  const p = r.permissions;
  const what = (["read", "list", "write", "delete"] as const).map((k) => `${k} ${permissionWord(p[k])}`).join(", ");
  // A store in a file of this user's: no credentials, and opening it proved the rest.
  if (examinedWords(r.kind).permissions === undefined && r.access === "writer") return "this user reads and writes the store's file";
  switch (r.access) {
    case "writer":
      return `a writer (${what})`;
    case "reader":
      return `a reader (${what})`;
    case "neither":
      return `neither a reader nor a writer (${what})`;
    case "unknown":
      return `not known (${what})`;
  }
}

function permissionWord(p: Permission): string {
  return p === "allowed" ? "yes" : p === "denied" ? "DENIED" : "not tried";
}

function conditionsLine(r: DoctorReport): string {
  const c = r.conditionalWrites;
  if (c === null) return r.permissions.write === "denied" ? "not tried: these credentials may not write" : "not tried";
  return c.proved ? "enforced: create-only (If-None-Match), compare-and-swap (If-Match), one winner among racing writers" : `NOT ENFORCED: ${c.cause}`;
}

function latencyLine(s: LatencyStat): string {
  return `p50 ${s.p50Ms} ms, p99 ${s.p99Ms} ms (${plural(s.samples, "request")})`;
}

function listLine(l: { rounds: number; missed: number }): string {
  const listings = l.rounds * 2;
  return l.missed === 0 ? `every listing showed the write or delete just before it (${listings} listings)` : `${l.missed} of ${listings} listings missed the write or delete just before them`;
}

function skewLine(r: DoctorReport): string {
  const s = r.clockSkew;
  if (s === null) return examinedWords(r.kind).permissions === undefined ? "does not apply: the store is on this machine" : "not measured: no answer gave the server's time";
  const sign = s.offsetMs > 0 ? "+" : s.offsetMs < 0 ? "-" : "";
  return `${sign}${skewText(Math.abs(s.offsetMs))} ± ${skewText(s.uncertaintyMs)} (the server's clock less this machine's, from its Date header)`;
}

/** Milliseconds under a second, else seconds(): a clock in step is off by a few milliseconds. */
function skewText(ms: number): string {
  return ms < 1000 ? `${ms} ms` : seconds(ms);
}

function recommendationLine(r: DoctorReport): string {
  const rec = r.recommended!;
  const settings = `--commit-retries ${rec.commitRetries} --deadline ${durationFlag(rec.deadlineMs)}`;
  const why = `a commit that loses ${plural(rec.commitRetries, "race")} in a row answers in about ${seconds(rec.longestCommitMs)} here`;
  return `recommended: ${settings}${rec.asConfigured ? ", as configured" : ""} (${why})`;
}

/** A duration as --deadline takes it: 60s, 5m. */
function durationFlag(ms: number): string {
  return ms % 60_000 === 0 ? `${ms / 60_000}m` : `${Math.ceil(ms / 1000)}s`;
}
