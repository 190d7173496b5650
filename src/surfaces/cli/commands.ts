/**
 * The CLI (docs/design.md, Names and entry points; CLI conventions): `pull
 * [PATH]`, `commit -m MSG [PATH]`, with the configuration flags of
 * docs/cli.md. citty defines the commands and renders help; parsing is strict
 * and ours, because citty passes unknown flags through and a silently ignored
 * `--mesage` would be a misplaced write.
 */
import { type ArgsDef, type CommandDef, defineCommand, renderUsage } from "citty";
import { DomainError } from "../../contract/errors.ts";
import { errorEnvelope, newDiagnosticId } from "../../contract/results.ts";
import { scrubText } from "../../contract/scrub.ts";
import { StartupRefusal } from "../../contract/startup.ts";
import { EXIT_CODES, exitCodeFor } from "../../contract/tokens.ts";
import { createLog, type Log, SILENT_LOG } from "../log.ts";
import type { ObjectStore } from "../../store/object-store.ts";
import { type ConfigFlags, type Env, engineDeps, flushProcessMemory, openVerifiedStore, type RuntimeConfig, resolveConfig, runtimeSecrets } from "../runtime.ts";
import type { TextSink } from "../stdio.ts";
import { escapeControls } from "./quote.ts";
import { isUtf8 } from "./raw-argv.ts";
import { renderError, renderSuccess } from "./render.ts";

// The engine, the MCP server and gc are imported where a command needs them,
// not here: every start would otherwise load all of them (docs/performance.md, S8).

export interface CliIo {
  argv: string[];
  /**
   * The bytes of `argv`, entry for entry, or null where the system does not
   * show them (raw-argv.ts): how a message of invalid UTF-8 is told from
   * one holding a real U+FFFD. Read only when a message holds U+FFFD.
   */
  rawArgv?: () => Uint8Array[] | null;
  /** The MCP protocol's input and output, for `serve`. */
  protocol?: () => { input: ReadableStream<Uint8Array>; output: TextSink };
  /** Read only when needed: finding out loads node:tty. */
  stderrIsTTY?: boolean;
  env: Env;
  cwd: string;
  stdout: (text: string) => void;
  stderr: (text: string) => void;
  version: string;
  /** Colours in help only on a terminal: escape codes would litter a pipe or a file. */
  stdoutIsTTY?: boolean;
}

const ANSI = new RegExp(`${String.fromCharCode(27)}\\[[0-9;]*m`, "g");

const configArgs = {
  store: { type: "string", description: "Store URL: s3://BUCKET[/PREFIX] or sqlite:PATH (env SLIVINGDOC_STORE; default: the embedded store)", valueHint: "URL" },
  region: { type: "string", description: "S3 region (env S3_REGION, then the AWS SDK's own)" },
  endpoint: { type: "string", description: "S3 endpoint URL (env AWS_ENDPOINT_URL_S3, AWS_ENDPOINT_URL)", valueHint: "URL" },
  "force-path-style": { type: "boolean", description: "S3 path-style addressing (env S3_FORCE_PATH_STYLE=1)" },
  "workspace-root": { type: "string", description: "Only act at or below this directory (env SLIVINGDOC_WORKSPACE_ROOT)", valueHint: "DIR" },
  "private-root": { type: "string", description: "Where per-checkout state lives (env SLIVINGDOC_PRIVATE_ROOT)", valueHint: "DIR" },
  "commit-retries": { type: "string", description: "Attempts after a lost race before REMOTE_BUSY (env SLIVINGDOC_COMMIT_RETRIES; default 30)", valueHint: "N" },
  "read-only-paths": { type: "string", description: "Comma-separated notebook paths this process may not change (env SLIVINGDOC_READ_ONLY_PATHS)", valueHint: "a,b" },
  "writable-paths": { type: "string", description: "Comma-separated notebook paths this process may change; everything else is protected (env SLIVINGDOC_WRITABLE_PATHS)", valueHint: "a,b" },
  json: { type: "boolean", description: "Print the structured result (success or error) as JSON on stdout" },
} as const satisfies ArgsDef;

