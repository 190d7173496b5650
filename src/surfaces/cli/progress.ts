/**
 * Progress of long work (a cold pull of a large notebook) on a terminal only
 * (docs/design.md, CLI conventions): never in --json output, a pipe, or over
 * MCP.
 */
export function terminalProgress(io: { stderrIsTTY?: boolean; stderr: (text: string) => void }): { hooks: { afterWrite?: () => void }; done: () => void } {
  if (io.stderrIsTTY !== true) return { hooks: {}, done: () => {} };
  let written = 0;
  let shown = false;
  return {
    hooks: {
      afterWrite: () => {
        written++;
        if (written % 200 === 0) {
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
