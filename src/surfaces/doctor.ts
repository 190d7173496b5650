/**
 * `slivingdoc doctor`'s judgement (docs/doctor.md): from what
 * store/doctor.ts measured, which credentials these are, the problems —
 * each a sentence that says what to do — the verdict, and the commit retry
 * bound and call deadline this store calls for.
 */
import { longestCommitMs } from "../engine/publish/contention.ts";
import type { Examination } from "../store/doctor.ts";
import type { NotebookFacts } from "./doctor-notebook.ts";
import { notebookProblems } from "./doctor-notebook.ts";
import { seconds } from "./duration.ts";
import { examinedWords } from "./stores.ts";

/** What these credentials are: the writer's policy, the reader's (docs/s3.md), neither, or not known (the examination stopped first). */
export type Access = "writer" | "reader" | "neither" | "unknown";

export interface Problem {
  /** "fail": the store is not usable so (the verdict "unusable"); "warn": usable, with this to know or mend. */
  level: "fail" | "warn";
  text: string;
}

export interface Recommendation {
  commitRetries: number;
  deadlineMs: number;
  /** About the longest a commit that loses `commitRetries` races in a row takes on this store. */
  longestCommitMs: number;
  /** Both are what this process was configured with. */
  asConfigured: boolean;
}

export interface DoctorReport extends Examination {
  verdict: "ok" | "warnings" | "unusable";
  /** The notebook the store holds, read from `current` alone. */
  notebook: NotebookFacts;
  access: Access;
  problems: Problem[];
  /** Null where nothing was measured to base it on (no write could be timed). */
  recommended: Recommendation | null;
  durationMs: number;
}

/** The settings the advice starts from: this process's. */
export interface CurrentSettings {
  commitRetries: number;
  deadlineMs: number;
}

/** Past a minute, times in the log and gc's grace period (1 h by default) are off by as much. */
const SKEW_WARN_MS = 60_000;
/** Signed requests more than 15 minutes off the server's clock are refused (RequestTimeTooSkewed). */
const SKEW_FAIL_MS = 15 * 60_000;
/** The advice keeps this much of the deadline spare over its estimate: the estimate leaves out the merge. */
const MARGIN = 1.5;
/** Fewer retries than this, and a few writers at once already exhaust them: the deadline grows instead. */
const MIN_RETRIES = 5;
const DEADLINE_STEP_MS = 10_000;

export function judge(exam: Examination, current: CurrentSettings, durationMs: number, notebook: NotebookFacts): DoctorReport {
  const access = accessOf(exam);
  const problems = [
    ...accessProblems(exam, access),
    ...conditionProblems(exam),
    ...clockProblems(exam),
    ...notebookProblems(notebook),
    ...housekeeping(exam),
  ];
  const verdict = problems.some((p) => p.level === "fail") ? "unusable" : problems.length > 0 ? "warnings" : "ok";
  return { verdict, access, problems, ...exam, notebook, recommended: recommend(exam, current), durationMs: Math.round(durationMs) };
}

function accessOf(exam: Examination): Access {
  const { read, list, write } = exam.permissions;
  if (read === "untried" || list === "untried" || write === "untried") return "unknown";
  if (read === "allowed" && list === "allowed") return write === "allowed" ? "writer" : "reader";
  return "neither";
}

function accessProblems(exam: Examination, access: Access): Problem[] {
  const p = exam.permissions;
  const words = examinedWords(exam.kind);
  const grant = words.permissions;
  const policy = grant === undefined ? "" : ` (${grant.policies})`;
  const out: Problem[] = [];
  // The stop's sentence says what to do (probe.ts operationalFailure), "call again" only where a retry can help.
  if (exam.stopped !== null) out.push({ level: "fail", text: `the examination stopped: ${exam.stopped}` });
  if (access === "neither") {
    out.push({
      level: "fail",
      text:
        p.list === "denied"
          ? `these credentials may not list the notebook's keys${grant ? ` (${grant.list})` : ""}: every command needs it, since without it a read of a missing key is refused instead of answered as missing. Give them the reader's or the writer's policy${policy}`
          : `these credentials may not read the notebook's keys${grant ? ` (${grant.read})` : ""}: give them the reader's or the writer's policy${policy}`,
    });
  }
  if (access === "reader") {
    out.push({
      level: "warn",
      text: `these credentials may read the notebook but not write it: pull, log, show and export work; commit, gc and serve refuse to start (INCOMPATIBLE_STORE). For an agent that commits, give them the writer's policy${policy}`,
    });
  }
  if (p.write === "allowed" && p.delete === "denied") {
    out.push({
      level: "warn",
      text: `these credentials may write but not delete${grant ? ` (${grant.delete})` : ""}: commits work, but gc cannot remove packs and a commit that lost a race leaves its pack behind. The writer's policy allows it${policy}`,
    });
  }
  return out;
}

