/**
 * Progress of long work (a cold pull of a large notebook) on a terminal only
 * (docs/decisions/0015-the-cli-refuses-what-it-does-not-know.md): never in
 * --json output, a pipe, or over MCP.
 */
export function terminalProgress(io: { stderrIsTTY?: boolean; stderr: (text: string) => void }, json: boolean): {
  hooks: { afterWrite?: () => void; progress?: (what: string, done: number, total: number) => void };
  done: () => void;
} {
  // Asked only once there is progress to show: finding out loads node:tty,
  // which a short call (a no-change pull) would otherwise pay for every time.
  let terminal: boolean | undefined;
  const onTerminal = () => (terminal ??= !json && io.stderrIsTTY === true);
  let written = 0;
  let shown = false;
  let last = 0;
  return {
    hooks: {
      // At most ten lines a second, and only for work long enough to need one.
      progress: (what, done, total) => {
        const now = Date.now();
        if (total < 1000 || (now - last < 100 && done < total) || !onTerminal()) return;
        last = now;
        io.stderr(`\r${what}: ${done} of ${total}…`);
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
