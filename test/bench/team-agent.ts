/**
 * What one agent of team's team writes each round, and how it resolves a
 * conflict: the text side of the team workload (test/bench/team.bench.ts),
 * kept apart so the resolution can be tested on its own
 * (test/bench/team.test.ts) and swapped for a broken one there.
 *
 * An agent resolves as docs/resolve-conflicts.md tells it to: it deletes the
 * marker lines and keeps both sides (local first); on the task board it
 * keeps each task once, ticked if either side ticked it — what an agent
 * reading the board would write, and nothing a merge policy could not
 * have done itself.
 */

export const LOG = "shared/log.md";
export const BOARD = "shared/tasks.md";
export const PLAN = "shared/plan.md";
export const PLAN_LINES = 20;
export const agentFile = (agent: number): string => `agents/${agent}.md`;

/**
 * The recommended attributes (docs/teams.md): a union log, and the board and
 * the plan (one step per line) as lines that stand alone. Two agents
 * revising the same step still conflict: that one needs a decision.
 */
export const RECOMMENDED_ATTRIBUTES = "shared/log.md merge=union\nshared/tasks.md merge=lines\nshared/plan.md merge=lines\n";

/** Rewrites a conflicted file's text; `path` is the file's notebook path. */
export type Resolver = (path: string, text: string) => string;

// ------------------------------------------------------------- the files --

export function initialBoard(tasks: number): string {
  return `# tasks\n\n${Array.from({ length: tasks }, (_, i) => `- [ ] task ${i + 1}\n`).join("")}`;
}

export function initialPlan(): string {
  return `# plan\n\n${Array.from({ length: PLAN_LINES }, (_, i) => `step ${i + 1}: to be decided\n`).join("")}`;
}

export const initialLog = (): string => "# log\n\n";

/** The one line an agent appends to the log in a round: unique to the agent and the round. */
export const logLine = (agent: number, round: number): string => `agent ${agent} round ${round}: worked on the board`;

/** The whole of `agents/K.md` as the agent rewrites it in a round. */
export const agentNotes = (agent: number, round: number, task: number | null): string =>
  `# agent ${agent}\n\nlast round: ${round}\nlast task: ${task ?? "none open"}\nnext: pick another open task\n`;

/** The plan line an agent writes when it revises step `step` in a round. */
export const planLine = (step: number, agent: number, round: number): string => `step ${step}: revised by agent ${agent} in round ${round}`;

const TASK = /^- \[( |x)\] task (\d+)$/;

/** The open tasks of a board, by number. */
export function openTasks(board: string): number[] {
  const open: number[] = [];
  for (const line of board.split("\n")) {
    const m = TASK.exec(line);
    if (m && m[1] === " ") open.push(Number(m[2]));
  }
  return open;
}

/** The board with task `n` ticked (each of its lines, should there be more than one). */
export function tick(board: string, n: number): string {
  return board
    .split("\n")
    .map((line) => (line === `- [ ] task ${n}` ? `- [x] task ${n}` : line))
    .join("\n");
}

/** The plan with step `step`'s line (the first line naming it) replaced. */
export function revisePlan(plan: string, step: number, line: string): string {
  const lines = plan.split("\n");
  const i = lines.findIndex((l) => l.startsWith(`step ${step}: `));
  if (i >= 0) lines[i] = line;
  return lines.join("\n");
}

// ------------------------------------------------------------ resolution --

interface Block {
  local: string[];
  accepted: string[];
}

/**
 * The text's lines with each marker block handed to `resolve` (its two
 * sides) and replaced by the lines it returns. The markers are git's, as
 * the merge writes them: `<<<<<<< local`, `=======`, `>>>>>>> accepted`.
 */
