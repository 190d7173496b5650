/**
 * `slivingdoc agents`: who has been publishing (docs/history.md) — each
 * agent of the retained history with how many publications it made, its
 * first and last, and the files they changed. The retained history is all
 * it knows: an agent whose publications are all older is not listed, and
 * one whose oldest retained publication's changes are unknown (its parent
 * is older than the history the store keeps) says so, as `log` does.
 */
import { changesOf, type Crossed, crossingsOf } from "./log.ts";
import { type History, type HistoryDeps, withHistory } from "./read.ts";

/** A publication named by generation and time, as `log` lists it. */
export interface PublicationMark {
  generation: number;
  time: string;
}

export interface AgentSummary {
  agent: string;
  /** How many retained publications it made. */
  publications: number;
  first: PublicationMark;
  last: PublicationMark;
  /** Every notebook path its publications changed, sorted. */
  files: string[];
  /** Its publications whose changes are unknown (the parent is older than the retained history): their files are not in `files`. */
  changesUnknown: number[];
}

export interface AgentsResult {
  /** The accepted generation (0: no notebook yet). */
  generation: number;
  /** The oldest generation retained (0: none). */
  oldestRetained: number;
  /** Newest last publication first. */
  agents: AgentSummary[];
}

export interface AgentsOptions {
  /** Publications recorded at or after this instant only, as `log --since`. */
  since?: Date;
}

/** One publication as the agents' chart draws it: a mark on its agent's lane, and lines to those it crossed. */
export interface ChartPublication {
  generation: number;
  time: string;
  agent: string;
  /** null when what it changed is unknown (its parent is older than the retained history). */
  filesChanged: number | null;
  base: number | null;
  /** The retained publications it crossed, oldest first; empty when none or when its base generation is unknown. */
  crossed: Crossed[];
}

export interface AgentsChart extends AgentsResult {
  /** Newest first, at most MAX_CHART_PUBLICATIONS. */
  publications: ChartPublication[];
}

/** The most publications a chart lists: the newest ones. */
export const MAX_CHART_PUBLICATIONS = 10_000;

/** `slivingdoc agents`: each agent's publications in the retained history. */
export async function historyAgents(deps: HistoryDeps, input: AgentsOptions): Promise<AgentsResult> {
  const { publications: _chart, ...result } = await withHistory(deps, (history) => agentsChart(history, input));
  return result;
}

/** The agents of an opened history and its publications for the chart, in one walk: each publication's changes are diffed once. */
export async function agentsChart(history: History, input: AgentsOptions): Promise<AgentsChart> {
  const byAgent = new Map<string, AgentSummary & { touched: Set<string> }>();
  const publications: ChartPublication[] = [];
  // Newest first: the first seen of an agent is its last publication.
  for (const p of history.publications) {
    if (input.since !== undefined && new Date(p.time).getTime() < input.since.getTime()) continue;
    const mark = { generation: p.generation, time: p.time };
    let summary = byAgent.get(p.agent);
    if (summary === undefined) {
      summary = { agent: p.agent, publications: 0, first: mark, last: mark, files: [], changesUnknown: [], touched: new Set() };
      byAgent.set(p.agent, summary);
    }
    summary.publications++;
    summary.first = mark;
    const changes = await changesOf(history, p, []);
    if (changes === null) summary.changesUnknown.push(p.generation);
    else for (const c of changes) summary.touched.add(c.path);
    if (publications.length < MAX_CHART_PUBLICATIONS) {
      const crossed = crossingsOf(history, p).crossed ?? [];
      publications.push({ generation: p.generation, time: p.time, agent: p.agent, filesChanged: changes?.length ?? null, base: p.base, crossed });
    }
  }
  return {
    generation: history.manifest?.generation ?? 0,
    oldestRetained: history.publications[history.publications.length - 1]?.generation ?? 0,
    agents: [...byAgent.values()].map(({ touched, ...summary }) => ({ ...summary, files: [...touched].sort() })),
    publications,
  };
}
