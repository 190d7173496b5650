/**
 * `slivingdoc serve`: the MCP server over stdio. Stdout carries only
 * protocol messages; logs go to stderr. The server exits when stdin closes
 * or stdout refuses an answer (the host closed it), so a host that goes
 * away never leaves it orphaned, and on SIGTERM, SIGINT or SIGHUP (`docker
 * stop`, Ctrl-C, a closed terminal): it takes no new call, lets the calls
 * in flight finish and answer, and stops as it
 * does when stdin closes — the process memory written out, "server
 * stopped" logged, its session directory removed when nothing in it is
 * unpublished (session.ts), exit 0.
 *
 * Start-up is short because the MCP SDK, the engine and the tools' code are
 * loaded only after a plain `initialize` has been answered (handshake.ts):
 * a host waits for that answer, not for the first tool call.
 */
import { boundedStore, deadlineIn } from "../../store/deadline.ts";
import { compactAhead, compactionDue } from "../../engine/compact-ahead.ts";
import { FetchAhead } from "../../engine/fetch-ahead.ts";
import type { ObjectStore } from "../../store/object-store.ts";
import type { Log } from "../log.ts";
import { type RuntimeConfig, runtimeSecrets } from "../config.ts";
import { DeferredStore } from "../deferred-store.ts";
import { StartupRefusal } from "../../contract/startup.ts";
import { refuseNewerStore } from "../verified-store.ts";
import { clientAgent } from "../../contract/agent.ts";
import { refuseForeignDirectory } from "../operations/foreign.ts";
import { defaultAgent, engineDeps, preparePrivateRoot, type ProcessMemoryHolder } from "../engine-deps.ts";
import type { OperationContext } from "../operation.ts";
import { storeIdentity, storeKind } from "../stores.ts";
import type { TextSink } from "../stdio.ts";
import { earlyInitializeResponse, serverIdentity } from "./handshake.ts";
import { type NotebookRoot, notebookRoot, removeSession, sweepSessions } from "./session.ts";
import { StdioTransport } from "./stdio.ts";
import { fetchAheadLooks, type FetchAheadLooks } from "./fetch-ahead.ts";

export interface ServeOptions {
  config: RuntimeConfig;
  store: ObjectStore;
  /** Drops the probe's record of the credentials the server runs as (verified-store.ts), once the store refused them. */
  forgetProbe?(): void;
  /** What the process keeps between its calls: its runner's, who writes it out once the server stopped. */
  memory: ProcessMemoryHolder;
  version: string;
  log: Log;
  env: Record<string, string | undefined>;
  /** The protocol's input (stdin) and output (stdout). */
  input: ReadableStream<Uint8Array>;
  output: TextSink;
  /** `serve --adopt`: a --workspace-root of files that are nothing of the notebook's is taken as the agent's to publish (refuseForeignRoot). */
  adopt?: boolean;
}

const tick = () => new Promise<void>((resolve) => setTimeout(resolve, 0));

const STOP_SIGNALS = ["SIGTERM", "SIGINT", "SIGHUP"] as const;

/**
 * SIGTERM, SIGINT and SIGHUP as a request to stop: `requested` resolves
 * with the first one's name. Without a handler any of them would end the
 * process at once, mid-call, and drop what its process memory holds for
 * its end, and the session directory with it.
 * `dispose` removes the handlers once the server has stopped.
 */
function stopSignals(log: Log): { requested: Promise<string>; dispose(): void } {
  let resolveRequested!: (signal: string) => void;
  const requested = new Promise<string>((resolve) => {
    resolveRequested = resolve;
  });
  let received: string | null = null;
  const handlers = STOP_SIGNALS.map((signal) => {
    const handler = () => {
      if (received !== null) {
        log.info("stop already requested; waiting for the calls in flight", { signal });
        return;
      }
      received = signal;
      log.info("stopping", { signal });
      resolveRequested(signal);
    };
    process.on(signal, handler);
    return [signal, handler] as const;
  });
  return {
    requested,
    dispose: () => {
      for (const [signal, handler] of handlers) process.off(signal, handler);
    },
  };
}

