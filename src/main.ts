#!/usr/bin/env bun
/**
 * The binary's entry, and the only place that exits the process.
 */
import pkg from "../package.json" with { type: "json" };
import { runCli } from "./surfaces/cli/commands.ts";

const code = await runCli({
  argv: process.argv.slice(2),
  env: process.env,
  cwd: process.cwd(),
  stdout: (text) => process.stdout.write(text),
  stderr: (text) => process.stderr.write(text),
  version: pkg.version,
  stdoutIsTTY: process.stdout.isTTY === true,
  stderrIsTTY: process.stderr.isTTY === true,
  stdin: process.stdin,
  stdoutStream: process.stdout,
});
process.exitCode = code;
