/**
 * The operations registry: one entry per operation, and the one place both
 * surfaces read them from. An entry holds the operation's CLI command and,
 * for the two that are MCP tools, the tool's name and description; its
 * input (one definition that decodes strictly and is advertised as the
 * tool's JSON Schema, contract/input-schema.ts); what runs it; and how a
 * person reads its result. The MCP server lists and calls the entries with
 * a tool (mcp/server.ts), the CLI makes a command of every entry
 * (cli/definitions.ts, cli/run.ts), and `--json` prints the result object
 * the entry returns.
 *
 * Adding an operation is one entry here plus its engine function. Runners
 * load the engine when they run, not when this module loads: the CLI and
 * `serve` read this registry at start (docs/performance.md, S8). Renderers
 * load the CLI's rendering code when they render (`cli()`): `serve` runs
 * the tools' entries and renders nothing, so it never loads it.
 */
import { DomainError } from "../contract/errors.ts";
import { booleanField, countField, malformed, objectInput, optional, stringField, stringListField } from "../contract/input-schema.ts";
import { parsePathSet } from "../contract/path-sets.ts";
import { type RefusalKind, StartupRefusal } from "../contract/startup.ts";
import { type OperationOutcome, type PathSets, type SuccessResult, successResult } from "../contract/results.ts";
import { MESSAGE_FIELD, PATH_FIELD } from "../contract/tool-input.ts";
import { EXIT_CODES } from "../contract/tokens.ts";
import { TOOL_ANNOTATIONS, TOOL_NAMES, type ToolName, withSentences } from "../contract/tools.ts";
import type { LogView, ShownEntry } from "./cli/render-history.ts";
import { parseDuration, parseSince } from "./duration.ts";
import type { EngineDeps } from "../engine/engine.ts";
import type { Operation } from "./operation.ts";

/** The CLI's rendering code, loaded on first use, synchronously: renderers return text. */
function cli() {
  return {
    ...(require("./cli/render.ts") as typeof import("./cli/render.ts")),
    ...(require("./cli/render-history.ts") as typeof import("./cli/render-history.ts")),
    ...(require("./cli/patch.ts") as typeof import("./cli/patch.ts")),
    ...(require("./cli/quote.ts") as typeof import("./cli/quote.ts")),
  };
}

const PATH_HELP = "The notebook directory (default: the current directory)";

/** --since of log and agents. */
const SINCE_FLAG = { type: "string", description: "Only publications since a date (2026-11-30, 2026-11-30T14:00Z) or for a duration back (30m, 2d)", valueHint: "WHEN" } as const;

/** How a pull's result reads (and an attach's that found the store had not gone backwards). */
const PULLED = { verb: "pulled", upToDate: (dir: string, g: number) => `pulled ${dir}: up to date at generation ${g}` };

/** What a pull did, for the line that says so when its answer could not be written. */
const pulledTo = (r: { path: string; generation: number }) => `${cli().quotePath(r.path)} was pulled to generation ${r.generation}`;

/** Requests of each kind doctor times: enough for a p50, and a p99 that is the slowest of 20. */
const DOCTOR_SAMPLES = 20;
const DOCTOR_MAX_SAMPLES = 1_000;

/** An entry, with its input and result types inferred from it. */
function defineOperation<I, R>(operation: Operation<I, R>): Operation<I, R> {
  return operation;
}

/** --adopt of a first pull (pull, init PATH): the caller's yes to publishing a directory's files that are nothing of the notebook's. */
const ADOPT_FLAG = {
  type: "boolean",
  description: "Publish the files already in PATH, a directory that was never a checkout, with the next commit (refused without it when none is in the notebook)",
} as const;