/** Serve until stdin closes; resolves when the server has shut down. */
export async function serve(options: ServeOptions): Promise<void> {
  const { config, log } = options;
  // Before the handshake, as ever: a private root that cannot be made ends the start (before a session is made).
  const privateRoot = preparePrivateRoot(config);
  const root = notebookRoot(config.workspaceRoot, options.env, { storeId: storeIdentity(config.store), privateRoot });
  if (root.session === null && options.adopt !== true) await refuseForeignRoot(options, root.dir);
  const identity = serverIdentity(options.version, root.dir, config.pathSets);
  const transport = new StdioTransport(options.input, options.output);
  const signals = stopSignals(log);
  let signalled = false;
  void signals.requested.then(() => {
    signalled = true;
    transport.hold();
  });
  try {
    await run(options, root, identity, transport, signals.requested, () => signalled);
  } finally {
    signals.dispose();
  }
  log.info("server stopped", {});
  if (root.session === null) return;
  // What the process memory holds goes out first: the discard reads the checkout as the disk has it.
  options.memory.flush();
  await removeSession(engineDeps(config, options.store, options.memory.get()), root.session);
}

/**
 * A --workspace-root that holds files, was never a checkout, and whose files
 * match nothing of the notebook's retained history (engine/foreign.ts) is
 * refused at start, as `pull` refuses such a directory: the tools' pulls
 * would make every file a local edit, and a commit would publish them.
 * `serve --adopt` takes them. An empty root needs no look at the engine.
 */
async function refuseForeignRoot(options: ServeOptions, dir: string): Promise<void> {
  const deps = () => engineDeps(options.config, options.store, options.memory.get());
  await refuseForeignDirectory(dir, deps, { kind: "invalid configuration", what: `--workspace-root "${dir}"`, advice: "start serve with --adopt" });
}

async function run(
  options: ServeOptions,
  root: NotebookRoot,
  identity: ReturnType<typeof serverIdentity>,
  transport: StdioTransport,
  stopRequested: Promise<string>,
  signalled: () => boolean,
): Promise<void> {
  const { config, log } = options;
  await answerFirstLine(transport, identity, stopRequested, signalled);
  // Loads the MCP SDK and, through the tools' code, the engine.
  const { createMcpServer, parseMessage } = await import("./server.ts");
  // Who publishes (contract/agent.ts): --agent, or the client the handshake named, with the user and host.
  let client: { getClientVersion(): { name: string; version: string } | undefined } | null = null;
  const operation = operationContext(options, root, () => client?.getClientVersion());
  const newer = newerStoreRefusal(options);
  const looks = looksAhead(options, root, operation);
  const { server, idle, busy } = createMcpServer({ identity, sets: config.pathSets, operation, looks });
  client = server;
  const closed = new Promise<void>((resolve) => {
    server.onclose = () => resolve();
  });
  transport.onerror = (error) => log.warn("transport error", { error: String(error) });
  transport.attach(parseMessage);
  // Logged before connecting: connecting delivers the lines already read, which may log.
  log.info("server started", { version: options.version, notebook: root.dir, store: options.store.kind });
  await server.connect(transport);
  // Beside the calls, and finished before the server's end: sessions that servers killed left behind.
  const swept = sweepSessions(operation.deps, options.env, root.session, log).catch(() => {});
  const stop = stopWhenIdle(server, idle, busy);
  void Promise.race([transport.ended, stopRequested]).then(stop);
  void newer.then((refusal) => {
    if (refusal === null) return;
    transport.hold();
    stop();
  });
  // A host that closed stdout is gone, whether or not it closed stdin: no new call starts, the ones running finish.
  void transport.outputGone.then(() => {
    transport.hold();
    stop();
  });
  await closed;
  await looks.stop();
  await swept;
  // Awaited even when the host left first: a server that met a newer store says so and exits 2.
  const refusal = await newer;
  if (refusal !== null) throw refusal;
}

