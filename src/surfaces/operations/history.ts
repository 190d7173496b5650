/**
 * The operations on the retained history: log, agents, show, blame and
 * export. Each runner loads the engine when it runs, not when this module
 * loads.
 */
import { DomainError } from "../../contract/errors.ts";
import { booleanField, countField, objectInput, optional, stringField, stringListField } from "../../contract/input-schema.ts";
import { parsePathSet } from "../../contract/path-sets.ts";
import { StartupRefusal } from "../../contract/startup.ts";
import type { LogEntry } from "../../engine/history/log.ts";
import { parseSince } from "../duration.ts";
import { defineOperation, parseCount } from "./define.ts";

/** How `log` prints each publication: its first files, all of them (--stat), or one line (--oneline). */
export type LogView = "default" | "stat" | "oneline";

/** `show`'s answer: the publication's entry, and without --stat its changes as git's patch. */
export type ShownEntry = LogEntry & { patch?: string };

/** --since of log and agents. */
const SINCE_FLAG = { type: "string", description: "Only publications since a date (2026-11-30, 2026-11-30T14:00Z) or for a duration back (30m, 2d)", valueHint: "WHEN" } as const;

/** log's view, as the CLI sets it from --oneline or --stat. */
function logView(value: string, name: string): LogView {
  if (value === "default" || value === "stat" || value === "oneline") return value;
  throw new DomainError("MALFORMED_INPUT", `${name} must be default, stat or oneline.`);
}

/** --path a,b of log and show: notebook paths, checked like the path sets. */
function pathsInput(flags: Record<string, string | boolean>): { paths?: string[] } {
  return typeof flags.path === "string" ? { paths: parsePathSet("--path", flags.path) } : {};
}

export const logOperation = defineOperation({
  cli: {
    name: "log",
    example: "slivingdoc log --since 2d --path shared/plan.md",
    writesNothing: true,
    summary: "List the retained publications, newest first: generation, time, agent, message, files changed",
    usage: "log [--limit N] [--since DATE|DURATION] [--path a,b] [--oneline | --stat]",
    flags: {
      limit: { type: "string", description: "At most N publications", valueHint: "N" },
      since: SINCE_FLAG,
      path: { type: "string", description: "Only publications that changed these notebook paths (files or directories, comma-separated)", valueHint: "a,b" },
      oneline: { type: "boolean", description: "One line per publication: generation, time, agent, message's first line, file count" },
      stat: { type: "boolean", description: "Every file of each publication (without it, at most 10 each)" },
    },
    path: false,
    toInput: (flags) => {
      if (flags.oneline === true && flags.stat === true) throw new StartupRefusal("argument refusal", "--oneline and --stat cannot be combined: choose one");
      return {
        ...(typeof flags.limit === "string" ? { limit: parseCount("limit", flags.limit) } : {}),
        ...(typeof flags.since === "string" ? { sinceMs: parseSince("since", flags.since, Date.now()) } : {}),
        ...pathsInput(flags),
        ...(flags.oneline === true ? { view: "oneline" } : flags.stat === true ? { view: "stat" } : {}),
      };
    },
  },
  input: objectInput("log", {
    limit: optional(countField()),
    sinceMs: optional(countField()),
    paths: optional(stringListField()),
    // How a person reads it; --json is always whole.
    view: optional(stringField({ rule: logView })),
  }),
  async run(ctx, input) {
    const { historyLog } = await import("../../engine/history/log.ts");
    return await historyLog(ctx.engine(), {
      ...(input.limit !== undefined ? { limit: input.limit } : {}),
      ...(input.sinceMs !== undefined ? { since: new Date(input.sinceMs) } : {}),
      ...(input.paths !== undefined ? { paths: input.paths } : {}),
    });
  },
});

export const agentsOperation = defineOperation({
  cli: {
    name: "agents",
    example: "slivingdoc agents --since 1d",
    writesNothing: true,
    summary: "List the agents of the retained history: publications, first and last, files touched",
    usage: "agents [--since DATE|DURATION]",
    flags: {
      since: SINCE_FLAG,
    },
    path: false,
    toInput: (flags) => (typeof flags.since === "string" ? { sinceMs: parseSince("since", flags.since, Date.now()) } : {}),
  },
  input: objectInput("agents", { sinceMs: optional(countField()) }),
  async run(ctx, input) {
    const { historyAgents } = await import("../../engine/history/agents.ts");
    return await historyAgents(ctx.engine(), input.sinceMs !== undefined ? { since: new Date(input.sinceMs) } : {});
  },
});