/** Every operation, in the order help lists them. */
export const OPERATIONS: readonly Operation[] = [
  defineOperation({
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
      const { initNotebook } = await import("../engine/init.ts");
      const { tmpdir } = await import("node:os");
      const path = input.path === undefined ? null : ctx.notebookPath(input.path);
      // A PATH a first pull would refuse (files that are nothing of the notebook's) is refused before anything is published.
      if (path !== null && ctx.refuseForeign) {
        await refuseForeignDirectory(path, ctx.engine, { kind: "argument refusal", what: `init PATH "${path}"`, advice: "pass --adopt" });
      }
      // Its scratch checkout is made in the system's temporary directory, away from every checkout.
      const layout = await initNotebook(ctx.engine(), { scratchParent: tmpdir() });
      if (path === null) return { ...layout, pulled: null };
      const { pull } = await import("../engine/pull.ts");
      return { ...layout, pulled: withIgnored(await pull(ctx.engine(), { path }), ctx.sets) };
    },
    renderTo: "stderr",
    render(r) {
      const { plural, renderDiffstat } = cli();
      const names = (paths: string[]) => paths.join(", ");
      const head =
        r.published.length === 0
          ? `init: the notebook already has ${names(r.left)}; nothing published (generation ${r.generation})`
          : `init: published ${names(r.published)} at generation ${r.generation}` +
            (r.left.length > 0 ? `; left ${plural(r.left.length, "file")} the notebook already had as ${r.left.length === 1 ? "it is" : "they are"}: ${names(r.left)}` : "");
      return `${head}\n${r.pulled === null ? "" : renderDiffstat(r.pulled, PULLED) + ignoredLine(r.pulled)}`;
    },
    done: (r) => (r.published.length > 0 ? `init published ${r.published.join(", ")} at generation ${r.generation}` : undefined),
  }),

  defineOperation({
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
      const { pull } = await import("../engine/pull.ts");
      const { ForeignFiles } = await import("../engine/foreign.ts");
      const path = ctx.notebookPath(input.path);
      const pulled = await pull(ctx.engine(), { path, refuseForeign: ctx.refuseForeign }).catch((e: unknown): never => {
        if (!(e instanceof ForeignFiles)) throw e;
        throw new StartupRefusal("argument refusal", foreignRefusal(`pull PATH "${path}"`, e, "pass --adopt"));
      });
      return withIgnored(pulled, ctx.sets);
    },
    renderTo: "stderr",
    render: (r) => cli().renderDiffstat(r, PULLED) + ignoredLine(r),
    done: (r) => pulledTo(r),
  }),

  defineOperation({
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
      const { attach } = await import("../engine/pull.ts");
      const { outcome, attached, movedAside } = await attach(ctx.engine(), { path: ctx.notebookPath(input.path), replaceDamagedManifest: input.replaceDamagedManifest === true });
      return { ...successResult(outcome, ctx.sets), attached, ...(input.replaceDamagedManifest === true ? { movedAside } : {}) };
    },
    renderTo: "stderr",
    render(r) {
      const { quotePath, renderDiffstat } = cli();
      const moved =
        "movedAside" in r && r.movedAside !== null
          ? `moved the store's damaged manifest aside as ${r.movedAside}: the store is taken as emptied, and the next commit starts the notebook again under a new notebook id\n`
          : "";
      if (!r.attached) return `${moved}the store holds what this checkout was brought to: nothing to attach; pulled as usual\n${renderDiffstat(r, PULLED)}`;
      const head = `attached ${quotePath(r.path)} to the store as it is, at generation ${r.generation}: its files are local edits against it; review them with slivingdoc status, publish them with slivingdoc commit`;
      return `${moved}${head}\n${renderDiffstat(r, { verb: "merged the store's files into", upToDate: () => "no file changed on disk" })}`;
    },
    done: (r) => (r.attached ? `${cli().quotePath(r.path)} was attached to the store at generation ${r.generation}` : pulledTo(r)),
  }),

  defineOperation({
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
      const { commit } = await import("../engine/commit.ts");
      const path = ctx.notebookPath(input.path);
      return withIgnored(await commit(ctx.engine(), { path, message: input.message }), ctx.sets);
    },
    renderTo: "stderr",
    render: (r) =>
      cli().renderDiffstat(r, { verb: "committed", upToDate: (dir, g) => `nothing to publish in ${dir}; up to date at generation ${g}` }) + ignoredLine(r),
    done: (r) =>
      r.files.length > 0 ? `the commit landed at generation ${r.generation}` : `nothing was published; ${cli().quotePath(r.path)} is up to date at generation ${r.generation}`,
  }),

  defineOperation({
    cli: {
      name: "gc",
      example: "slivingdoc gc --dry-run",
      summary: "Remove packs no manifest references, older than a grace period (maintenance)",
      usage: "gc [--grace DURATION] [--dry-run] [--delete-lost]",
      flags: {
        grace: { type: "string", description: "Keep unreferenced packs younger than this: 90s, 30m, 1h, 2d (default 1h)", valueHint: "DURATION" },
        "dry-run": { type: "boolean", description: "Report what would be removed; change nothing" },
        "delete-lost": {
          type: "boolean",
          description: "After the store went backwards and its checkouts were attached to it as it is: delete the packs of the generations it lost too",
        },
      },
      path: false,
      toInput: (flags) => ({
        ...(typeof flags.grace === "string" ? { graceMs: parseDuration("grace", flags.grace) } : {}),
        dryRun: flags["dry-run"] === true,
        ...(flags["delete-lost"] === true ? { deleteLost: true } : {}),
      }),
    },
    input: objectInput("gc", { graceMs: optional(countField()), dryRun: booleanField(), deleteLost: optional(booleanField()) }),
    async run(ctx, input) {
      const { collectGarbage, DEFAULT_GRACE_MS } = await import("../engine/gc.ts");
      const deps = ctx.engine();
      const { privateRoot, storeId, memory } = deps;
      const report = await collectGarbage(
        { ...deps, local: { privateRoot, storeId, memory } },
        { graceMs: input.graceMs ?? DEFAULT_GRACE_MS, dryRun: input.dryRun, deleteLost: input.deleteLost === true },
      );
      // Counts, not keys: no S3 key appears in any output (a server's log has them if needed).
      return {
        generation: report.generation,
        referenced: report.referenced,
        deleted: report.deleted.length,
        young: report.young.length,
        onHead: report.onHead.length,
        checkoutBaselines: report.checkoutBaselines.length,
        proposals: report.proposals?.length ?? 0,
        dryRun: input.dryRun,
        ...(report.reason !== undefined ? { reason: report.reason } : {}),
      };
    },
    renderTo: "stdout",
    render(s) {
      if (s.generation === null) return "gc: the store holds no notebook; nothing to do\n";
      const verb = s.dryRun ? "would remove" : "removed";
      const busy = s.reason === "busy" ? " (publications kept winning; run again)" : "";
      const proposals = s.proposals > 0 ? `; ${verb} ${s.proposals} abandoned proposals` : "";
      const onHead = s.onHead > 0 ? ` and ${s.onHead} holding a commit on the accepted head (one in flight or one that died before publishing, or a generation the store lost)` : "";
      const brought =
        s.checkoutBaselines > 0
          ? ` and ${s.checkoutBaselines} holding what a checkout under this private root was brought to, which the store's history no longer holds (a generation it lost)`
          : "";
      return `gc: generation ${s.generation}, ${s.referenced} packs referenced; ${verb} ${s.deleted} unreferenced packs, kept ${s.young} younger than the grace period${onHead}${brought}${proposals}${busy}\n`;
    },
    done: (s) => (s.dryRun ? undefined : `gc removed ${s.deleted} unreferenced packs and ${s.proposals} abandoned proposals`),
  }),

  defineOperation({
    cli: {
      name: "generation",
      example: "slivingdoc generation",
      writesNothing: true,
      summary: "Print the accepted generation of the notebook (reads the store only)",
      usage: "generation",
      flags: {},
      path: false,
      toInput: () => ({}),
    },
    input: objectInput("generation", {}),
    async run(ctx) {
      const { acceptedGeneration } = await import("../engine/generation.ts");
      return { generation: await acceptedGeneration({ store: ctx.store }) };
    },
    renderTo: "stdout",
    render: (r) => `generation ${r.generation}\n`,
  }),

  defineOperation({
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
      const { historyLog } = await import("../engine/history/log.ts");
      return await historyLog(ctx.engine(), {
        ...(input.limit !== undefined ? { limit: input.limit } : {}),
        ...(input.sinceMs !== undefined ? { since: new Date(input.sinceMs) } : {}),
        ...(input.paths !== undefined ? { paths: input.paths } : {}),
      });
    },
    renderTo: "stdout",
    // The rule above admits only LogView values.
    render: (r, input) => cli().renderLog(r, input.view as LogView | undefined),
  }),

  defineOperation({
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
      const { historyAgents } = await import("../engine/history/agents.ts");
      return await historyAgents(ctx.engine(), input.sinceMs !== undefined ? { since: new Date(input.sinceMs) } : {});
    },
    renderTo: "stdout",
    render: (r) => cli().renderAgents(r),
  }),

  defineOperation({
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
      const { showGeneration } = await import("../engine/history/log.ts");
      const { entry, changes } = await showGeneration(ctx.engine(), { generation: input.generation, ...(input.paths !== undefined ? { paths: input.paths } : {}) });
      if (input.stat || changes === null) return entry as ShownEntry;
      const { unifiedHunks } = await import("../engine/merge/xdiff/unified.ts");
      const { filePatch } = cli();
      const patch = changes.map((c) => filePatch({ ...c, change: c.status, hunks: unifiedHunks(c.beforeText, c.afterText) })).join("");
      return { ...entry, patch } as ShownEntry;
    },
    // The patch is data for a pipe, as diff's is (`show 12 > x.patch`); the entry stays on stderr.
    // With --stat there is no patch: the entry is the answer.
    renderTo: (r) => (r.patch === undefined ? "stdout" : "stderr"),
    renderStdout: (r) => r.patch ?? "",
    render: (r) => cli().renderShow(r),
  }),

  defineOperation({
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
      const { historyBlame } = await import("../engine/history/blame.ts");
      return await historyBlame(ctx.engine(), { path: input.path, ...(input.generation !== undefined ? { generation: input.generation } : {}) });
    },
    renderTo: "stdout",
    render: (r) => cli().renderBlame(r),
  }),

  defineOperation({
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
      const { exportHistory, ExportRefused } = await import("../engine/history/export.ts");
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
    renderTo: "stdout",
    render: (r) => {
      const { quotePath } = cli();
      return r.generation === 0
        ? "export: the store holds no notebook yet; nothing written\n"
        : `exported generations ${r.oldestRetained}–${r.generation} to ${quotePath(r.directory)}: ${r.added} new publications, ${r.objects} objects` +
          `${r.shallow ? ` (shallow: generation ${r.oldestRetained}'s parent is older than the retained history)` : ""}\n` +
          `  read it with: git -C ${quotePath(r.directory)} log --stat\n`;
    },
    done: (r) => (r.generation === 0 ? undefined : `generations ${r.oldestRetained}–${r.generation} were exported to ${cli().quotePath(r.directory)}`),
  }),

  defineOperation({
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
      const { readLocalChanges } = await import("../engine/local-changes.ts");
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
    renderTo: "stdout",
    render(r) {
      const { plural, quotePath } = cli();
      const lines = [`status of ${quotePath(r.path)}: ${behindLine(r)}`];
      if (r.interrupted) lines.push("an interrupted pull or commit is not yet repaired: the next pull or commit repairs it first");
      if (r.files.length === 0) lines.push("nothing to publish: the files agree with the baseline");
      else {
        lines.push(`a commit would publish ${plural(r.files.length, "file")}:`);
        for (const f of r.files) lines.push(`  ${f.change.padEnd(8)} ${quotePath(f.path)} | +${f.insertions} -${f.deletions}`);
      }
      if (r.unresolved.length > 0) {
        lines.push("unresolved conflict markers (commit refuses them: UNRESOLVED_MARKERS):");
        for (const m of r.unresolved) lines.push(`  ${quotePath(m.path)} · lines ${m.ranges.map((x) => `${x.start}-${x.end}`).join(", ")}`);
      }
      if (r.readOnlyChanges.length > 0) {
        lines.push("changed under read-only paths (commit refuses and resets them: READ_ONLY_PATH):");
        for (const p of r.readOnlyChanges) lines.push(`  ${quotePath(p)}`);
      }
      if (r.ignored.length > 0) {
        lines.push(`ignored, never published (.gitignore or the built-in list): ${plural(r.ignored.length, "entry", "entries")}`);
        lines.push(...cli().pathLines(r.ignored));
      }
      return `${lines.join("\n")}\n`;
    },
  }),

  defineOperation({
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
      const { readLocalChanges } = await import("../engine/local-changes.ts");
      const { unifiedHunks } = await import("../engine/merge/xdiff/unified.ts");
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
      const { filePatch, renderStat } = cli();
      const patch = input.stat ? renderStat(files) : files.map(filePatch).join("");
      return Object.assign(result, { [PATCH]: patch });
    },
    // stdout is the patch alone; "no changes" is a note beside it, as an empty patch says nothing.
    renderTo: "stderr",
    renderStdout: (r) => r[PATCH],
    render(r) {
      if (r.files.length === 0) return `no changes in ${cli().quotePath(r.path)}: ${behindLine(r)}\n`;
      return "";
    },
  }),

  defineOperation({
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
      const { restore } = await import("../engine/restore.ts");
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
    renderTo: "stdout",
    render(r) {
      const { fileStatLines, plural, quotePath } = cli();
      const lines: string[] = [];
      if (r.files.length === 0) lines.push(`restore: ${quotePath(r.path)} already holds generation ${r.from}'s version; nothing changed`);
      else {
        lines.push(
          `restored ${plural(r.filesChanged, "file")} from generation ${r.from} into ${quotePath(r.path)}: ${plural(r.insertions, "insertion")}(+), ${plural(r.deletions, "deletion")}(-)`,
        );
        lines.push(...fileStatLines(r.files));
        lines.push("these are local edits: review them with slivingdoc diff, publish them with slivingdoc commit");
      }
      if (r.skipped.length > 0) lines.push(`left as they are (paths this process may not change): ${r.skipped.map(quotePath).join(", ")}`);
      return `${lines.join("\n")}\n`;
    },
    done: (r) => `${r.files.length} files were restored from generation ${r.from} into ${cli().quotePath(r.path)}`,
  }),

  defineOperation({
    cli: {
      name: "doctor",
      example: "slivingdoc doctor --samples 50 --deadline 2m",
      examinesStore: true,
      summary: "Examine the configured store: permissions, conditional writes, latency, write rate, clock skew, and the settings it calls for (operators)",
      usage: "doctor [--samples N]",
      flags: {
        samples: { type: "string", description: `Requests of each kind timed (default ${DOCTOR_SAMPLES}, at most ${DOCTOR_MAX_SAMPLES})`, valueHint: "N" },
      },
      path: false,
      toInput: (flags) => (typeof flags.samples === "string" ? { samples: parseCount("--samples", flags.samples, 1, `a whole number from 1 to ${DOCTOR_MAX_SAMPLES}`, DOCTOR_MAX_SAMPLES) } : {}),
    },
    input: objectInput("doctor", { samples: optional(countField()) }),
    async run(ctx, input) {
      const started = performance.now();
      const { examineStore } = await import("../store/doctor.ts");
      const { judge } = await import("./doctor.ts");
      const { DEFAULT_COMMIT_RETRIES } = await import("../engine/engine.ts");
      const { notebookFacts } = await import("./doctor-notebook.ts");
      const { SYSTEM_CLOCK } = await import("./system-clock.ts");
      const exam = await examineStore(ctx.store, { deadline: ctx.deadline, samples: input.samples ?? DOCTOR_SAMPLES, clock: SYSTEM_CLOCK });
      const notebook = await notebookFacts(ctx.store);
      return judge(exam, { commitRetries: ctx.commitRetries ?? DEFAULT_COMMIT_RETRIES, deadlineMs: ctx.deadline.ms }, performance.now() - started, notebook);
    },
    renderTo: "stdout",
    render: (r) => (require("./cli/render-doctor.ts") as typeof import("./cli/render-doctor.ts")).renderDoctor(r),
    // As at a start that would refuse the store: a script's `doctor && …` stops there.
    exitCode: (r) => (r.verdict === "unusable" ? EXIT_CODES.STARTUP : EXIT_CODES.OK),
  }),
];

