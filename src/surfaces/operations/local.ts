/**
 * The operations on a checkout's own files: status, diff and restore.
 * status and diff read the store only to say how far behind the checkout
 * is, and work offline. Each runner loads the engine when it runs, not
 * when this module loads.
 */
import { DomainError } from "../../contract/errors.ts";
import { booleanField, countField, malformed, objectInput, optional, stringListField } from "../../contract/input-schema.ts";
import { PATH_FIELD } from "../../contract/tool-input.ts";
import type { PatchFile } from "../patch.ts";
import { defineOperation, parseCount } from "./define.ts";

/**
 * diff's files as its patch is written from them, kept off the result's
 * JSON (a symbol key): the patch's index lines carry blob ids, which no
 * result does.
 */
export const PATCH_FILES = Symbol("patch files");

export const statusOperation = defineOperation({
  cli: {
    name: "status",
    example: "slivingdoc status ./notebook",
    summary: "What a commit of PATH would publish, and how far it is behind (reads only; works offline)",
    usage: "status [PATH]",
    flags: {},
    path: true,
    readsStoreOnly: true,
    toInput: (_flags, path) => (path !== undefined ? { path } : {}),
  },
  input: objectInput("status", { path: PATH_FIELD }),
  async run(ctx, input) {
    const { readLocalChanges } = await import("../../engine/local-changes.ts");
    const r = await readLocalChanges(ctx.engine(), { path: ctx.notebookPath(input.path) });
    return {
      path: r.path,
      generation: r.generation,
      accepted: r.accepted,
      behind: r.behind,
      ...(r.behindUnknown !== null ? { behindUnknown: r.behindUnknown } : {}),
      files: r.changes.map((c) => ({ path: c.path, change: c.change, insertions: c.insertions, deletions: c.deletions })),
      unresolved: r.markers,
      readOnlyChanges: r.readOnly,
      ignored: r.ignored,
      interrupted: r.interrupted,
    };
  },
});

export const diffOperation = defineOperation({
  cli: {
    name: "diff",
    example: "slivingdoc diff ./notebook",
    summary: "Print the changes in PATH against its baseline as a unified diff (reads only; works offline)",
    usage: "diff [--stat] [PATH]",
    flags: { stat: { type: "boolean", description: "Print git's diffstat instead of the patch" } },
    path: true,
    readsStoreOnly: true,
    toInput: (flags, path) => ({ ...(path !== undefined ? { path } : {}), stat: flags.stat === true }),
  },
  input: objectInput("diff", { path: PATH_FIELD, stat: booleanField() }),
  async run(ctx, input) {
    const { readLocalChanges } = await import("../../engine/local-changes.ts");
    const { unifiedHunks } = await import("../../engine/merge/xdiff/unified.ts");
    const r = await readLocalChanges(ctx.engine(), { path: ctx.notebookPath(input.path) });
    const files = r.changes.map((c) => ({ ...c, hunks: unifiedHunks(c.beforeText, c.afterText) }));
    const result = {
      path: r.path,
      generation: r.generation,
      accepted: r.accepted,
      behind: r.behind,
      ...(r.behindUnknown !== null ? { behindUnknown: r.behindUnknown } : {}),
      stat: input.stat,
      files: files.map((f) => ({
        path: f.path,
        change: f.change,
        insertions: f.insertions,
        deletions: f.deletions,
        ...(input.stat ? {} : { hunks: f.hunks }),
      })),
    };
    // The CLI writes the patch from these; the files' texts are not kept.
    const patchFiles: PatchFile[] = files.map(({ path, change, before, after, hunks }) => ({ path, change, before, after, hunks }));
    return Object.assign(result, { [PATCH_FILES]: patchFiles });
  },
});

export const restoreOperation = defineOperation({
  cli: {
    name: "restore",
    example: "slivingdoc restore --from 7 --dir ./notebook plan.md",
    writesNothing: true,
    summary: "Write a retained generation's version of files into a checkout, as local edits to review and commit",
    usage: "restore --from GENERATION [PATH…]",
    flags: {
      from: { type: "string", required: true, description: "The generation to restore from (slivingdoc log lists them)", valueHint: "GENERATION" },
      dir: { type: "string", description: "The notebook directory to restore into (default: the current directory)", valueHint: "DIR" },
      force: { type: "boolean", description: "Overwrite files with unpublished local edits too" },
    },
    path: "paths",
    toInput: (flags, _path, positionals) => ({
      ...(typeof flags.dir === "string" ? { path: flags.dir } : {}),
      from: parseCount("--from", flags.from, 1, "a generation: a whole number from 1 up (slivingdoc log lists them)"),
      paths: positionals,
      force: flags.force === true,
    }),
  },
  input: objectInput("restore", {
    path: PATH_FIELD,
    from: countField({ description: "The generation to restore from" }),
    paths: optional(stringListField({ description: "Notebook paths (files or directories); none for the whole notebook" })),
    force: optional(booleanField()),
  }),
  async run(ctx, input) {
    const { restore } = await import("../../engine/restore.ts");
    if (input.from < 1) throw malformed("from must be a generation, 1 or more.");
    const r = await restore(ctx.engine(), { path: ctx.notebookPath(input.path), from: input.from, paths: input.paths ?? [], force: input.force === true }).catch((e: unknown) => {
      // `restore --from G ./notebook` from the directory above a checkout: PATHs are files in the notebook, not the notebook.
      if (input.path !== undefined || !(e instanceof DomainError) || e.reason !== "PATH_OUTSIDE_ROOT") throw e;
      throw new DomainError(e.reason, `${e.message} restore writes into the current directory; name the checkout with --dir, and files in it as PATH.`, { cause: e });
    });
    let insertions = 0;
    let deletions = 0;
    for (const f of r.files) (insertions += f.insertions), (deletions += f.deletions);
    return { ...r, filesChanged: r.files.length, insertions, deletions };
  },
});
