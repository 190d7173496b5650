/**
 * Progress of long work (a cold pull or a commit of a large notebook) on a
 * terminal only (docs/decisions/0015-the-cli-refuses-what-it-does-not-know.md):
 * never in --json output, a pipe, or over MCP.
 */

/** The stages a person is told of, in their words; the others pass too quickly to name. */
const STAGE_WORDS: Record<string, string> = {
  scan: "scanning the notebook",
  fetch: "reading the accepted state",
  merge: "merging",
  pack: "packing",
  upload: "uploading",
  publish: "publishing",
  materialize: "writing files",
};

/** A call of this many files, or one running this long, is shown its stages. */
const MANY_FILES = 2000;
const LONG_MS = 1000;
export function terminalProgress(io: { stderrIsTTY?: boolean; stderr: (text: string) => void }, json: boolean, now: () => number = Date.now): {
  hooks: { afterWrite?: () => void; progress?: (what: string, done: number, total: number) => void; onStage?: (stage: string) => void };
  done: () => void;
} {
  // Asked only once there is progress to show: finding out loads node:tty,
  // which a short call (a no-change pull) would otherwise pay for every time.
  let terminal: boolean | undefined;
  const onTerminal = () => (terminal ??= !json && io.stderrIsTTY === true);
  let written = 0;
  let shown = false;
  let last = 0;
  let many = false;
  const started = now();
  return {
    hooks: {
      // Each stage of a big or slow call, on the line the counts use.
      onStage: (stage) => {
        const words = STAGE_WORDS[stage];
        if (words === undefined || (!many && now() - started < LONG_MS) || !onTerminal()) return;
        io.stderr(`\r\x1b[K${words}…`);
        shown = true;
      },
      // At most ten lines a second, and only for work long enough to need one.
      progress: (what, done, total) => {
        if (total >= MANY_FILES) many = true;
        const at = now();
        if (total < 1000 || (at - last < 100 && done < total) || !onTerminal()) return;
        last = at;
        io.stderr(`\r\x1b[K${what}: ${done} of ${total}…`);
        shown = true;
      },
      afterWrite: () => {
        written++;
        if (written % 200 === 0 && onTerminal()) {
          io.stderr(`\r${written} files written…`);
          shown = true;
        }
      },
    },
    done: () => {
      if (shown) io.stderr("\r\x1b[K");
    },
  };
}