const pathArg = { type: "positional", required: false, description: "The notebook directory (default: the current directory)", valueHint: "PATH" } as const;

export const pullCommand = defineCommand({
  meta: { name: "pull", description: "Write the accepted notebook into PATH, merging your unpublished edits" },
  args: { ...configArgs, path: pathArg },
});

export const commitCommand = defineCommand({
  meta: { name: "commit", description: "Publish the changes in PATH and incorporate concurrent changes" },
  args: {
    message: { type: "string", alias: "m", required: true, description: "The commit message (non-blank UTF-8, at most 16,384 bytes)", valueHint: "MSG" },
    ...configArgs,
    path: pathArg,
  },
});

const { json: _json, ...serveArgs } = configArgs;

export const serveCommand = defineCommand({
  meta: { name: "serve", description: "Run the MCP server over stdio, with the tools notes_pull and notes_commit" },
  args: serveArgs,
});

export const gcCommand = defineCommand({
  meta: { name: "gc", description: "Remove packs no manifest references, older than a grace period (maintenance)" },
  args: {
    grace: { type: "string", description: "Keep unreferenced packs younger than this: 90s, 30m, 1h, 2d (default 1h)", valueHint: "DURATION" },
    "dry-run": { type: "boolean", description: "Report what would be removed; change nothing" },
    ...configArgs,
  },
});

const subCommands: Record<string, CommandDef<ArgsDef>> = {
  serve: serveCommand as CommandDef<ArgsDef>,
  pull: pullCommand as CommandDef<ArgsDef>,
  commit: commitCommand as CommandDef<ArgsDef>,
  gc: gcCommand as CommandDef<ArgsDef>,
};

export function rootCommand(version: string): CommandDef<ArgsDef> {
  return defineCommand({
    meta: { name: "slivingdoc", version, description: "A shared notebook of UTF-8 text files for AI agents: pull, edit, commit." },
    subCommands,
  }) as CommandDef<ArgsDef>;
}

type Parsed = {
  flags: Record<string, string | boolean>;
  positionals: string[];
  /** Where each flag's value came from: the argument's index, and the value's byte offset in it (`--message=…`). */
  sources: Record<string, { index: number; offset: number }>;
};

/** Strict parsing against the citty definitions: unknown flags and extra positionals are refused by name. */
export function parseStrict(args: ArgsDef, argv: string[]): Parsed {
  const byName = new Map<string, [string, ArgsDef[string]]>();
  for (const [name, def] of Object.entries(args)) {
    if (def.type === "positional") continue;
    byName.set(name, [name, def]);
    const alias = "alias" in def ? def.alias : undefined;
    for (const a of alias === undefined ? [] : Array.isArray(alias) ? alias : [alias]) byName.set(a, [name, def]);
  }
  const flags: Record<string, string | boolean> = {};
  const positionals: string[] = [];
  const sources: Parsed["sources"] = {};
  for (let i = 0; i < argv.length; i++) {
    const token = argv[i]!;
    if (token === "--") {
      positionals.push(...argv.slice(i + 1));
      break;
    }
    if (!token.startsWith("-") || token === "-") {
      positionals.push(token);
      continue;
    }
    const eq = token.indexOf("=");
    const raw = token.replace(/^--?/, "");
    const key = eq >= 0 ? raw.slice(0, raw.indexOf("=")) : raw;
    let entry = byName.get(key);
    let negated = false;
    if (!entry && key.startsWith("no-")) {
      entry = byName.get(key.slice(3));
      negated = entry?.[1].type === "boolean";
      if (!negated) entry = undefined;
    }
    if (!entry) throw new StartupRefusal("argument refusal", `unknown option ${token.slice(0, eq >= 0 ? eq : undefined)}`);
    const [name, def] = entry;
    if (def.type === "boolean") {
      if (eq >= 0) throw new StartupRefusal("argument refusal", `option --${name} takes no value`);
      flags[name] = !negated;
    } else {
      let value: string | undefined;
      if (eq >= 0) {
        value = token.slice(eq + 1);
        // The flag before "=" is one of ours, so ASCII: its length in bytes is eq.
        sources[name] = { index: i, offset: eq + 1 };
      } else {
        value = argv[i + 1];
        i++;
        sources[name] = { index: i, offset: 0 };
      }
      if (value === undefined) throw new StartupRefusal("argument refusal", `option --${name} needs a value`);
      if (name in flags) throw new StartupRefusal("argument refusal", `option --${name} given twice`);
      flags[name] = value;
    }
  }
  return { flags, positionals, sources };
}

