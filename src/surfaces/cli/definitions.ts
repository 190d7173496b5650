/**
 * The commands' arguments, for the strict parser (arguments.ts) and for
 * help: `serve`, and one command per entry of the operations registry
 * (operations.ts), each with its own flags, `--json`, a notebook PATH when
 * it takes one, and then the store and process settings every command
 * shares (docs/cli.md, Options).
 *
 * Help, its wrapping and the suggestion for a mistyped command are
 * commander's (help.ts), loaded only when asked for: a start that runs a
 * command never loads it.
 */
import { OPERATIONS } from "../operations.ts";
import type { CliFlag, Operation } from "../operation.ts";
import { DEFAULT_STORE_KIND, STORE_KINDS, storeUsages } from "../stores.ts";

/** A positional argument: a notebook PATH, PATH…, or an operation's own (GENERATION, DIR). */
export interface PositionalDef {
  type: "positional";
  required: boolean;
  description: string;
  valueHint: string;
}

export type ArgDef = Omit<CliFlag, "exactBytes"> | PositionalDef;
export type ArgsDef = Record<string, ArgDef>;

/** A command: what help says of it, and its arguments in help's order. */
export interface CommandDef {
  name: string;
  description: string;
  /** One example, as help shows it. */
  example: string;
  /** Its own flags, `--json` and its positionals. */
  own: ArgsDef;
  /** Every argument the parser takes: its own, then the shared settings. */
  args: ArgsDef;
}

/** The store's settings, each kind's, then the rest: every command takes them (docs/cli.md, Options). */
export const CONFIG_FLAGS: ArgsDef = {
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

const JSON_FLAG: ArgsDef = { json: { type: "boolean", description: "Print the structured result (success or error) as JSON on stdout" } };

const PATH_ARG: PositionalDef = { type: "positional", required: false, description: "The notebook directory (default: the current directory)", valueHint: "PATH" };

const PATHS_ARG: PositionalDef = {
  type: "positional",
  required: false,
  description: "Notebook paths (files or directories, relative to the notebook directory; default: the whole notebook)",
  valueHint: "PATH…",
};

/** An operation's command: its own flags first, `--json`, its positionals; the shared settings after. */
function operationCommand(op: Operation): CommandDef {
  const own: ArgsDef = {};
  for (const [name, flag] of Object.entries(op.cli.flags)) {
    const { exactBytes: _exact, ...def } = flag;
    own[name] = def;
  }
  Object.assign(own, JSON_FLAG);
  if (op.cli.path === true) own.path = PATH_ARG;
  else if (op.cli.path === "paths") own.paths = PATHS_ARG;
  const positional = op.cli.positional;
  if (positional) own[positional.name.toLowerCase()] = { type: "positional", required: positional.required, description: positional.description, valueHint: positional.name };
  return { name: op.cli.name, description: op.cli.summary, example: op.cli.example, own, args: { ...own, ...CONFIG_FLAGS } };
}

const ADOPT_FLAG: ArgsDef = {
  adopt: {
    type: "boolean",
    description: "Publish the files already in --workspace-root, a directory that was never a checkout, with the agent's commits (refused without it when none is in the notebook)",
  },
};

export const serveCommand: CommandDef = {
  name: "serve",
  description: "Run the MCP server over stdio, with the tools notes_pull and notes_commit",
  example: "slivingdoc serve --workspace-root ~/work --agent planner",
  own: ADOPT_FLAG,
  args: { ...ADOPT_FLAG, ...CONFIG_FLAGS },
};

const WEB_FLAGS: ArgsDef = {
  port: { type: "string", description: "The port to listen on (default 7878; 0 takes a free one)", valueHint: "N" },
  listen: {
    type: "string",
    description: "The address to listen on (default 127.0.0.1); one that is not loopback lets other machines ask, and is warned of: use an SSH tunnel instead",
    valueHint: "ADDR",
  },
  poll: { type: "string", description: "How often to look for a new generation: 2s, 500ms (default 2s)", valueHint: "DURATION" },
  json: { type: "boolean", description: "Print the URL and the port as one JSON line on stdout" },
};

export const webCommand: CommandDef = {
  name: "web",
  description: "Serve a read-only live view of the notebook's history to a browser on this machine, until stopped",
  example: "slivingdoc web --port 7878",
  own: WEB_FLAGS,
  args: { ...WEB_FLAGS, ...CONFIG_FLAGS },
};

/** Every command by name: `serve`, `web`, then the registry's operations in its order. */
export const subCommands: Record<string, CommandDef> = {
  serve: serveCommand,
  web: webCommand,
  ...Object.fromEntries(OPERATIONS.map((op) => [op.cli.name, operationCommand(op)])),
};

export const ROOT_DESCRIPTION = "A shared notebook of UTF-8 text files for AI agents: pull, edit, commit.";
