/**
 * Help, and the suggestion for a mistyped command, by commander: each
 * command's own flags first, the settings every command shares under a
 * heading of their own, wrapped to the terminal's width (80 columns when
 * not a terminal), and one example. Loaded only for help or a mistyped
 * command (run.ts), so no other start pays for it.
 */
import { Command, Option } from "commander";
import { type ArgsDef, type CommandDef, ROOT_DESCRIPTION, subCommands } from "./definitions.ts";

/** Where no terminal says how wide it is. */
export const DEFAULT_WIDTH = 80;
const SHARED_HEADING = "Store and process options (every command):";

function program(version: string, width: number): Command {
  return new Command("slivingdoc")
    .description(ROOT_DESCRIPTION)
    .version(version, "-V, --version", "Print the version, the build's commit, the store formats and the platform (--json too)")
    .helpOption("-h, --help", "Show help")
    .helpCommand("help [command]", "Show a command's help")
    .configureHelp({ helpWidth: width, sortSubcommands: false, sortOptions: false });
}

/** Adds `args` to `cmd`: flags as options, under `group` when given; positionals as arguments. */
function addArgs(cmd: Command, args: ArgsDef, group?: string): void {
  for (const [name, def] of Object.entries(args)) {
    if (def.type === "positional") {
      cmd.argument(def.required ? `<${def.valueHint}>` : `[${def.valueHint}]`, def.description);
      continue;
    }
    const value = def.type === "string" ? ` <${def.valueHint ?? name.toUpperCase()}>` : "";
    const option = new Option(`${def.alias ? `-${def.alias}, ` : ""}--${name}${value}`, `${def.description}${def.required ? " (required)" : ""}`);
    cmd.addOption(group === undefined ? option : option.helpGroup(group));
  }
}

/** Help text has no trailing white space, whatever the formatter pads. */
function tidy(text: string): string {
  return `${text.replace(/[ \t]+$/gm, "").replace(/\n+$/, "")}\n`;
}

/** `slivingdoc --help`: the commands, each with its summary. */
export function rootHelp(version: string, width = DEFAULT_WIDTH): string {
  const root = program(version, width);
  for (const def of Object.values(subCommands)) root.command(def.name).description(def.description);
  return tidy(`${root.helpInformation()}\nRun "slivingdoc COMMAND --help" for a command's flags and an example.`);
}

/** `slivingdoc COMMAND --help`: its own flags and arguments, the shared settings, one example. */
export function commandHelp(def: CommandDef, version: string, width = DEFAULT_WIDTH): string {
  const cmd = program(version, width).command(def.name).description(def.description);
  cmd.helpOption("-h, --help", "Show this help").configureHelp({ helpWidth: width, sortOptions: false });
  addArgs(cmd, def.own);
  addArgs(cmd, sharedOf(def), SHARED_HEADING);
  return tidy(`${cmd.helpInformation()}\nExample:\n  ${def.example}`);
}

/** The settings a command takes beside its own. */
function sharedOf(def: CommandDef): ArgsDef {
  return Object.fromEntries(Object.entries(def.args).filter(([name]) => !(name in def.own)));
}

/** The command `word` was most likely meant to be, as commander suggests it after a mistyped command; null when none is close. */
export function closestCommand(word: string): string | null {
  let said = "";
  const root = new Command("slivingdoc").exitOverride().configureOutput({ writeErr: (s) => (said += s), writeOut: () => {} });
  for (const name of Object.keys(subCommands)) root.command(name).action(() => {});
  try {
    root.parse([word], { from: "user" });
  } catch {
    // commander's refusal of the unknown command: its words are read below.
  }
  return /\(Did you mean (\S+)\?\)/.exec(said)?.[1] ?? null;
}