export const showOperation = defineOperation({
  cli: {
    name: "show",
    example: "slivingdoc show 12 > generation-12.patch",
    writesNothing: true,
    summary: "Show what one publication changed, as git's unified diff",
    usage: "show GENERATION [--stat] [--path a,b]",
    flags: {
      stat: { type: "boolean", description: "The files changed with their insertions and deletions, without the diff" },
      path: { type: "string", description: "Only these notebook paths (files or directories, comma-separated)", valueHint: "a,b" },
    },
    path: false,
    positional: { name: "GENERATION", description: "The generation of the publication", required: true },
    toInput: (flags, generation) => ({
      generation: parseCount("GENERATION", generation),
      stat: flags.stat === true,
      ...pathsInput(flags),
    }),
  },
  input: objectInput("show", { generation: countField(), stat: booleanField(), paths: optional(stringListField()) }),
  async run(ctx, input) {
    const { showGeneration } = await import("../../engine/history/log.ts");
    const { entry, changes } = await showGeneration(ctx.engine(), { generation: input.generation, ...(input.paths !== undefined ? { paths: input.paths } : {}) });
    if (input.stat || changes === null) return entry as ShownEntry;
    const { showPatch } = await import("../patch.ts");
    return { ...entry, patch: await showPatch(changes) } as ShownEntry;
  },
});

export const blameOperation = defineOperation({
  cli: {
    name: "blame",
    example: "slivingdoc blame shared/plan.md --at 12",
    writesNothing: true,
    summary: "Show who last wrote each line of a notebook file: generation, agent, time, within the retained history",
    usage: "blame PATH [--at GENERATION]",
    flags: {
      at: { type: "string", description: "The generation whose version is blamed (default: the accepted one)", valueHint: "GENERATION" },
    },
    path: false,
    positional: { name: "PATH", description: "The notebook file, relative to the notebook directory", required: true },
    toInput: (flags, path) => ({
      path: path ?? "",
      ...(flags.at !== undefined ? { generation: parseCount("--at", flags.at, 1, "a generation: a whole number from 1 up (slivingdoc log lists them)") } : {}),
    }),
  },
  input: objectInput("blame", { path: stringField({}), generation: optional(countField()) }),
  async run(ctx, input) {
    const { historyBlame } = await import("../../engine/history/blame.ts");
    return await historyBlame(ctx.engine(), { path: input.path, ...(input.generation !== undefined ? { generation: input.generation } : {}) });
  },
});

export const exportOperation = defineOperation({
  cli: {
    name: "export",
    example: "slivingdoc export ./history && git -C ./history log --stat",
    writesNothing: true,
    summary: "Write the retained history into DIR as a bare git repository (updated incrementally when run again)",
    usage: "export DIR",
    flags: {},
    path: false,
    positional: { name: "DIR", description: "The git repository to write: a new or empty directory, or one export wrote before", required: true },
    toInput: (_flags, dir) => ({ directory: dir ?? "" }),
  },
  input: objectInput("export", { directory: stringField({}) }),
  async run(ctx, input) {
    const { exportHistory, ExportRefused } = await import("../../engine/history/export.ts");
    if (input.directory === "") throw new DomainError("MALFORMED_INPUT", "export needs a directory.");
    const named = ctx.namedPath(input.directory);
    const dir = ctx.notebookPath(input.directory);
    // A directory export may not write into is the caller's mistake: refused as an argument, by the name typed.
    return await exportHistory(ctx.engine(), { named, dir }).catch((e: unknown): never => {
      if (!(e instanceof ExportRefused)) throw e;
      throw new StartupRefusal(
        "argument refusal",
        `export DIR "${input.directory}" ${e.why}; ${e.advice ?? "export writes only into a new or empty directory, or an earlier export of this notebook"}`,
        [input.directory],
      );
    });
  },
});
