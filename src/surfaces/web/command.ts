/**
 * The `slivingdoc web` command once its store is open (cli/run.ts runWeb):
 * its flags, the server started on its port, the one line that gives the
 * URL with its token (the only place the token is ever written), and a
 * clean stop on SIGINT or SIGTERM. Loaded only for `web`.
 */
import { DomainError } from "../../contract/errors.ts";
import { type ErrorEnvelope, errorEnvelope, newDiagnosticId } from "../../contract/results.ts";
import { scrubCredentials } from "../../contract/scrub.ts";
import { StartupRefusal } from "../../contract/startup.ts";
import type { ObjectStore } from "../../store/object-store.ts";
import type { RuntimeConfig } from "../config.ts";
import { parseDuration } from "../duration.ts";
import { engineDeps, type ProcessMemoryHolder } from "../engine-deps.ts";
import { isLoopback, newToken } from "./security.ts";
import { startWeb } from "./server.ts";
import { readOnlyView } from "./store-view.ts";

/** The port `web` takes when not told (docs/cli.md). */
export const DEFAULT_PORT = 7878;
const DEFAULT_POLL_MS = 2_000;
/** Below this a poll would cost the store more than it tells a person watching. */
const MIN_POLL_MS = 100;
const DEFAULT_LISTEN = "127.0.0.1";

export interface WebSettings {
  port: number;
  listen: string | null;
  pollMs: number;
  json: boolean;
}

/** The command's own flags; a start-up refusal for one it cannot take. */
export function webSettings(flags: Record<string, string | boolean>): WebSettings {
  let port = DEFAULT_PORT;
  if (typeof flags.port === "string") {
    if (!/^[0-9]{1,5}$/.test(flags.port) || Number(flags.port) > 65_535) {
      throw new StartupRefusal("argument refusal", `--port must be a port number from 0 to 65535 (0: a free one); got ${flags.port.slice(0, 40)}`);
    }
    port = Number(flags.port);
  }
  let pollMs = DEFAULT_POLL_MS;
  if (typeof flags.poll === "string") {
    pollMs = parseDuration("poll", flags.poll);
    if (pollMs < MIN_POLL_MS) throw new StartupRefusal("invalid configuration", `--poll must be at least ${MIN_POLL_MS}ms; got ${flags.poll.slice(0, 40)}`);
  }
  const listen = typeof flags.listen === "string" ? flags.listen.replace(/^\[(.*)\]$/, "$1") : null;
  if (listen === "") throw new StartupRefusal("argument refusal", "--listen needs an address, such as 127.0.0.1");
  return { port, listen, pollMs, json: flags.json === true };
}

export interface WebRun {
  config: RuntimeConfig;
  store: ObjectStore;
  /** Whether the store's local file does not exist (then nothing is opened, or made). */
  absent: () => boolean;
  memory: ProcessMemoryHolder;
  settings: WebSettings;
  secrets: readonly string[];
  stdout: (text: string) => void;
  stdoutWritten?: () => Promise<void>;
  stderr: (text: string) => void;
}

/** The envelope of a failure for an answer or the state, as the CLI's are built; an unexpected one's cause goes to stderr with its diagnostic id. */
function envelopes(run: WebRun): (error: unknown) => ErrorEnvelope {
  return (error) => {
    const id = newDiagnosticId();
    const known = error instanceof DomainError ? error : new DomainError("INTERNAL", "An unexpected error occurred; the server log has the cause under this diagnosticId.", { cause: error });
    if (!(error instanceof DomainError)) run.stderr(`slivingdoc web: cause (${id}): ${scrubCredentials(String(error), run.secrets)}\n`);
    return errorEnvelope(known, id, run.config.pathSets, { credentials: run.secrets, privatePaths: [run.config.privateRoot] });
  };
}

/** An address as a URL's host: an IPv6 one in brackets. */
const urlHost = (address: string) => (address.includes(":") ? `[${address}]` : address);

/** Serve until SIGINT or SIGTERM; a busy port is an argument refusal. */
export async function runWeb(run: WebRun): Promise<void> {
  const { settings } = run;
  const address = settings.listen ?? DEFAULT_LISTEN;
  if (!isLoopback(address)) {
    run.stderr(
      `slivingdoc web: warning: --listen ${address} is not a loopback address: any machine that reaches it can ask for the notebook's history, and only the token keeps it out. To read the page from another machine, use an SSH tunnel instead (docs/web.md).\n`,
    );
  }
  const token = newToken();
  const deps = engineDeps(run.config, readOnlyView(run.store, run.absent), run.memory.get());
  const server = await startWeb({
    deps,
    deadlineMs: run.config.deadlineMs,
    pollMs: settings.pollMs,
    port: settings.port,
    hostname: address,
    listen: settings.listen,
    token,
    envelope: envelopes(run),
  }).catch((e: unknown): never => {
    if ((e as { code?: unknown } | null)?.code === "EADDRINUSE") {
      throw new StartupRefusal("argument refusal", `port ${settings.port} of ${address} is in use; pass another --port (--port 0 takes a free one)`);
    }
    throw e;
  });
  const url = `http://${urlHost(address)}:${server.port}/?token=${token}`;
  run.stdout(settings.json ? `${JSON.stringify({ url, port: server.port })}\n` : `slivingdoc web: open ${url}\n`);
  await run.stdoutWritten?.();
  await stopRequested();
  await server.stop();
}

/** Resolves at the first SIGINT or SIGTERM, which then no longer end the process at once. */
function stopRequested(): Promise<void> {
  return new Promise((resolve) => {
    const stop = () => {
      process.off("SIGINT", stop);
      process.off("SIGTERM", stop);
      resolve();
    };
    process.on("SIGINT", stop);
    process.on("SIGTERM", stop);
  });
}
