/**
 * The commands as citty defines them, for help and for the strict parser
 * (arguments.ts): `serve`, and one command per entry of the operations
 * registry (operations.ts), each with its own flags, the configuration
 * flags of docs/cli.md, `--json`, and a notebook PATH when it takes one.
 */
import { type ArgsDef, type CommandDef, defineCommand } from "citty";
import { OPERATIONS } from "../operations.ts";
import type { Operation } from "../operation.ts";
import { DEFAULT_STORE_KIND, STORE_KINDS, storeUsages } from "../stores.ts";

/** The configuration flags every command takes (docs/cli.md, Options): the store's, each kind's settings, then the rest. */
const CONFIG_FLAGS: ArgsDef = {
  store: { type: "string", description: `Store URL: ${storeUsages()} (env SLIVINGDOC_STORE; default: the ${DEFAULT_STORE_KIND.label} store)`, valueHint: "URL" },
  ...Object.assign({}, ...STORE_KINDS.map((kind) => kind.flags ?? {})),
  "workspace-root": { type: "string", description: "Only act at or below this directory (env SLIVINGDOC_WORKSPACE_ROOT)", valueHint: "DIR" },
  "private-root": { type: "string", description: "Where per-checkout state lives (env SLIVINGDOC_PRIVATE_ROOT)", valueHint: "DIR" },
  "commit-retries": { type: "string", description: "Attempts after a lost race before REMOTE_BUSY (env SLIVINGDOC_COMMIT_RETRIES; default 30)", valueHint: "N" },
  "read-only-paths": { type: "string", description: "Comma-separated notebook paths this process may not change (env SLIVINGDOC_READ_ONLY_PATHS)", valueHint: "a,b" },
  "writable-paths": { type: "string", description: "Comma-separated notebook paths this process may change; everything else is protected (env SLIVINGDOC_WRITABLE_PATHS)", valueHint: "a,b" },
  "history-period": { type: "string", description: "Keep history at least this long when compacting: 30d, 12h; 0 keeps only the newest 32 commits (env SLIVINGDOC_HISTORY_PERIOD; default 30d)", valueHint: "DURATION" },
  deadline: { type: "string", description: "How long a call may take, its wait for the checkout's lock and every store request included: 30s, 5m (env SLIVINGDOC_DEADLINE; default 60s)", valueHint: "DURATION" },
  agent: { type: "string", description: "Who publishes, recorded on every commit (env SLIVINGDOC_AGENT; default: user@host, and for serve the MCP client's name and version too)", valueHint: "NAME" },
};

const JSON_FLAG = { json: { type: "boolean", description: "Print the structured result (success or error) as JSON on stdout" } } as const satisfies ArgsDef;

const PATH_ARG = { type: "positional", required: false, description: "The notebook directory (default: the current directory)", valueHint: "PATH" } as const;

const PATHS_ARG = {
  type: "positional",
  required: false,
  description: "Notebook paths (files or directories, relative to the notebook directory; default: the whole notebook)",
  valueHint: "PATH…",
} as const;

/** An operation's command: its own flags first, then the configuration flags, `--json`, and PATH. */
function operationCommand(op: Operation): CommandDef<ArgsDef> {
  const own: ArgsDef = {};
  for (const [name, flag] of Object.entries(op.cli.flags)) {
    const { exactBytes: _exact, ...def } = flag;
    own[name] = def as ArgsDef[string];
  }
  return defineCommand({
    meta: { name: op.cli.name, description: op.cli.summary },
    args: {
      ...own,
      ...CONFIG_FLAGS,
      ...JSON_FLAG,
      ...(op.cli.path === true ? { path: PATH_ARG } : op.cli.path === "paths" ? { paths: PATHS_ARG } : {}),
      ...(op.cli.positional
        ? { [op.cli.positional.name.toLowerCase()]: { type: "positional", required: op.cli.positional.required, description: op.cli.positional.description, valueHint: op.cli.positional.name } }
        : {}),
    } as ArgsDef,
  }) as CommandDef<ArgsDef>;
}

export const serveCommand = defineCommand({
  meta: { name: "serve", description: "Run the MCP server over stdio, with the tools notes_pull and notes_commit" },
  args: {
    ...CONFIG_FLAGS,
    adopt: {
      type: "boolean",
      description: "Publish the files already in --workspace-root, a directory that was never a checkout, with the agent's commits (refused without it when none is in the notebook)",
    },
  },
}) as CommandDef<ArgsDef>;

/** Every command by name: `serve`, then the registry's operations in its order. */
export const subCommands: Record<string, CommandDef<ArgsDef>> = {
  serve: serveCommand,
  ...Object.fromEntries(OPERATIONS.map((op) => [op.cli.name, operationCommand(op)])),
};

export function rootCommand(version: string): CommandDef<ArgsDef> {
  return defineCommand({
    meta: { name: "slivingdoc", version, description: "A shared notebook of UTF-8 text files for AI agents: pull, edit, commit." },
    subCommands,
  }) as CommandDef<ArgsDef>;
}
