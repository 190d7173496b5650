/**
 * How a person reads each operation's result on the command line, found by
 * the operation's name: the registry's entries (operations.ts) hold no
 * rendering, so `serve`, which runs them and renders nothing, loads none of
 * this. A renderer says where its text goes, the text, what goes on stdout
 * beside it, what the command did (for the line a failed write of the
 * answer leaves) and the exit code of a success. `--json` prints the
 * result object instead of all of it.
 */
import { EXIT_CODES } from "../../contract/tokens.ts";
import type { OperationName, OPERATIONS_BY_NAME } from "../operations.ts";
import { IGNORED } from "../operations/notebook.ts";
import { PATCH_FILES } from "../operations/local.ts";
import type { LogView } from "../operations/history.ts";
import { filePatch } from "../patch.ts";
import { renderStat } from "./diffstat.ts";
import { renderDoctor } from "./render-doctor.ts";
import { renderAgents, renderBlame, renderLog, renderShow } from "./render-history.ts";
import { fileStatLines, pathLines, plural, renderDiffstat } from "./render.ts";
import { quotePath } from "./quote.ts";

/** How one operation's success reads without `--json`. */
export interface Renderer<I = any, R = any> {
  /**
   * Where `render`'s text goes. "stdout" when it is the command's answer,
   * what `| grep` or `$(…)` wants (log, status, generation…), as in git and
   * the AWS CLI; "stderr" when it reports on work done (pull's and commit's
   * summaries) or is a note beside data on stdout (show's entry before its
   * patch). Every renderer decides, so a new one cannot fall to stderr
   * unnoticed.
   */
  renderTo: "stdout" | "stderr" | ((result: R) => "stdout" | "stderr");
  /** The human output of a success; `input` says how a person asked to read it (log's --oneline). */
  render(result: R, input: I): string;
  /**
   * What a success writes on stdout after `render`'s text: data meant for
   * a pipe (diff's patch), not a report.
   */
  renderStdout?(result: R): string;
  /**
   * What a success did, in a few words (names quoted as human output
   * quotes them), for an operation that changes something ("the commit
   * landed at generation 7"): the CLI says it even when the answer could
   * not be written to stdout (a full disk).
   */
  done?(result: R): string | undefined;
  /** The exit code of a success, where it is not 0 (doctor's verdict that the store is not usable). */
  exitCode?(result: R): number;
}

type Entries = typeof OPERATIONS_BY_NAME;
type InputOf<N extends OperationName> = Parameters<Entries[N]["run"]>[1];
type ResultOf<N extends OperationName> = Awaited<ReturnType<Entries[N]["run"]>>;
type RendererOf<N extends OperationName> = Renderer<InputOf<N>, ResultOf<N>>;

/** How a pull's result reads (and an attach's that found the store had not gone backwards). */
const PULLED = { verb: "pulled", upToDate: (dir: string, g: number) => `pulled ${dir}: up to date at generation ${g}` };

/** What a pull did, for the line that says so when its answer could not be written. */
const pulledTo = (r: { path: string; generation: number }) => `${quotePath(r.path)} was pulled to generation ${r.generation}`;

function ignoredLine(r: { [IGNORED]: number }): string {
  const n = r[IGNORED];
  return n === 0 ? "" : `ignored, not published: ${plural(n, "entry", "entries")} (.gitignore or the built-in list; slivingdoc status lists them)\n`;
}

/** Where the checkout stands against the store, in a line. */
function behindLine(r: { generation: number; accepted?: number | null; behind: number | null; behindUnknown?: string | null }): string {
  if (r.behind === null) return `at generation ${r.generation}; behind: unknown (${r.behindUnknown ?? "the store could not be read"})`;
  if (r.behind === 0) return `at generation ${r.generation}, the accepted one`;
  return `at generation ${r.generation}, ${plural(r.behind, "generation")} behind the accepted ${r.accepted} (pull brings them in)`;
}

const init: RendererOf<"init"> = {
  renderTo: "stderr",
  render(r) {
    const names = (paths: string[]) => paths.join(", ");
    const head =
      r.published.length === 0
        ? `init: the notebook already has ${names(r.left)}; nothing published (generation ${r.generation})`
        : `init: published ${names(r.published)} at generation ${r.generation}` +
          (r.left.length > 0 ? `; left ${plural(r.left.length, "file")} the notebook already had as ${r.left.length === 1 ? "it is" : "they are"}: ${names(r.left)}` : "");
    return `${head}\n${r.pulled === null ? "" : renderDiffstat(r.pulled, PULLED) + ignoredLine(r.pulled)}`;
  },
  done: (r) => (r.published.length > 0 ? `init published ${r.published.join(", ")} at generation ${r.generation}` : undefined),
};

const pull: RendererOf<"pull"> = {
  renderTo: "stderr",
  render: (r) => renderDiffstat(r, PULLED) + ignoredLine(r),
  done: (r) => pulledTo(r),
};

