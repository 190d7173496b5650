/**
 * Human output of the history commands (log, show, agents, blame), on stderr like every
 * command's: names quoted and free text escaped (quote.ts), so neither an
 * agent's name nor a message can drive the terminal. `show`'s patch is not
 * here: it goes raw to stdout, as `diff`'s does (renderers.ts).
 */
import type { AgentsResult, AgentSummary } from "../../engine/history/agents.ts";
import type { BlameLine, BlameResult } from "../../engine/history/blame.ts";
import type { FileChange, LogEntry, LogResult } from "../../engine/history/log.ts";
import type { LogView, ShownEntry } from "../operations/history.ts";
import { escapeControls, quotePath } from "./quote.ts";
import { plural } from "./render.ts";

/** The agents named on one crossing line before the rest are counted: --json has them all. */
const MAX_CROSSING_AGENTS = 8;
/** The files listed per agent: --json has them all. */
const MAX_AGENT_FILES = 20;
/** The files `log` lists per publication: one publication of 20,000 files must not be 20,000 lines. --stat lists them all. */
const MAX_LOG_FILES = 10;
/** The files `show` lists in its header, before the diff: as many as commit's summary lists. --stat lists them all. */
const MAX_SHOW_FILES = 50;

const STATUS: Record<FileChange["status"], string> = { added: "added", modified: "", deleted: "deleted" };

/** The publication's files, at most `max` of them, then how many more and how to see them. */
function fileLines(files: FileChange[] | null, max: number): string[] {
  if (files === null) return ["    (what it changed is unknown: its parent is older than the retained history)"];
  const lines = files.slice(0, max).map((f) => `    ${quotePath(f.path)} | +${f.insertions} -${f.deletions}${STATUS[f.status] ? ` (${STATUS[f.status]})` : ""}`);
  if (files.length > max) lines.push(`    … and ${files.length - max} more files (--stat lists them all)`);
  return lines;
}

/** "6", "6–9": a run of consecutive generations. */
function span(from: number, to: number): string {
  return from === to ? `${from}` : `${from}–${to}`;
}

/** Ascending generations as runs: "6, 8–10". */
function spans(generations: number[]): string {
  const runs: string[] = [];
  for (let i = 0; i < generations.length; ) {
    let j = i;
    while (j + 1 < generations.length && generations[j + 1] === generations[j]! + 1) j++;
    runs.push(span(generations[i]!, generations[j]!));
    i = j + 1;
  }
  return runs.join(", ");
}

/**
 * Where the publication's work crossed others: nothing when its agent had
 * seen the generation before it; else the generations it was merged onto
 * unseen, by agent ("bo (6, 8), cy (7)"), those older than the retained
 * history counted as unknown.
 */
function crossingLine(e: LogEntry): string[] {
  if (e.crossed === null) return ["    crossed: unknown (its commit does not record the generation its agent had seen)"];
  if (e.base === null || e.base >= e.generation - 1) return [];
  const byAgent = new Map<string, number[]>();
  for (const c of e.crossed) {
    const generations = byAgent.get(c.agent) ?? [];
    generations.push(c.generation);
    byAgent.set(c.agent, generations);
  }
  const named = [...byAgent].slice(0, MAX_CROSSING_AGENTS).map(([agent, gs]) => `${escapeControls(agent)} (${spans(gs)})`);
  if (byAgent.size > MAX_CROSSING_AGENTS) named.push(`${plural(byAgent.size - MAX_CROSSING_AGENTS, "more agent", "more agents")} (--json lists them)`);
  if (e.crossedUnretained > 0) {
    named.push(`unknown agents (${span(e.base + 1, e.base + e.crossedUnretained)}: older than the retained history)`);
  }
  const crossed = span(e.base + 1, e.generation - 1);
  return [`    built on generation ${e.base}; crossed generation${e.generation - e.base > 2 ? "s" : ""} ${crossed} by ${named.join(", ")}`];
}

function entryLines(e: LogEntry, maxFiles: number): string[] {
  const lines = [`generation ${e.generation} · ${e.time} · ${escapeControls(e.agent)}`];
  for (const line of e.message.replace(/\n+$/, "").split("\n")) lines.push(`    ${escapeControls(line)}`);
  lines.push(...crossingLine(e));
  if (e.files !== null) {
    lines.push(`    ${plural(e.filesChanged, "file", "files")} changed, ${plural(e.insertions, "insertion", "insertions")}(+), ${plural(e.deletions, "deletion", "deletions")}(-)`);
  }
  lines.push(...fileLines(e.files, maxFiles));
  return lines;
}

