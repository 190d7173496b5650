/**
 * init: a new team starts with the layout that does not conflict
 * (docs/teams.md). It publishes the recommended `.gitattributes` and
 * `.gitignore`, and an `AGENTS.md` telling agents the layout, into a
 * notebook that lacks them, in one commit of the operator's; it never
 * overwrites one that exists.
 *
 * It publishes only its own files, on the accepted state: through a
 * checkout of its own in a scratch directory (pull, add what is missing,
 * commit), which it removes after. No other checkout's local edits can
 * ride along. Another writer adding one of the same files meanwhile makes
 * its commit conflict; it then starts again from what was accepted.
 */
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { DomainError } from "../contract/errors.ts";
import { commit } from "./commit.ts";
import { forgetCheckoutState } from "./checkout/registry.ts";
import { discardIfUnchanged } from "./discard-unchanged.ts";
import type { EngineDeps } from "./engine.ts";
import { pull } from "./pull.ts";

/** The files init publishes, in the order it names them, with their text. */
export const LAYOUT_FILES: ReadonlyArray<{ path: string; text: string }> = [
  {
    path: ".gitattributes",
    text: `# How slivingdoc merges each file when two agents changed it (docs/teams.md).
# Shared logs: keep every side's lines.
shared/log.md  merge=union
*.log.md       merge=union
# Boards, lists and tables whose lines stand alone; a plan kept as one step a line.
shared/tasks.md merge=lines
shared/plan.md  merge=lines
`,
  },
  {
    path: ".gitignore",
    text: `# What no agent means to share: never published.
# scratch space no one else should see
tmp/
*.scratch
`,
  },
  {
    path: "AGENTS.md",
    text: `# This notebook

Several agents share this notebook. Pull before you start, commit when you
are done, and lay out what you write so that it merges without a conflict:

- **Your own notes** go in a file of your own, \`agents/<your name>.md\`.
  Nobody else changes it.
- **Shared logs** (\`shared/log.md\`, any \`*.log.md\`) take appends only: add
  lines at the end, never rewrite or reorder earlier ones.
- **Boards and lists** (\`shared/tasks.md\`, \`shared/plan.md\`) keep one item
  per line: change only the lines you mean to change.
- **Scratch work** goes under \`tmp/\` or in \`*.scratch\` files: never published.

A conflict that still happens needs a decision: read both sides, keep what
is true now, then commit again.
`,
  },
];

/** The commit message of init's publication: the team layout, naming the files it adds. */
export function initMessage(paths: readonly string[]): string {
  return `init: the team layout (${paths.join(", ")})`;
}

/** How often init starts again when another writer's publication of the same files made its commit conflict. */
const ATTEMPTS = 3;

export interface InitInput {
  /** Where init may make its scratch checkout: a directory outside every checkout and the private root. */
  scratchParent: string;
}

export interface InitResult {
  /** The notebook's generation after init: its publication's, or the accepted one when there was nothing to add. */
  generation: number;
  /** The files init published, in LAYOUT_FILES order. */
  published: string[];
  /** The files the notebook already had, left as they are. */
  left: string[];
}

export async function initNotebook(deps: EngineDeps, input: InitInput): Promise<InitResult> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await publishMissing(deps, input.scratchParent);
    } catch (e) {
      // Another writer published one of the same files first: start again from what it accepted.
      if (attempt < ATTEMPTS && e instanceof DomainError && e.reason === "MERGE_CONFLICT") continue;
      throw e;
    }
  }
}

async function publishMissing(deps: EngineDeps, scratchParent: string): Promise<InitResult> {
  const scratch = mkdtempSync(join(scratchParent, "slivingdoc-init-"));
  let dir: string | null = null;
  try {
    const pulled = await pull(deps, { path: scratch });
    dir = pulled.path;
    const left = LAYOUT_FILES.filter((f) => existsSync(join(pulled.path, f.path))).map((f) => f.path);
    const missing = LAYOUT_FILES.filter((f) => !left.includes(f.path));
    if (missing.length === 0) return { generation: pulled.generation, published: [], left };
    for (const f of missing) writeFileSync(join(pulled.path, f.path), f.text);
    const committed = await commit(deps, { path: pulled.path, message: initMessage(missing.map((f) => f.path)) });
    return { generation: committed.generation, published: missing.map((f) => f.path), left };
  } finally {
    // Every file in the scratch checkout is init's own: it goes with its private state, landed or not.
    if (dir !== null && !(await discardIfUnchanged(deps, dir).catch(() => false))) forgetCheckoutState(deps.privateRoot, deps.storeId, dir, deps.randomId);
    rmSync(scratch, { recursive: true, force: true });
  }
}
