/**
 * The embedded kind of store: its URL `sqlite:PATH` and its `--create`
 * flag, parsed and validated here, the file it lives in by default, and how
 * it is opened (sqlite.ts).
 */
import { existsSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { invalid, nonEmpty } from "../contract/settings.ts";
import type { StoreKind } from "./kind.ts";
import { openSqliteStore } from "./sqlite.ts";

export interface SqliteSpec {
  kind: "sqlite";
  file: string;
  /**
   * Whether the file's directory may be made when it does not exist: the
   * default location's, or one `--create` asks for. Not a path given
   * otherwise: a mistyped one would begin a notebook nobody else sees.
   */
  makeDirectory?: boolean;
}

export const SQLITE_KIND: StoreKind<SqliteSpec> = {
  scheme: "sqlite:",
  usage: "sqlite:PATH",
  label: "embedded",
  // Every writer is on this machine: they take turns, and a commit is one transaction (sqlite.ts).
  capabilities: { queue: true, putWith: true },
  // A look reads a local file: cheap enough to make often.
  looks: { shortestMs: 50, longestMs: 1_000 },
  flags: {
    // No environment variable: a directory is made where it is asked for each time, never by a setting left behind.
    create: { type: "boolean", description: "Make the directory of the embedded store's file that --store (or SLIVINGDOC_STORE) names, when it does not exist" },
  },
  parse(rest, { cwd, flags }) {
    if (rest === "") throw invalid("the store URL sqlite:PATH needs a file path");
    const file = resolve(cwd, rest);
    const makeDirectory = flags.create === true;
    // The diagnostic names no path (it may be private); the flag or variable that gave it is the user's to look at.
    if (!makeDirectory && !existsSync(dirname(file))) {
      throw invalid("the embedded store's directory does not exist; check --store (or SLIVINGDOC_STORE), or give --create to make it");
    }
    return { kind: "sqlite", file, makeDirectory };
  },
  byDefault({ env, home }) {
    const dataHome = nonEmpty(env.XDG_DATA_HOME) ?? join(home, ".local", "share");
    return { kind: "sqlite", file: join(dataHome, "slivingdoc", "store.db"), makeDirectory: true };
  },
  identity: (spec) => `sqlite:${spec.file}`,
  // The embedded store is this project's own code: not probed.
  open: async (spec, { clock, queueIdentity }) => openSqliteStore(spec.file, clock, { writer: queueIdentity(), makeDirectory: spec.makeDirectory === true }),
  probe: false,
  file: (spec) => spec.file,
  examined: { name: "the embedded store" },
};
