/**
 * The CLI's dispatch
 * (docs/decisions/0001-two-tools-one-entry-per-operation.md,
 * docs/decisions/0015-the-cli-refuses-what-it-does-not-know.md): help and
 * version, `serve`, and every operation of the registry (operations.ts) —
 * parse strictly, start up, run the operation, and print its human output
 * where the operation says (its answer on stdout, a report or a note on
 * stderr) or, with `--json`, its result object alone on stdout.
 */
import { existsSync } from "node:fs";
import { type ErrorEnvelope, errorEnvelope, newDiagnosticId } from "../../contract/results.ts";
import { scrubCredentials } from "../../contract/scrub.ts";
import { StartupRefusal } from "../../contract/startup.ts";
import { EXIT_CODES, exitCodeFor } from "../../contract/tokens.ts";
import type { EngineDeps } from "../../engine/engine.ts";
import { type Deadline, deadlineIn } from "../../store/deadline.ts";
import type { ObjectStore } from "../../store/object-store.ts";
import { createLog, type Log, SILENT_LOG } from "../log.ts";
import type { Operation } from "../operation.ts";
import { runOperation } from "../run-operation.ts";
import { operationByCli } from "../operations.ts";
import { type ConfigFlags, type Env, type RuntimeConfig, resolveConfig, runtimeSecrets } from "../config.ts";
import { engineDeps, processMemory } from "../engine-deps.ts";
import { DeferredStore } from "../deferred-store.ts";
import { openStore, storeKind } from "../stores.ts";
import { openStoreOrRefuse, openVerifiedStore, refuseNewerStore, type StoreAccess } from "../verified-store.ts";
import type { TextSink } from "../stdio.ts";
import { messageRefusal, type Parsed, parseStrict } from "./arguments.ts";
import { subCommands } from "./definitions.ts";
import { terminalProgress } from "./progress.ts";
import { escapeControls } from "./quote.ts";
import { renderError } from "./render.ts";
import { renderVersion, versionInfo } from "./version.ts";

// The engine and the MCP server are imported where a command needs them,
// not here: every start would otherwise load all of them (docs/performance.md, scenario `start-up`).

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
  /** Resolves once all that `stdout` was given reached the descriptor; rejects with the error of a write that failed. */
  stdoutWritten?: () => Promise<void>;
  version: string;
  /** Colours in help only on a terminal: escape codes would litter a pipe or a file. */
  stdoutIsTTY?: boolean;
  /** The terminal's width, which help is wrapped to; absent when stdout is no terminal (help then takes 80 columns). */
  columns?: number;
}

const ANSI = new RegExp(`${String.fromCharCode(27)}\\[[0-9;]*m`, "g");

function help(text: string, io: CliIo): string {
  return io.stdoutIsTTY ? text : text.replace(ANSI, "");
}

/** What a command did, for the line that says so when its answer could not be written. */
interface Done {
  what?: string | undefined;
}

/** Run the CLI; returns the exit code. Only main.ts exits the process. */
export async function runCli(io: CliIo): Promise<number> {
  const done: Done = {};
  return answerWritten(io, await dispatch(io, done), done);
}

/** Words for a write's failure, by its error code; never the library's own text. */
const WRITE_FAILURES: Record<string, string> = {
  ENOSPC: "no space left on device",
  EDQUOT: "disk quota exceeded",
  EFBIG: "file too large",
  EIO: "input/output error",
  EBADF: "standard output is not open",
};

/**
 * The exit code once stdout took the answer. A reader that went away early
 * (EPIPE: `log | head`) is no failure, as in git. Any other failed write (a
 * full disk, stdout closed) would lose the answer without a word: it is one
 * line on stderr, saying what was done all the same (a commit that landed),
 * and exit 5, retryable, when the command had succeeded — its own failure's
 * code otherwise (docs/cli.md, "Exit codes").
 */
async function answerWritten(io: CliIo, code: number, done: Done): Promise<number> {
  try {
    await io.stdoutWritten?.();
    return code;
  } catch (e) {
    const errno = String((e as NodeJS.ErrnoException | null)?.code ?? "");
    if (errno === "EPIPE") return code;
    const why = WRITE_FAILURES[errno] ?? `the write failed${errno === "" ? "" : ` (${errno})`}`;
    io.stderr(`slivingdoc: could not write the answer: ${why}${done.what === undefined ? "" : `; ${done.what}`}\n`);
    return code === EXIT_CODES.OK ? EXIT_CODES.RETRYABLE : code;
  }
}

