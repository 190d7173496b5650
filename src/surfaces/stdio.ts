/**
 * The process's standard streams, through Bun's own stdin stream and file
 * sinks rather than Node's `process.stdin`, `process.stdout` and
 * `process.stderr`: the first touch of any of those builds Node's stream and
 * tty machinery, about 9 ms of CPU at every start — more than the rest of
 * answering MCP `initialize` together (docs/performance.md, scenario `start-up`). The same
 * holds for `isTTY`, so terminal checks load node:tty only when asked.
 */

/** Text written in order; `flush` resolves when all of it has reached the descriptor, and rejects with the first write's failure. */
export interface TextSink {
  write(text: string): void;
  flush(): Promise<void>;
}

/** A Bun file sink over stdout or stderr. Each write is pushed out at once; a full pipe buffers in order. */
export function textSink(file: typeof Bun.stdout): TextSink {
  const sink = file.writer();
  let pending: Promise<unknown> = Promise.resolve();
  // A failed write (the reader went away: EPIPE; a full disk: ENOSPC) is reported by the next flush, never as an
  // unhandled rejection: the sink fails synchronously, or, for a text larger than its buffer, through the promise
  // its write returns, which nothing else would catch (the process would crash with a stack trace).
  let failure: { error: unknown } | null = null;
  const fail = (error: unknown) => {
    failure ??= { error };
  };
  const follow = (result: number | Promise<number>) => {
    if (typeof result !== "number") pending = Promise.all([pending, result.catch(fail)]);
  };
  return {
    write(text) {
      // After a failed write the descriptor takes nothing more: the rest would be lost or torn all the same.
      if (failure !== null) return;
      try {
        follow(sink.write(text));
        follow(sink.flush());
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