/**
 * Whether a commit message given on the command line reached us byte for
 * byte. The runtime decoded the argument already, turning bytes that are
 * not UTF-8 into U+FFFD; the raw command line tells them from a real U+FFFD.
 * Where it cannot be read, a message holding U+FFFD is refused: storing it
 * could change what the user typed (docs/cli.md).
 */
function messageRefusal(parsed: Parsed, io: CliIo): DomainError | null {
  const message = parsed.flags.message;
  const source = parsed.sources.message;
  if (typeof message !== "string" || !message.includes("\uFFFD") || source === undefined) return null;
  const raw = io.rawArgv?.() ?? null;
  // The parsed arguments follow the command name: io.argv[0].
  const bytes = raw?.[source.index + 1];
  if (bytes === undefined) {
    return new DomainError(
      "MESSAGE_INVALID",
      "The commit message holds U+FFFD, which this system cannot tell apart from bytes that are not UTF-8; send the message without it.",
    );
  }
  if (isUtf8(bytes.subarray(source.offset))) return null;
  return new DomainError("MESSAGE_INVALID", "The commit message must be valid UTF-8 without the NUL character; it holds bytes that are not UTF-8.");
}

function help(text: string, io: CliIo): string {
  return `${io.stdoutIsTTY ? text : text.replace(ANSI, "")}\n`;
}

/** Run the CLI; returns the exit code. Only main.ts exits the process. */
export async function runCli(io: CliIo): Promise<number> {
  const root = rootCommand(io.version);
  const [first, ...rest] = io.argv;
  if (first === undefined || first === "--help" || first === "-h" || first === "help") {
    io.stdout(help(await renderUsage(root), io));
    return first === undefined ? EXIT_CODES.STARTUP : EXIT_CODES.OK;
  }
  if (first === "--version" || first === "-v") {
    io.stdout(`${io.version}\n`);
    return EXIT_CODES.OK;
  }
  const command = subCommands[first];
  if (!command) {
    io.stderr(`slivingdoc: argument refusal: unknown command "${escapeControls(first)}"; the commands are ${Object.keys(subCommands).join(", ")}\n`);
    return EXIT_CODES.STARTUP;
  }
  if (rest.includes("--help") || rest.includes("-h")) {
    io.stdout(help(await renderUsage(command, root), io));
    return EXIT_CODES.OK;
  }
  const args = (command.args ?? {}) as ArgsDef;
  let parsed: Parsed;
  try {
    parsed = parseStrict(args, rest);
    if (parsed.positionals.length > 1) {
      throw new StartupRefusal("argument refusal", `one notebook path at most; got ${parsed.positionals.length}: ${parsed.positionals.join(" ")}`);
    }
    if (first === "commit" && typeof parsed.flags.message !== "string") {
      throw new StartupRefusal("argument refusal", "commit needs a message: commit -m MSG [PATH]");
    }
  } catch (e) {
    if (!(e instanceof StartupRefusal)) throw e;
    io.stderr(`${escapeControls(e.diagnostic(runtimeSecrets(io.env)))}\n`);
    return EXIT_CODES.STARTUP;
  }
  if (first === "serve") return runServe(parsed, io);
  if (first === "gc") return runGc(parsed, io);
  return execute(first as "pull" | "commit", parsed, io);
}