async function dispatch(io: CliIo, done: Done): Promise<number> {
  const [first, ...rest] = io.argv;
  const answered = await helpOrVersion(first, rest, io);
  if (answered !== null) return answered;
  const command = subCommands[first!];
  if (!command) {
    const { closestCommand } = await import("./help.ts");
    const closest = closestCommand(first!);
    const hint = closest === null ? "" : ` (did you mean ${closest}?)`;
    io.stderr(`slivingdoc: argument refusal: unknown command "${escapeControls(first!)}"${hint}; the commands are ${Object.keys(subCommands).join(", ")}\n`);
    return EXIT_CODES.STARTUP;
  }
  if (rest.includes("--help") || rest.includes("-h")) {
    const { commandHelp } = await import("./help.ts");
    io.stdout(help(commandHelp(command, io.version, io.columns), io));
    return EXIT_CODES.OK;
  }
  const operation = operationByCli(first!);
  let parsed: Parsed;
  let args: Record<string, unknown> = {};
  try {
    parsed = parseStrict(command.args, rest);
    if (operation !== undefined) args = operationArgs(first!, operation, parsed);
    else if (parsed.positionals.length > 0) throw new StartupRefusal("argument refusal", `${first} takes no path; got ${parsed.positionals.join(" ")}`);
  } catch (e) {
    return refused(e, io);
  }
  if (first === "web") return runWeb(parsed, io);
  if (operation === undefined) return runServe(parsed, io);
  return execute(operation, args, parsed, io, done);
}

/** Help (`slivingdoc`, `help`, `help COMMAND`, `--help`) and `--version`: their exit code, or null for a command. */
async function helpOrVersion(first: string | undefined, rest: string[], io: CliIo): Promise<number | null> {
  if (first === "help" && rest.length === 1 && subCommands[rest[0]!] !== undefined) {
    // `slivingdoc help commit`, as git and commander take it.
    const { commandHelp } = await import("./help.ts");
    io.stdout(help(commandHelp(subCommands[rest[0]!]!, io.version, io.columns), io));
    return EXIT_CODES.OK;
  }
  if (first === undefined || first === "--help" || first === "-h" || first === "help") {
    const { rootHelp } = await import("./help.ts");
    io.stdout(help(rootHelp(io.version, io.columns), io));
    return first === undefined ? EXIT_CODES.STARTUP : EXIT_CODES.OK;
  }
  if (first === "--version" || first === "-v" || first === "-V") {
    const info = versionInfo(io.version);
    if (rest.some((a) => a !== "--json")) {
      io.stderr(`slivingdoc: argument refusal: ${first} takes only --json\n`);
      return EXIT_CODES.STARTUP;
    }
    io.stdout(rest.includes("--json") ? `${JSON.stringify(info)}\n` : renderVersion(info));
    return EXIT_CODES.OK;
  }
  return null;
}

/** An operation's input from its parsed command line; a StartupRefusal for positionals or flags it does not take. */
function operationArgs(name: string, operation: Operation, parsed: Parsed): Record<string, unknown> {
  const { positionals } = parsed;
  const positional = operation.cli.positional;
  if (operation.cli.path === true) {
    if (positionals.length > 1) throw new StartupRefusal("argument refusal", `one notebook path at most; got ${positionals.length}: ${positionals.join(" ")}`);
  } else if (positional !== undefined) {
    if (positionals.length > 1) throw new StartupRefusal("argument refusal", `${name} takes one ${positional.name}; got ${positionals.length}: ${positionals.join(" ")}`);
    if (positional.required && positionals.length === 0) throw new StartupRefusal("argument refusal", `${name} needs a ${positional.name}: ${operation.cli.usage}`);
  } else if (operation.cli.path !== "paths" && positionals.length > 0) {
    // "paths": any number of notebook paths, which the operation's input checks each.
    throw new StartupRefusal("argument refusal", `${name} takes no path; got ${positionals.join(" ")}`);
  }
  for (const [flagName, flag] of Object.entries(operation.cli.flags)) {
    if (flag.required && parsed.flags[flagName] === undefined) {
      throw new StartupRefusal("argument refusal", `${name} needs a ${flagName}: ${operation.cli.usage}`);
    }
  }
  return operation.cli.toInput(parsed.flags, positionals[0], positionals);
}

/**
 * How a command's start opens the store: "offline" without the probe and on
 * first use (Operation.cli.readsStoreOnly), so an unreachable store does not
 * refuse the start — except a store in a local file, which is opened at
 * once; "unprobed" at once and without the probe, which the command runs
 * itself (examinesStore); "read" or "write" proved first (verified-store.ts),
 * credentials that may only read serving "read" (writesNothing).
 */
type Opening = "offline" | "unprobed" | StoreAccess;

function openingOf(cli: Operation["cli"]): Opening {
  if (cli.examinesStore === true) return "unprobed";
  if (cli.readsStoreOnly === true) return "offline";
  return cli.writesNothing === true ? "read" : "write";
}