/** A whole number on the command line, `min` or more, or the start-up refusal naming it and saying what it must be. */
function parseCount(name: string, value: string | boolean | undefined, min = 0, what = "a whole number", max = Number.MAX_SAFE_INTEGER): number {
  if (typeof value !== "string" || !/^\d{1,15}$/.test(value) || Number(value) < min || Number(value) > max) {
    throw new StartupRefusal("argument refusal", `${name} must be ${what}; got "${String(value ?? "").slice(0, 40)}"`);
  }
  return Number(value);
}

/**
 * Refuses, as `refusal` says, a directory a first pull would refuse (engine/foreign.ts: files,
 * never a checkout, nothing of the notebook's), found before the caller changes anything:
 * `init PATH` and serve's --workspace-root. An absent or empty directory needs no look at the
 * engine, so `deps` are made only when there are files.
 */
export async function refuseForeignDirectory(dir: string, deps: () => EngineDeps, refusal: { kind: RefusalKind; what: string; advice: string }): Promise<void> {
  const { existsSync, readdirSync, realpathSync } = await import("node:fs");
  if (!existsSync(dir) || readdirSync(dir).length === 0) return;
  const { foreignFiles } = await import("../engine/foreign.ts");
  const foreign = await foreignFiles(deps(), realpathSync(dir));
  if (foreign !== null) throw new StartupRefusal(refusal.kind, foreignRefusal(refusal.what, foreign, refusal.advice));
}