export function replaceBlocks(text: string, resolve: (block: Block) => string[]): string {
  const lines = text.split("\n");
  const out: string[] = [];
  for (let i = 0; i < lines.length; i++) {
    if (!lines[i]!.startsWith("<<<<<<< ")) {
      out.push(lines[i]!);
      continue;
    }
    const block: Block = { local: [], accepted: [] };
    let side: string[] = block.local;
    for (i++; i < lines.length && !lines[i]!.startsWith(">>>>>>> "); i++) {
      if (lines[i] === "=======") side = block.accepted;
      else side.push(lines[i]!);
    }
    if (i >= lines.length) throw new Error("a marker block without its closing line");
    out.push(...resolve(block));
  }
  return out.join("\n");
}

/** Keep both sides of every block, local first. */
export const keepBoth = (text: string): string => replaceBlocks(text, (b) => [...b.local, ...b.accepted]);

/**
 * On the board: both sides' lines once each, in order, a task line once,
 * ticked if either side ticked it.
 */
export function resolveBoard(text: string): string {
  return replaceBlocks(text, (b) => {
    const out: string[] = [];
    const taskAt = new Map<string, number>();
    for (const line of [...b.local, ...b.accepted]) {
      const m = TASK.exec(line);
      if (!m) {
        if (!out.includes(line)) out.push(line);
        continue;
      }
      const at = taskAt.get(m[2]!);
      if (at === undefined) {
        taskAt.set(m[2]!, out.length);
        out.push(line);
      } else if (m[1] === "x") out[at] = line;
    }
    return out;
  });
}

/** The agent's resolution: the board as a board, every other file keeping both sides. */
export const agentResolver: Resolver = (path, text) => (path === BOARD ? resolveBoard(text) : keepBoth(text));

// ------------------------------------------------------------ the check --

export interface Losses {
  /** Appended log lines missing at the end. */
  logMissing: number;
  /** Appended log lines there more than once (each extra copy), and lines nobody appended. */
  logExtra: number;
  /** Agents whose `agents/K.md` is not the last version they wrote. */
  agentsStale: number;
  /** Tasks not on the board exactly once, ticked where no agent ticked them or open where one did, and stray lines. */
  boardWrong: number;
}

export const lostTotal = (l: Losses): number => l.logMissing + l.logExtra + l.agentsStale + l.boardWrong;

/**
 * What the notebook at the end lost against what the agents wrote: every
 * appended log line present exactly once, every agent file at its last
 * version, and the board holding each task exactly once, ticked if and only
 * if some agent ticked it.
 */
export function losses(
  final: { log: string; board: string; agentFile: (agent: number) => string | null },
  wrote: { logLines: string[]; lastNotes: Map<number, string>; ticked: Set<number>; tasks: number },
): Losses {
  const logCounts = new Map<string, number>();
  for (const line of final.log.split("\n")) if (line !== "" && line !== "# log") logCounts.set(line, (logCounts.get(line) ?? 0) + 1);
  let logMissing = 0;
  let logExtra = 0;
  const appended = new Set(wrote.logLines);
  for (const line of appended) {
    const n = logCounts.get(line) ?? 0;
    if (n === 0) logMissing++;
    else logExtra += n - 1;
  }
  for (const [line, n] of logCounts) if (!appended.has(line)) logExtra += n;

  let agentsStale = 0;
  for (const [agent, text] of wrote.lastNotes) if (final.agentFile(agent) !== text) agentsStale++;

  const seen = new Map<number, number>();
  let boardWrong = 0;
  for (const line of final.board.split("\n")) {
    if (line === "" || line === "# tasks") continue;
    const m = TASK.exec(line);
    if (!m) {
      boardWrong++;
      continue;
    }
    const n = Number(m[2]);
    if (n < 1 || n > wrote.tasks) boardWrong++;
    seen.set(n, (seen.get(n) ?? 0) + 1);
    if ((m[1] === "x") !== wrote.ticked.has(n)) boardWrong++;
  }
  for (let n = 1; n <= wrote.tasks; n++) boardWrong += Math.abs((seen.get(n) ?? 0) - 1);
  return { logMissing, logExtra, agentsStale, boardWrong };
}
