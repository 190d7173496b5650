/**
 * Reading settings: every setting is a flag and an environment variable, and
 * the flag wins (docs/decisions/0002-settings-flags-and-environment.md). An
 * invalid value is a start-up refusal.
 */
import { StartupRefusal } from "../contract/startup.ts";

/** The configuration flags every subcommand accepts, by their long names. */
export interface ConfigFlags {
  store?: string;
  "workspace-root"?: string;
  "private-root"?: string;
  "commit-retries"?: string;
  "read-only-paths"?: string;
  "writable-paths"?: string;
  agent?: string;
  "history-period"?: string;
  deadline?: string;
  /** The settings of the kinds of store (stores.ts, StoreKind.flags): --region, --endpoint, … */
  [storeFlag: string]: string | boolean | undefined;
}

export type Env = Record<string, string | undefined>;

/** Where settings come from: the flags, the environment, and what relative paths and `~` mean. */
export interface SettingSources {
  flags: ConfigFlags;
  env: Env;
  cwd: string;
  home: string;
}

/** An empty value is no value. */
export function nonEmpty(v: string | undefined): string | undefined {
  return v === undefined || v === "" ? undefined : v;
}

export function invalid(message: string): StartupRefusal {
  return new StartupRefusal("invalid configuration", message);
}
