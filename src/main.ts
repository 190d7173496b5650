#!/usr/bin/env bun
/**
 * The binary's entry, and the only place that exits the process.
 *
 * The standard streams are Bun's (surfaces/stdio.ts): Node's process.stdin,
 * process.stdout and process.stderr cost ~9 ms of every start on first touch.
 */
import pkg from "../package.json" with { type: "json" };
import { runCli } from "./surfaces/cli/run.ts";
import { rawUserArgs } from "./surfaces/cli/raw-argv.ts";
import { isTerminal, textSink } from "./surfaces/stdio.ts";

const stdout = textSink(Bun.stdout);
const stderr = textSink(Bun.stderr);
const code = await runCli({
  argv: process.argv.slice(2),
  rawArgv: () => rawUserArgs(process.argv.slice(2)),
  env: process.env,
  cwd: process.cwd(),
  stdout: (text) => stdout.write(text),
  stderr: (text) => stderr.write(text),
  stdoutWritten: () => stdout.flush(),
  version: pkg.version,
  get stdoutIsTTY() {
    return isTerminal(1);
  },
  get stderrIsTTY() {
    return isTerminal(2);
  },
  // Read only for help: touching process.stdout costs every start otherwise.
  get columns() {
    return isTerminal(1) ? process.stdout.columns : undefined;
  },
  protocol: () => ({ input: Bun.stdin.stream(), output: stdout }),
});
// Whatever is still buffered for a full pipe goes out before the exit. A failed write to stdout was answered by
// runCli; one to stderr has nowhere left to be told.
await Promise.allSettled([stdout.flush(), stderr.flush()]);
process.exitCode = code;
