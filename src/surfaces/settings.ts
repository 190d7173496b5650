/**
 * Reading settings: every setting is a flag and an environment variable, and
 * the flag wins (docs/decisions/0002-settings-flags-and-environment.md). An
 * invalid value is a start-up refusal.
 */
import type { Env, SettingSources as Sources } from "../contract/settings.ts";

export { type Env, invalid, nonEmpty } from "../contract/settings.ts";

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
  /** The settings of the kinds of store (store/kind.ts, StoreKind.flags): --region, --endpoint, … */
  [storeFlag: string]: string | boolean | undefined;
}

/** Where settings come from: the flags, the environment, and what relative paths and `~` mean. */
export interface SettingSources extends Sources {
  flags: ConfigFlags;
  env: Env;
}