/**
 * Progress of long work (a cold pull of a large notebook) on a terminal only
 * (docs/design.md, CLI conventions): never in --json output, a pipe, or over
 * MCP.
 */
function terminalProgress(io: CliIo): { hooks: { afterWrite?: () => void }; done: () => void } {
  if (io.stderrIsTTY !== true) return { hooks: {}, done: () => {} };
  let written = 0;
  let shown = false;
  return {
    hooks: {
      afterWrite: () => {
        written++;
        if (written % 200 === 0) {
          io.stderr(`\r${written} files written…`);
          shown = true;
        }
      },
    },
    done: () => {
      if (shown) io.stderr("\r\x1b[K");
    },
  };
}

const DURATION = /^(\d+)(ms|s|m|h|d)?$/;
const UNIT_MS: Record<string, number> = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 };

async function runGc(parsed: Parsed, io: CliIo): Promise<number> {
  const grace = parsed.flags.grace;
  const match = typeof grace === "string" ? DURATION.exec(grace) : null;
  if (parsed.positionals.length > 0 || (grace !== undefined && match === null)) {
    const why = parsed.positionals.length > 0 ? `gc takes no path; got ${parsed.positionals.join(" ")}` : "--grace must be a duration such as 90s, 30m, 1h or 2d";
    io.stderr(`${escapeControls(new StartupRefusal(parsed.positionals.length > 0 ? "argument refusal" : "invalid configuration", why).diagnostic())}\n`);
    return EXIT_CODES.STARTUP;
  }
  const { collectGarbage, DEFAULT_GRACE_MS } = await import("../../engine/gc.ts");
  const graceMs = match ? Number(match[1]) * UNIT_MS[match[2] ?? "s"]! : DEFAULT_GRACE_MS;
  const started = await startUp(parsed, io);
  if (typeof started === "number") return started;
  const { config, store } = started;
  try {
    const report = await collectGarbage({ store, graceMs, dryRun: parsed.flags["dry-run"] === true });
    // Counts, not keys: no S3 key appears in any output (the log of a server has them if needed).
    const summary = {
      generation: report.generation,
      referenced: report.referenced,
      deleted: report.deleted.length,
      young: report.young.length,
      dryRun: parsed.flags["dry-run"] === true,
      ...(report.reason !== undefined ? { reason: report.reason } : {}),
    };
    if (parsed.flags.json === true) io.stdout(`${JSON.stringify(summary, null, 2)}\n`);
    const verb = parsed.flags["dry-run"] === true ? "would remove" : "removed";
    io.stderr(
      report.generation === null
        ? "gc: the store holds no notebook; nothing to do\n"
        : `gc: generation ${report.generation}, ${report.referenced} packs referenced; ${verb} ${report.deleted.length} unreferenced packs, kept ${report.young.length} younger than the grace period${report.reason === "busy" ? " (publications kept winning; run again)" : ""}\n`,
    );
    return EXIT_CODES.OK;
  } catch (e) {
    if (!(e instanceof DomainError)) throw e;
    const envelope = errorEnvelope(e, newDiagnosticId(), config.pathSets, [config.privateRoot, ...runtimeSecrets(io.env)]);
    if (parsed.flags.json === true) io.stdout(`${JSON.stringify(envelope, null, 2)}\n`);
    io.stderr(renderError(envelope));
    return exitCodeFor(envelope.code);
  } finally {
    await store.close();
  }
}

/** Configuration and a verified store, or the start-up refusal printed and its exit code. */
async function startUp(parsed: Parsed, io: CliIo): Promise<{ config: RuntimeConfig; store: ObjectStore } | number> {
  try {
    const config = resolveConfig(parsed.flags as ConfigFlags, io.env, io.cwd);
    return { config, store: await openVerifiedStore(config) };
  } catch (e) {
    if (!(e instanceof StartupRefusal)) throw e;
    io.stderr(`${escapeControls(e.diagnostic(runtimeSecrets(io.env)))}\n`);
    return EXIT_CODES.STARTUP;
  }
}