/** One publication on one line: generation, time, agent, the message's first line, how many files. */
function onelineEntry(e: LogEntry): string {
  const subject = escapeControls(e.message.replace(/^\n+/, "").split("\n")[0]!);
  const files = e.files === null ? "files unknown" : plural(e.filesChanged, "file", "files");
  return `${e.generation} · ${e.time} · ${escapeControls(e.agent)} · ${subject} · ${files}`;
}

export function renderLog(r: LogResult, view: LogView = "default"): string {
  if (r.generation === 0) return "log: the store holds no notebook yet\n";
  if (r.entries.length === 0) return `log: no retained publication matches (generations ${r.oldestRetained}–${r.generation} are retained)\n`;
  if (view === "oneline") return `${r.entries.map(onelineEntry).join("\n")}\n`;
  const max = view === "stat" ? Infinity : MAX_LOG_FILES;
  return `${r.entries.map((e) => entryLines(e, max).join("\n")).join("\n\n")}\n`;
}

/** `show`'s entry: a header of at most MAX_SHOW_FILES files before the diff; with --stat (no patch) the entry is the answer, every file in it. */
export function renderShow(r: ShownEntry): string {
  return `${entryLines(r, r.patch === undefined ? Infinity : MAX_SHOW_FILES).join("\n")}\n`;
}

function agentLines(a: AgentSummary): string[] {
  const lines = [
    `${escapeControls(a.agent)} · ${plural(a.publications, "publication", "publications")} · ` +
      `first generation ${a.first.generation} at ${a.first.time} · last generation ${a.last.generation} at ${a.last.time}`,
  ];
  const unknown = a.changesUnknown.length > 0 ? ` (and those of generation ${spans(a.changesUnknown)}, unknown: its parent is older than the retained history)` : "";
  lines.push(`    ${plural(a.files.length, "file", "files")} touched${unknown}`);
  for (const f of a.files.slice(0, MAX_AGENT_FILES)) lines.push(`    ${quotePath(f)}`);
  if (a.files.length > MAX_AGENT_FILES) lines.push(`    … and ${a.files.length - MAX_AGENT_FILES} more files (--json lists them all)`);
  return lines;
}

export function renderAgents(r: AgentsResult): string {
  if (r.generation === 0) return "agents: the store holds no notebook yet\n";
  const retained = `generations ${r.oldestRetained}–${r.generation} are retained`;
  if (r.agents.length === 0) return `agents: no retained publication matches (${retained})\n`;
  const head = `${plural(r.agents.length, "agent", "agents")} published in the retained history (${retained}), the latest first:`;
  return `${[head, ...r.agents.map((a) => agentLines(a).join("\n"))].join("\n\n")}\n`;
}

/** Who wrote a line: agent and time, or that it is older than the retained history. */
function writer(l: BlameLine, oldest: number, agentWidth: number): string {
  return l.generation === null ? `older than the retained history (generation ${oldest} and before)` : `${escapeControls(l.agent!).padEnd(agentWidth)} ${l.time}`;
}

/** A file's line on a terminal: controls escaped as in names, tabs left as they are (they only move the cursor on). */
function lineText(text: string): string {
  return text.split("\t").map(escapeControls).join("\t");
}

/**
 * `blame` as `git blame` prints it: per line, the generation that last wrote
 * it (`^N` for one older than the retained history, as git marks a
 * boundary), who and when, the line number, the line. --json has each
 * publication's message too.
 */
export function renderBlame(r: BlameResult): string {
  if (r.lines.length === 0) return `blame: ${quotePath(r.path)} is empty at generation ${r.generation}\n`;
  const generations = r.lines.map((l) => (l.generation === null ? `^${r.oldestRetained}` : `${l.generation}`));
  const agentWidth = Math.max(...r.lines.map((l) => (l.agent === null ? 0 : escapeControls(l.agent).length)));
  const writers = r.lines.map((l) => writer(l, r.oldestRetained, agentWidth));
  const gw = Math.max(...generations.map((g) => g.length));
  const ww = Math.max(...writers.map((w) => w.length));
  const lw = String(r.lines.length).length;
  const rows = r.lines.map((l, i) => `${generations[i]!.padStart(gw)} (${writers[i]!.padEnd(ww)} ${String(l.line).padStart(lw)}) ${lineText(l.text)}`);
  return `${rows.join("\n")}\n`;
}
