/**
 * What reading a setting takes, at every layer that parses one: the
 * surfaces' configuration, and each kind of store's own URL and flags
 * (src/store/*-kind.ts). Every setting is a flag and an environment
 * variable, and the flag wins
 * (docs/decisions/0002-settings-flags-and-environment.md); an invalid value
 * is a start-up refusal.
 */
import { StartupRefusal } from "./startup.ts";

export type Env = Record<string, string | undefined>;

/** A command line's flags by long name: a string, or true for a boolean flag given. */
export type Flags = Readonly<Record<string, string | boolean | undefined>>;

/** Where settings come from: the flags, the environment, and what relative paths and `~` mean. */
export interface SettingSources {
  flags: Flags;
  env: Env;
  cwd: string;
  home: string;
}

/** An empty value is no value. */
export function nonEmpty(v: string | undefined): string | undefined {
  return v === undefined || v === "" ? undefined : v;
}

/** A string flag's value; a flag given as a boolean is none. */
export function stringFlag(flags: Flags, name: string): string | undefined {
  const value = flags[name];
  return typeof value === "string" ? value : undefined;
}

export function invalid(message: string): StartupRefusal {
  return new StartupRefusal("invalid configuration", message);
}