/** A look at the store takes at most this long (ms): a store that stopped answering costs one warning, not a hung look. */
const LOOK_DEADLINE_MS = 10_000;

/**
 * The server's looks ahead at the store for its notebook directory between
 * calls (engine/fetch-ahead.ts), at the waits of its kind of store, and
 * the compactions its commits make due (engine/compact-ahead.ts).
 */
function looksAhead(options: ServeOptions, root: NotebookRoot, operation: OperationContext): FetchAheadLooks {
  const { deps } = operation;
  const ahead = new FetchAhead(deps, root.dir);
  return fetchAheadLooks({
    download: () => ahead.download(boundedStore(deps.store, deadlineIn(LOOK_DEADLINE_MS))),
    waits: storeKind(options.config.store).looks,
    log: options.log,
    compactionDue: () => compactionDue(deps.memory, deps.storeId),
    compact: () => compactAhead(deps, boundedStore(deps.store, deadlineIn(LOOK_DEADLINE_MS)), root.dir),
  });
}

/**
 * A store left unopened at start (a trusted S3 store) opens now, not in the
 * first call; a failure there surfaces in that call, as every store failure
 * does. A store of a newer format ends the server as a refused start would
 * (verified-store.ts), calls running meanwhile answering MANIFEST_INVALID in
 * the same words.
 */
function newerStoreRefusal(options: ServeOptions): Promise<StartupRefusal | null> {
  if (!(options.store instanceof DeferredStore)) return Promise.resolve(null);
  return options.store.open().then(refuseNewerStore).then(
    () => null,
    (e: unknown) => (e instanceof StartupRefusal ? e : null),
  );
}

/**
 * Stopping the server: running calls finish and answer, so nothing is cut
 * mid-write, then it closes. A macrotask before and after lets calls read
 * with the last bytes start, and lets a finished call's response reach the
 * transport. Called more than once, it stops once.
 */
function stopWhenIdle(server: { close(): Promise<void> }, idle: () => Promise<void>, busy: () => boolean): () => void {
  let stopping = false;
  return () => {
    if (stopping) return;
    stopping = true;
    void (async () => {
      do {
        await tick();
        await idle();
        await tick();
      } while (busy());
      await server.close();
    })();
  };
}

/** A plain `initialize` as the first line is answered at once, before the SDK and the engine are loaded (handshake.ts). */
async function answerFirstLine(
  transport: StdioTransport,
  identity: ReturnType<typeof serverIdentity>,
  stopRequested: Promise<string>,
  signalled: () => boolean,
): Promise<void> {
  const first = await Promise.race([transport.firstLine(), stopRequested.then(() => null)]);
  if (first === null || signalled()) return;
  let request: unknown;
  try {
    request = JSON.parse(first);
  } catch {
    /* not JSON: the transport answers it once the server listens */
  }
  const response = earlyInitializeResponse(request, identity);
  // A failed write means the host is gone; stdin's end then stops the server.
  if (response !== null) await transport.answerFirstLine(response).catch(() => {});
}

/** What the server's tool calls run with: the engine's dependencies, publishing as the client the handshake named (`client`) unless --agent says. */
function operationContext(
  options: ServeOptions,
  root: { dir: string },
  client: () => { name: string; version: string } | undefined,
): OperationContext {
  const { config, log } = options;
  const engine = engineDeps(config, options.store, options.memory.get());
  const who = engine.agent?.() ?? defaultAgent();
  const deps = config.agent !== undefined ? engine : { ...engine, agent: () => clientAgent(client(), who) };
  return {
    deps,
    deadline: () => deadlineIn(config.deadlineMs),
    sets: config.pathSets,
    paths: { defaultDir: root.dir, cwd: root.dir, home: options.env.HOME ?? "", workspaceRoot: root.dir },
    log,
    secrets: runtimeSecrets(options.env),
    privatePaths: [deps.privateRoot],
    requireAbsolute: true,
    credentialsRefused: () => {
      options.forgetProbe?.();
      log.warn("the store refused the server's credentials: the next start probes it again", {});
    },
  };
}
