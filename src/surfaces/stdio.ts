/**
 * The process's standard streams, through Bun's own stdin stream and file
 * sinks rather than Node's `process.stdin`, `process.stdout` and
 * `process.stderr`: the first touch of any of those builds Node's stream and
 * tty machinery, about 9 ms of CPU at every start — more than the rest of
 * answering MCP `initialize` together (docs/performance.md, S8). The same
 * holds for `isTTY`, so terminal checks load node:tty only when asked.
 */

/** Text written in order; `flush` resolves when all of it has reached the descriptor. */
export interface TextSink {
  write(text: string): void;
  flush(): Promise<void>;
}

/** A Bun file sink over stdout or stderr. Each write is pushed out at once; a full pipe buffers in order. */
export function textSink(file: typeof Bun.stdout): TextSink {
  const sink = file.writer();
  let pending: Promise<unknown> = Promise.resolve();
  // A failed write (the reader went away: EPIPE) is reported by the next flush, never as an unhandled rejection.
  let failure: { error: unknown } | null = null;
  const fail = (error: unknown) => {
    failure ??= { error };
  };
  return {
    write(text) {
      try {
        sink.write(text);
        const flushed = sink.flush();
        if (typeof flushed !== "number") pending = Promise.all([pending, flushed.catch(fail)]);
      } catch (error) {
        fail(error);
      }
    },
    async flush() {
      await pending;
      if (failure) throw failure.error;
    },
  };
}

/** Whether a descriptor is a terminal, loading node:tty only when asked (it costs ~3 ms). */
export function isTerminal(fd: 0 | 1 | 2): boolean {
  return (require("node:tty") as typeof import("node:tty")).isatty(fd);
}
