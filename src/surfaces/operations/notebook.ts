/**
 * The operations that bring a checkout and the store together: init, pull
 * (the tool notes_pull), attach and commit (the tool notes_commit). Each
 * runner loads the engine when it runs, not when this module loads.
 */
import { StartupRefusal } from "../../contract/startup.ts";
import { booleanField, objectInput, optional, stringField } from "../../contract/input-schema.ts";
import { type OperationOutcome, type PathSets, type SuccessResult, successResult } from "../../contract/results.ts";
import { MESSAGE_FIELD, PATH_FIELD } from "../../contract/tool-input.ts";
import { defineOperation } from "./define.ts";
import { foreignRefusal, refuseForeignDirectory } from "./foreign.ts";

/** --adopt of a first pull (pull, init PATH): the caller's yes to publishing a directory's files that are nothing of the notebook's. */
const ADOPT_FLAG = {
  type: "boolean",
  description: "Publish the files already in PATH, a directory that was never a checkout, with the next commit (refused without it when none is in the notebook)",
} as const;

/**
 * How many entries the ignore rules left out, carried beside a pull's or a
 * commit's result for the CLI's summary only: a symbol key, which no JSON
 * result (the tools', or --json) carries.
 */
export const IGNORED = Symbol("ignored");

function withIgnored(outcome: OperationOutcome, sets: PathSets): SuccessResult & { [IGNORED]: number } {
  return Object.assign(successResult(outcome, sets), { [IGNORED]: outcome.ignored ?? 0 });
}

export const initOperation = defineOperation({
  cli: {
    name: "init",
    example: "slivingdoc init ./notebook",
    createsStore: true,
    summary: "Start a team's notebook: publish the recommended .gitattributes, .gitignore and AGENTS.md where they are missing, then pull PATH if given",
    usage: "init [--adopt] [PATH]",
    flags: { adopt: ADOPT_FLAG },
    path: true,
    toInput: (_flags, path) => (path !== undefined ? { path } : {}),
  },
  input: objectInput("init", { path: optional(stringField({})) }),
  async run(ctx, input) {
    const { initNotebook } = await import("../../engine/init.ts");
    const { tmpdir } = await import("node:os");
    const path = input.path === undefined ? null : ctx.notebookPath(input.path);
    // A PATH a first pull would refuse (files that are nothing of the notebook's) is refused before anything is published.
    if (path !== null && ctx.refuseForeign) {
      await refuseForeignDirectory(path, ctx.engine, { kind: "argument refusal", what: `init PATH "${path}"`, advice: "pass --adopt" });
    }
    // Its scratch checkout is made in the system's temporary directory, away from every checkout.
    const layout = await initNotebook(ctx.engine(), { scratchParent: tmpdir() });
    if (path === null) return { ...layout, pulled: null };
    const { pull } = await import("../../engine/pull.ts");
    return { ...layout, pulled: withIgnored(await pull(ctx.engine(), { path }), ctx.sets) };
  },
});

export const pullOperation = defineOperation({
  cli: {
    name: "pull",
    example: "slivingdoc pull ./notebook",
    writesNothing: true,
    summary: "Write the accepted notebook into PATH, merging your unpublished edits",
    usage: "pull [--adopt] [PATH]",
    flags: { adopt: ADOPT_FLAG },
    path: true,
    toInput: (_flags, path) => (path !== undefined ? { path } : {}),
  },
  tool: {
    name: "notes_pull",
    description:
      "Write the current notebook into the notebook directory and record the accepted state. Omit path or pass an empty string to use the server’s notebook directory, which the result reports. Edit UTF-8 text files (without U+0000) there between notes_pull and notes_commit; notes_commit publishes the changes and incorporates concurrent non-conflicting changes.",
  },
  input: objectInput("notes_pull", { path: PATH_FIELD }),
  async run(ctx, input) {
    const { pull } = await import("../../engine/pull.ts");
    const { ForeignFiles } = await import("../../engine/foreign.ts");
    const path = ctx.notebookPath(input.path);
    const pulled = await pull(ctx.engine(), { path, refuseForeign: ctx.refuseForeign }).catch((e: unknown): never => {
      if (!(e instanceof ForeignFiles)) throw e;
      throw new StartupRefusal("argument refusal", foreignRefusal(`pull PATH "${path}"`, e, "pass --adopt"));
    });
    return withIgnored(pulled, ctx.sets);
  },
});

export const attachOperation = defineOperation({
  cli: {
    name: "attach",
    example: "slivingdoc attach ./notebook",
    writesNothing: true,
    summary: "After the store went backwards (or its manifest was damaged, with --replace-damaged-manifest): attach PATH to the store as it is, keeping its files as local edits to publish (operators)",
    usage: "attach [PATH] [--replace-damaged-manifest]",
    flags: {
      "replace-damaged-manifest": {
        type: "boolean",
        description: "When the store's manifest is damaged (empty, truncated, not valid): move it aside and take the store as emptied; the next commit starts the notebook again",
      },
    },
    path: true,
    toInput: (flags, path) => ({ ...(path !== undefined ? { path } : {}), ...(flags["replace-damaged-manifest"] === true ? { replaceDamagedManifest: true } : {}) }),
  },
  input: objectInput("attach", { path: PATH_FIELD, replaceDamagedManifest: optional(booleanField()) }),
  async run(ctx, input) {
    const { attach } = await import("../../engine/pull.ts");
    const { outcome, attached, movedAside } = await attach(ctx.engine(), { path: ctx.notebookPath(input.path), replaceDamagedManifest: input.replaceDamagedManifest === true });
    return { ...successResult(outcome, ctx.sets), attached, ...(input.replaceDamagedManifest === true ? { movedAside } : {}) };
  },
});

export const commitOperation = defineOperation({
  cli: {
    name: "commit",
    example: 'slivingdoc commit -m "plan: ship on Friday" ./notebook',
    summary: "Publish the changes in PATH and incorporate concurrent changes",
    usage: "commit -m MSG [PATH]",
    flags: {
      message: {
        type: "string",
        alias: "m",
        required: true,
        exactBytes: true,
        description: "The commit message (non-blank UTF-8, at most 16,384 bytes)",
        valueHint: "MSG",
      },
    },
    path: true,
    toInput: (flags, path) => ({ ...(path !== undefined ? { path } : {}), message: flags.message }),
  },
  tool: {
    name: "notes_commit",
    description:
      "Publish the caller’s changes in the notebook directory and incorporate concurrent non-conflicting changes. Omit path or pass an empty string to use the server’s notebook directory, which the result reports. message must be non-blank UTF-8 without U+0000, at most 16,384 bytes; it is retained in recent internal history only.",
  },
  // Declared path first: a call wrong in both is told about its path, as it always was.
  input: objectInput("notes_commit", { path: PATH_FIELD, message: MESSAGE_FIELD }),
  async run(ctx, input) {
    const { commit } = await import("../../engine/commit.ts");
    const path = ctx.notebookPath(input.path);
    return withIgnored(await commit(ctx.engine(), { path, message: input.message }), ctx.sets);
  },
});