/** log's view, as the CLI sets it from --oneline or --stat. */
function logView(value: string, name: string): LogView {
  if (value === "default" || value === "stat" || value === "oneline") return value;
  throw new DomainError("MALFORMED_INPUT", `${name} must be default, stat or oneline.`);
}

/** --path a,b of log and show: notebook paths, checked like the path sets. */
function pathsInput(flags: Record<string, string | boolean>): { paths?: string[] } {
  return typeof flags.path === "string" ? { paths: parsePathSet("--path", flags.path) } : {};
}


/** The whole patch of a diff, kept off the result's JSON (a symbol key): its index lines carry blob ids, which no result does. */
const PATCH = Symbol("patch");

/**
 * How many entries the ignore rules left out, carried beside a pull's or a
 * commit's result for the CLI's summary only: a symbol key, which no JSON
 * result (the tools', or --json) carries.
 */
const IGNORED = Symbol("ignored");

function withIgnored(outcome: OperationOutcome, sets: PathSets): SuccessResult & { [IGNORED]: number } {
  return Object.assign(successResult(outcome, sets), { [IGNORED]: outcome.ignored ?? 0 });
}

function ignoredLine(r: { [IGNORED]: number }): string {
  const n = r[IGNORED];
  return n === 0 ? "" : `ignored, not published: ${cli().plural(n, "entry", "entries")} (.gitignore or the built-in list; slivingdoc status lists them)\n`;
}