function conditionProblems(exam: Examination): Problem[] {
  const out: Problem[] = [];
  const c = exam.conditionalWrites;
  if (c !== null && !c.proved) {
    out.push({
      level: "fail",
      text: `the store does not enforce the conditional writes the notebook rests on: ${c.cause}. commit, gc and serve refuse it at start (INCOMPATIBLE_STORE), and no setting mends it: use a store that enforces If-None-Match and If-Match`,
    });
  }
  const l = exam.listAfterWrite;
  if (l !== null && l.missed > 0) {
    out.push({
      level: "warn",
      text: `${l.missed} of ${l.rounds * 2} listings did not yet show a write or a delete just answered: gc's grace period covers that for packs, but commits may see each other's proposals late under contention`,
    });
  }
  return out;
}

function clockProblems(exam: Examination): Problem[] {
  const s = exam.clockSkew;
  if (s === null) return [];
  const off = Math.abs(s.offsetMs) - s.uncertaintyMs;
  const how = `this machine's clock is ${seconds(Math.abs(s.offsetMs))} ${s.offsetMs > 0 ? "behind" : "ahead of"} the server's`;
  if (off > SKEW_FAIL_MS) return [{ level: "fail", text: `${how}: requests signed more than 15 minutes off are refused, and gc's grace period is measured against the server's times. Set this machine's clock (NTP)` }];
  if (off > SKEW_WARN_MS) return [{ level: "warn", text: `${how}: times in the log and gc's grace period are off by as much. Set this machine's clock (NTP)` }];
  return [];
}

function housekeeping(exam: Examination): Problem[] {
  if (exam.leftovers === 0) return [];
  const n = exam.leftovers === 1 ? "1 scratch object" : `${exam.leftovers} scratch objects`;
  return [{ level: "warn", text: `${n} under probe/ could not be deleted: harmless, since nothing reads them; delete them by hand when the store answers again` }];
}

/**
 * The retry bound and the deadline for this store: the current ones when
 * a commit that loses every race up to the bound still answers within the
 * deadline with room (MARGIN); else as many retries as fit; else the
 * fewest useful retries and a deadline that holds them.
 */
export function recommend(exam: Examination, current: CurrentSettings): Recommendation | null {
  const { get, put, conditionalPut } = exam.latency;
  if (get === null || put === null || conditionalPut === null) return null;
  const attemptMs = get.p99Ms + put.p99Ms + conditionalPut.p99Ms;
  const windowMs = get.p50Ms + conditionalPut.p50Ms;
  const longest = (retries: number) => Math.round(longestCommitMs(retries, attemptMs, windowMs));
  const fits = (retries: number) => MARGIN * longest(retries) <= current.deadlineMs;
  const advice = (commitRetries: number, deadlineMs: number): Recommendation => ({
    commitRetries,
    deadlineMs,
    longestCommitMs: longest(commitRetries),
    asConfigured: commitRetries === current.commitRetries && deadlineMs === current.deadlineMs,
  });
  for (let retries = current.commitRetries; retries >= MIN_RETRIES; retries--) {
    if (fits(retries)) return advice(retries, current.deadlineMs);
  }
  const retries = Math.min(MIN_RETRIES, current.commitRetries);
  if (fits(retries)) return advice(retries, current.deadlineMs);
  const deadlineMs = Math.ceil((MARGIN * longest(retries)) / DEADLINE_STEP_MS) * DEADLINE_STEP_MS;
  return advice(retries, Math.max(deadlineMs, current.deadlineMs));
}