async function runServe(parsed: Parsed, io: CliIo): Promise<number> {
  if (parsed.positionals.length > 0) {
    io.stderr(`${escapeControls(new StartupRefusal("argument refusal", `serve takes no path; got ${parsed.positionals.join(" ")}`).diagnostic())}\n`);
    return EXIT_CODES.STARTUP;
  }
  if (!io.protocol) throw new Error("serve needs the process's stdio");
  const started = await startUp(parsed, io);
  if (typeof started === "number") return started;
  const { config, store } = started;
  // isTTY is read at the first record, after the handshake (it loads node:tty).
  const log = createLog({ write: io.stderr, get isTTY() { return io.stderrIsTTY === true; } }, runtimeSecrets(io.env));
  const { serve } = await import("../mcp/serve.ts");
  try {
    await serve({ config, store, version: io.version, log, env: io.env, ...io.protocol() });
  } finally {
    await store.close();
    // As in execute(): the server's calls kept some state in memory only.
    flushProcessMemory();
  }
  return EXIT_CODES.OK;
}

/**
 * The CLI prints its own human output; of the log records it shows only the
 * operator's cause of an unclassified failure, which the envelope never
 * carries (its diagnosticId is printed with it).
 */
function causeLog(io: CliIo): Log {
  return {
    ...SILENT_LOG,
    info(msg, fields) {
      const outcome = String(fields?.outcome ?? "");
      if (fields?.cause !== undefined && /INTERNAL|ENGINE_FAILED/.test(outcome)) {
        io.stderr(`${escapeControls(scrubText(`cause (${String(fields.mcpReqID)}): ${String(fields.cause)}`, runtimeSecrets(io.env)))}\n`);
      }
    },
  };
}

async function execute(operation: "pull" | "commit", parsed: Parsed, io: CliIo): Promise<number> {
  const json = parsed.flags.json === true;
  const started = await startUp(parsed, io);
  if (typeof started === "number") return started;
  const { config, store } = started;
  const refused = operation === "commit" ? messageRefusal(parsed, io) : null;
  if (refused !== null) {
    await store.close();
    const envelope = errorEnvelope(refused, newDiagnosticId(), config.pathSets);
    if (json) io.stdout(`${JSON.stringify(envelope, null, 2)}\n`);
    io.stderr(renderError(envelope));
    return exitCodeFor(envelope.code);
  }
  const progress = terminalProgress(io);
  const { runOperation } = await import("../operation.ts");
  try {
    const args: Record<string, string> = {};
    if (parsed.positionals[0] !== undefined) args.path = parsed.positionals[0];
    if (operation === "commit") args.message = parsed.flags.message as string;
    const outcome = await runOperation(
      {
        deps: { ...engineDeps(config, store), ...progress.hooks },
        sets: config.pathSets,
        paths: { defaultDir: io.cwd, cwd: io.cwd, home: io.env.HOME ?? "", workspaceRoot: config.workspaceRoot },
        log: causeLog(io),
        secrets: [config.privateRoot, ...runtimeSecrets(io.env)],
        requireAbsolute: false,
      },
      operation === "pull" ? "notes_pull" : "notes_commit",
      args,
    );
    progress.done();
    if (outcome.ok) {
      if (json) io.stdout(`${JSON.stringify(outcome.result, null, 2)}\n`);
      io.stderr(renderSuccess(operation, outcome.result));
      return EXIT_CODES.OK;
    }
    if (json) io.stdout(`${JSON.stringify(outcome.envelope, null, 2)}\n`);
    io.stderr(renderError(outcome.envelope));
    return exitCodeFor(outcome.envelope.code);
  } finally {
    await store.close();
    // This process ends here: what the engine kept in memory goes to disk for the next one.
    flushProcessMemory();
  }
}