/** What a command starts with: its configuration, its store, the process's call deadline, and how to drop the probe's record of its credentials. */
interface Started {
  config: RuntimeConfig;
  store: ObjectStore;
  deadline: Deadline;
  forgetProbe(): void;
}

/** Configuration, the store opened as `opening` says, and the process's call deadline; or the start-up refusal printed and its exit code. */
async function startUp(parsed: Parsed, io: CliIo, opening: Opening = "write"): Promise<Started | number> {
  try {
    const config = resolveConfig(parsed.flags as ConfigFlags, io.env, io.cwd);
    // One deadline for the process: its start (the probe) and its call.
    const deadline = deadlineIn(config.deadlineMs);
    // The command probes the store itself (doctor): what the probe finds is its answer.
    if (opening === "unprobed") return { config, store: await openStoreOrRefuse(config.store), deadline, forgetProbe: () => {} };
    if (opening === "offline") {
      // A store in a local file is opened now, as at any start: one that cannot be opened is refused, not taken for out of reach.
      const file = storeKind(config.store).file?.(config.store);
      const store =
        file !== undefined && existsSync(file)
          ? await openStoreOrRefuse(config.store)
          : new DeferredStore(config.store.kind, storeKind(config.store).capabilities, () => openToRead(config.store));
      return { config, store, deadline, forgetProbe: () => {} };
    }
    const { store, forget } = await openVerifiedStore(config, io.env, deadline, Date.now, opening);
    return { config, store, deadline, forgetProbe: forget };
  } catch (e) {
    return refused(e, io);
  }
}

/** A start-up refusal printed as its one line, and its exit code; anything else is not one and goes on up. */
function refused(e: unknown, io: CliIo, secrets: readonly string[] = []): number {
  if (!(e instanceof StartupRefusal)) throw e;
  io.stderr(`${escapeControls(e.diagnostic([...secrets, ...runtimeSecrets(io.env)]))}\n`);
  return EXIT_CODES.STARTUP;
}

/** A store to read only: one in a local file that is gone is out of reach, not made anew (that would write one). */
async function openToRead(spec: RuntimeConfig["store"]): Promise<ObjectStore> {
  const file = storeKind(spec).file?.(spec);
  if (file !== undefined && !existsSync(file)) throw new Error("the store file does not exist");
  return openStore(spec);
}

async function runServe(parsed: Parsed, io: CliIo): Promise<number> {
  const { protocol } = io;
  if (!protocol) throw new Error("serve needs the process's stdio");
  const started = await startUp(parsed, io);
  if (typeof started === "number") return started;
  const { config, store, forgetProbe } = started;
  try {
    // An S3 store opened on first use is checked as it opens, in serve (mcp/serve.ts).
    if (!(store instanceof DeferredStore)) await refuseNewerStore(store);
  } catch (e) {
    await store.close();
    return refused(e, io, [config.privateRoot]);
  }
  // isTTY is read at the first record, after the handshake (it loads node:tty).
  const log = createLog({ write: io.stderr, get isTTY() { return io.stderrIsTTY === true; } }, runtimeSecrets(io.env));
  const { serve } = await import("../mcp/serve.ts");
  // A server answers many calls on its checkouts: it watches them, so a warm
  // call scans only what changed. Only on Linux (inotify), the platform tested.
  // Its commits leave compaction for the time between calls (engine/compact-ahead.ts).
  const memory = processMemory({ watch: process.platform === "linux", compactAhead: true });
  // A refused start may be found after the handshake (a store of a newer format, mcp/serve.ts) or before it (a foreign workspace root).
  return untilEnded(io, { config, store, memory }, () =>
    serve({ config, store, forgetProbe, memory, version: io.version, log, env: io.env, adopt: parsed.flags.adopt === true, ...protocol() }),
  );
}

/**
 * A long-running command (serve, web) from its start to its end: a start
 * refusal found while it runs is printed as one (exit 2); either way the
 * store is closed and, as in execute(), what only the process memory holds
 * is written out.
 */
async function untilEnded(io: CliIo, held: { config: RuntimeConfig; store: ObjectStore; memory: { flush(): void } }, run: () => Promise<void>): Promise<number> {
  try {
    await run();
  } catch (e) {
    return refused(e, io, [held.config.privateRoot]);
  } finally {
    await held.store.close();
    held.memory.flush();
  }
  return EXIT_CODES.OK;
}

/**
 * `slivingdoc web` (docs/web.md): long-running like serve, reading the store
 * as `log` does — opened on first use, a local store file that does not
 * exist neither opened nor made — and refusing at start a store of a newer
 * format, as every command does.
 */