const attach: RendererOf<"attach"> = {
  renderTo: "stderr",
  render(r) {
    const moved =
      "movedAside" in r && r.movedAside !== null
        ? `moved the store's damaged manifest aside as ${r.movedAside}: the store is taken as emptied, and the next commit starts the notebook again under a new notebook id\n`
        : "";
    if (!r.attached) return `${moved}the store holds what this checkout was brought to: nothing to attach; pulled as usual\n${renderDiffstat(r, PULLED)}`;
    const head = `attached ${quotePath(r.path)} to the store as it is, at generation ${r.generation}: its files are local edits against it; review them with slivingdoc status, publish them with slivingdoc commit`;
    return `${moved}${head}\n${renderDiffstat(r, { verb: "merged the store's files into", upToDate: () => "no file changed on disk" })}`;
  },
  done: (r) => (r.attached ? `${quotePath(r.path)} was attached to the store at generation ${r.generation}` : pulledTo(r)),
};

const commit: RendererOf<"commit"> = {
  renderTo: "stderr",
  render: (r) => renderDiffstat(r, { verb: "committed", upToDate: (dir, g) => `nothing to publish in ${dir}; up to date at generation ${g}` }) + ignoredLine(r),
  done: (r) =>
    r.files.length > 0 ? `the commit landed at generation ${r.generation}` : `nothing was published; ${quotePath(r.path)} is up to date at generation ${r.generation}`,
};

const gc: RendererOf<"gc"> = {
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
};

const exportRenderer: RendererOf<"export"> = {
  renderTo: "stdout",
  render: (r) =>
    r.generation === 0
      ? "export: the store holds no notebook yet; nothing written\n"
      : `exported generations ${r.oldestRetained}–${r.generation} to ${quotePath(r.directory)}: ${r.added} new publications, ${r.objects} objects` +
        `${r.shallow ? ` (shallow: generation ${r.oldestRetained}'s parent is older than the retained history)` : ""}\n` +
        `  read it with: git -C ${quotePath(r.directory)} log --stat\n`,
  done: (r) => (r.generation === 0 ? undefined : `generations ${r.oldestRetained}–${r.generation} were exported to ${quotePath(r.directory)}`),
};

/** Lines of what status found beyond the files to publish: markers, read-only changes, ignored entries. */
function statusFindings(r: ResultOf<"status">): string[] {
  const lines: string[] = [];
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
    lines.push(...pathLines(r.ignored));
  }
  return lines;
}

const status: RendererOf<"status"> = {
  renderTo: "stdout",
  render(r) {
    const lines = [`status of ${quotePath(r.path)}: ${behindLine(r)}`];
    if (r.interrupted) lines.push("an interrupted pull or commit is not yet repaired: the next pull or commit repairs it first");
    if (r.files.length === 0) lines.push("nothing to publish: the files agree with the baseline");
    else {
      lines.push(`a commit would publish ${plural(r.files.length, "file")}:`);
      for (const f of r.files) lines.push(`  ${f.change.padEnd(8)} ${quotePath(f.path)} | +${f.insertions} -${f.deletions}`);
    }
    lines.push(...statusFindings(r));
    return `${lines.join("\n")}\n`;
  },
};

const diff: RendererOf<"diff"> = {
  // stdout is the patch alone; "no changes" is a note beside it, as an empty patch says nothing.
  renderTo: "stderr",
  renderStdout: (r) => (r.stat ? renderStat(r.files) : r[PATCH_FILES].map(filePatch).join("")),
  render(r) {
    if (r.files.length === 0) return `no changes in ${quotePath(r.path)}: ${behindLine(r)}\n`;
    return "";
  },
};

const restore: RendererOf<"restore"> = {
  renderTo: "stdout",
  render(r) {
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
  done: (r) => `${r.files.length} files were restored from generation ${r.from} into ${quotePath(r.path)}`,
};

/** Every operation's renderer, by the operation's name: one each, and none for a name the registry does not hold. */
export const RENDERERS: { readonly [N in OperationName]: RendererOf<N> } = {
  init,
  pull,
  attach,
  commit,
  gc,
  generation: { renderTo: "stdout", render: (r) => `generation ${r.generation}\n` },
  // The input's rule admits only LogView values.
  log: { renderTo: "stdout", render: (r, input) => renderLog(r, input.view as LogView | undefined) },
  agents: { renderTo: "stdout", render: (r) => renderAgents(r) },
  show: {
    // The patch is data for a pipe, as diff's is (`show 12 > x.patch`); the entry stays on stderr.
    // With --stat there is no patch: the entry is the answer.
    renderTo: (r) => (r.patch === undefined ? "stdout" : "stderr"),
    renderStdout: (r) => r.patch ?? "",
    render: (r) => renderShow(r),
  },
  blame: { renderTo: "stdout", render: (r) => renderBlame(r) },
  export: exportRenderer,
  status,
  diff,
  restore,
  doctor: {
    renderTo: "stdout",
    render: (r) => renderDoctor(r),
    // As at a start that would refuse the store: a script's `doctor && …` stops there.
    exitCode: (r) => (r.verdict === "unusable" ? EXIT_CODES.STARTUP : EXIT_CODES.OK),
  },
};

/** The renderer of the operation the command line named. */
export function rendererOf(name: string): Renderer {
  const renderer = (RENDERERS as Record<string, Renderer>)[name];
  if (renderer === undefined) throw new Error(`no renderer for the operation ${name}`);
  return renderer;
}
