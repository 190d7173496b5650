/**
 * The command line, parsed strictly against the command definitions
 * (definitions.ts): a silently ignored `--mesage` or `--read-only-path`
 * would be a misplaced or unprotected write, so an unknown flag is refused
 * (docs/decisions/0015-the-cli-refuses-what-it-does-not-know.md).
 */
import type { ArgsDef } from "./definitions.ts";
import { DomainError } from "../../contract/errors.ts";
import { StartupRefusal } from "../../contract/startup.ts";
import { isUtf8 } from "./raw-argv.ts";

export type Parsed = {
  flags: Record<string, string | boolean>;
  positionals: string[];
  /** Where each flag's value came from: the argument's index, and the value's byte offset in it (`--message=…`). */
  sources: Record<string, { index: number; offset: number }>;
};

/** Strict parsing against the command definitions: unknown flags and extra positionals are refused by name. */
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
export function messageRefusal(parsed: Parsed, flag: string, rawArgv: (() => Uint8Array[] | null) | undefined): DomainError | null {
  const message = parsed.flags[flag];
  const source = parsed.sources[flag];
  if (typeof message !== "string" || !message.includes("\uFFFD") || source === undefined) return null;
  const raw = rawArgv?.() ?? null;
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
