/**
 * The server log: stderr only (stdout belongs to the protocol under `serve`),
 * one JSON object a line when stderr is not a terminal
 * (docs/decisions/0017-logs-and-results-carry-no-secret.md), readable lines
 * on a terminal. Built on consola with both of its streams pointed at stderr,
 * since its basic reporter writes info to stdout otherwise.
 */
// consola/core, not consola: the package's main entry builds a default
// instance on Node's process.stdout at import, ~9 ms of every start.
import { type ConsolaReporter, createConsola, type LogObject } from "consola/core";
import { scrubCredentials } from "../contract/scrub.ts";

export type LogFields = Record<string, unknown>;

export interface Log {
  info(msg: string, fields?: LogFields): void;
  warn(msg: string, fields?: LogFields): void;
  error(msg: string, fields?: LogFields): void;
}

export interface LogSink {
  write(text: string): void;
  /** Read at the first record, not before: a getter may defer a costly terminal check. */
  isTTY?: boolean;
}

/**
 * Logs never carry credentials: the process's own (`secrets`), AWS access key
 * ids and URL user information are scrubbed from every string of every
 * record (scrub.ts). Store keys, object ids and local paths stay: the
 * operator needs them, and a notebook's own names are not theirs to rewrite.
 */
function cleaner(secrets: readonly string[]): (value: unknown) => unknown {
  const clean = (value: unknown): unknown => {
    if (typeof value === "string") return scrubCredentials(value, secrets);
    if (Array.isArray(value)) return value.map(clean);
    if (value && typeof value === "object") {
      return Object.fromEntries(Object.entries(value as Record<string, unknown>).map(([k, v]) => [clean(k) as string, clean(v)]));
    }
    return value;
  };
  return clean;
}

function jsonReporter(sink: LogSink, clean: (value: unknown) => unknown): ConsolaReporter {
  return {
    log(obj: LogObject) {
      const [msg, fields] = obj.args as [string, LogFields | undefined];
      const record = { time: obj.date.toISOString(), level: obj.type, msg: clean(msg), ...((clean(fields) as LogFields) ?? {}) };
      sink.write(`${JSON.stringify(record)}\n`);
    },
  };
}

function textReporter(sink: LogSink, clean: (value: unknown) => unknown): ConsolaReporter {
  return {
    log(obj: LogObject) {
      const [msg, fields] = obj.args as [string, LogFields | undefined];
      const extra = fields ? ` ${JSON.stringify(clean(fields))}` : "";
      sink.write(`${obj.date.toISOString()} ${obj.type} ${clean(msg)}${extra}\n`);
    },
  };
}

/** `secrets`: the process's own credentials, which no record may carry. */
export function createLog(sink: LogSink, secrets: readonly string[] = []): Log {
  const clean = cleaner(secrets);
  let reporter: ConsolaReporter | undefined;
  const chosen: ConsolaReporter = {
    log: (obj, ctx) => {
      reporter ??= sink.isTTY ? textReporter(sink, clean) : jsonReporter(sink, clean);
      reporter.log(obj, ctx);
    },
  };
  const consola = createConsola({ reporters: [chosen], level: 3 });
  return {
    info: (msg, fields) => consola.info(msg, fields),
    warn: (msg, fields) => consola.warn(msg, fields),
    error: (msg, fields) => consola.error(msg, fields),
  };
}

/** A log that drops everything (the CLI prints its own human output). */
export const SILENT_LOG: Log = { info() {}, warn() {}, error() {} };