/** Where the checkout stands against the store, in a line. */
function behindLine(r: { generation: number; accepted?: number | null; behind: number | null; behindUnknown?: string | null }): string {
  const { plural } = cli();
  if (r.behind === null) return `at generation ${r.generation}; behind: unknown (${r.behindUnknown ?? "the store could not be read"})`;
  if (r.behind === 0) return `at generation ${r.generation}, the accepted one`;
  return `at generation ${r.generation}, ${plural(r.behind, "generation")} behind the accepted ${r.accepted} (pull brings them in)`;
}

export function operationByCli(name: string): Operation | undefined {
  return OPERATIONS.find((op) => op.cli.name === name);
}

/** The MCP tools, in TOOL_NAMES order: exactly notes_pull and notes_commit. */
export function operationByTool(name: ToolName): Operation & { tool: NonNullable<Operation["tool"]> } {
  const op = OPERATIONS.find((o) => o.tool?.name === name);
  if (op === undefined) throw new Error(`no operation is the tool ${name}`);
  return op as Operation & { tool: NonNullable<Operation["tool"]> };
}

/** A tool's description, with the path-set sentences of this process (mcp-tools.md "Tool descriptions"). */
export function toolDescription(name: ToolName, sets: PathSets): string {
  return withSentences(operationByTool(name).tool.description, sets);
}

/** What tools/list answers. */
export function toolList(sets: PathSets) {
  return TOOL_NAMES.map((name) => ({
    name,
    description: toolDescription(name, sets),
    inputSchema: operationByTool(name).input.jsonSchema(),
    annotations: TOOL_ANNOTATIONS[name],
  }));
}

/**
 * The refusal of a first pull into a directory of files that are nothing
 * of the notebook's (engine/foreign.ts), `what` naming the directory and
 * `adopt` the way to take them anyway: how many files it holds, and why
 * they are not pulled over.
 */
export function foreignRefusal(what: string, e: { count: number; notebookEmpty: boolean }, adopt: string): string {
  const files = e.count === 1 ? "1 file" : `${e.count} files`;
  const matched = e.notebookEmpty ? "the store holds no notebook yet" : `${e.count === 1 ? "it is not" : "none of them is"} in the notebook's retained history`;
  const seed = e.notebookEmpty ? " (they begin the notebook)" : "";
  return (
    `${what} holds ${files} and was never a checkout, and ${matched}: pulled into, every one would be a local edit that the next commit publishes. ` +
    `Use an empty directory, or ${adopt} if these files are yours to publish${seed}`
  );
}