async function runWeb(parsed: Parsed, io: CliIo): Promise<number> {
  const { runWeb: serveWeb, webSettings } = await import("../web/command.ts");
  let settings: ReturnType<typeof webSettings>;
  try {
    settings = webSettings(parsed.flags);
  } catch (e) {
    return refused(e, io);
  }
  const started = await startUp(parsed, io, "offline");
  if (typeof started === "number") return started;
  const { config, store } = started;
  const file = storeKind(config.store).file?.(config.store);
  const absent = () => file !== undefined && !existsSync(file);
  const memory = processMemory();
  return untilEnded(io, { config, store, memory }, async () => {
    if (!absent()) await refuseNewerStore(store);
    await serveWeb({ config, store, absent, memory, settings, secrets: runtimeSecrets(io.env), stdout: io.stdout, stderr: io.stderr, ...(io.stdoutWritten ? { stdoutWritten: io.stdoutWritten } : {}) });
  });
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
        io.stderr(`${escapeControls(scrubCredentials(`cause (${String(fields.mcpReqID)}): ${String(fields.cause)}`, runtimeSecrets(io.env)))}\n`);
      }
    },
  };
}

/** One operation of the registry, from the command line. */
async function execute(operation: Operation, args: Record<string, unknown>, parsed: Parsed, io: CliIo, done: Done): Promise<number> {
  const json = parsed.flags.json === true;
  // init is the first set-up path: it makes the embedded store's directory as --create would.
  const setUp = operation.cli.createsStore === true ? { ...parsed, flags: { ...parsed.flags, create: true } } : parsed;
  const started = await startUp(setUp, io, openingOf(operation.cli));
  if (typeof started === "number") return started;
  const { config, store, deadline, forgetProbe } = started;
  for (const [name, flag] of Object.entries(operation.cli.flags)) {
    const refused = flag.exactBytes ? messageRefusal(parsed, name, io.rawArgv) : null;
    if (refused === null) continue;
    await store.close();
    return failed(errorEnvelope(refused, newDiagnosticId(), config.pathSets), json, io);
  }
  const progress = terminalProgress(io, json);
  // Made only for an operation that runs the engine or reads the private root (generation does not): it makes the private root and loads the engine.
  let deps: EngineDeps | undefined;
  const memory = processMemory();
  try {
    const outcome = await runOperation(
      {
        get deps() {
          return (deps ??= { ...engineDeps(config, store, memory.get()), ...progress.hooks });
        },
        store,
        deadline: () => deadline,
        sets: config.pathSets,
        paths: { defaultDir: io.cwd, cwd: io.cwd, home: io.env.HOME ?? "", workspaceRoot: config.workspaceRoot },
        log: causeLog(io),
        secrets: runtimeSecrets(io.env),
        privatePaths: [config.privateRoot],
        requireAbsolute: false,
        cli: { adopt: parsed.flags.adopt === true },
        ...(config.commitRetries !== undefined ? { commitRetries: config.commitRetries } : {}),
        credentialsRefused: forgetProbe,
      },
      operation,
      args,
    ).catch((e: unknown) => {
      progress.done();
      return refused(e, io, [config.privateRoot]);
    });
    if (typeof outcome === "number") return outcome;
    progress.done();
    if (outcome.ok) return await succeeded(operation, outcome.result, args, json, io, done);
    return failed(outcome.envelope, json, io);
  } finally {
    await store.close();
    // This process ends here: what only its process memory holds goes to disk for the next one.
    memory.flush();
  }
}

/**
 * An operation's success, read by its renderer (found by the operation's
 * name): the text where the renderer says, or under `--json` the result
 * object alone on stdout; the exit code.
 */
async function succeeded(operation: Operation, result: unknown, args: Record<string, unknown>, json: boolean, io: CliIo, done: Done): Promise<number> {
  // Loaded once an operation has run, not at start: help, --version and a refused start need none of it.
  const renderer = (await import("./renderers.ts")).rendererOf(operation.cli.name);
  done.what = renderer.done?.(result);
  if (json) io.stdout(jsonDocument(result));
  else {
    const to = typeof renderer.renderTo === "function" ? renderer.renderTo(result) : renderer.renderTo;
    // A note before the data, so `2>&1 | less` reads like git show.
    io[to](renderer.render(result, args));
    if (renderer.renderStdout) io.stdout(renderer.renderStdout(result));
  }
  return renderer.exitCode?.(result) ?? EXIT_CODES.OK;
}

/** `--json`'s output: exactly one JSON document, and a newline. */
function jsonDocument(value: unknown): string {
  return `${JSON.stringify(value, null, 2)}\n`;
}

/** An operation's failure: its envelope on stdout under `--json`, else in words on stderr; the exit code. */
function failed(envelope: ErrorEnvelope, json: boolean, io: CliIo): number {
  if (json) io.stdout(jsonDocument(envelope));
  else io.stderr(renderError(envelope));
  return exitCodeFor(envelope.code);
}
