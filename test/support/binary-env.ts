/**
 * The built binary run as a user of its own would run it: a home, data and
 * state directories of one name under the test's root, no store named by
 * the environment (each test names its own), and its answer captured.
 */
import { join } from "node:path";
import { BINARY, requireBinary } from "./mcp.ts";

/** The environment of a user called `name` under `root`: the process's, with a home, data and state of its own and no store set. */
export function userEnv(root: string, name: string): Record<string, string> {
  const home = join(root, name);
  return {
    ...(process.env as Record<string, string>),
    HOME: join(home, "home"),
    XDG_DATA_HOME: join(home, "data"),
    XDG_STATE_HOME: join(home, "state"),
    SLIVINGDOC_STORE: "",
    S3_BUCKET: "",
  };
}

/** `slivingdoc ARGS` with `env`, stdin closed: its exit code and both streams. */
export async function runAs(env: Record<string, string>, ...args: string[]): Promise<{ stdout: string; stderr: string; code: number }> {
  requireBinary();
  const p = Bun.spawn([BINARY, ...args], { env, stdout: "pipe", stderr: "pipe", stdin: "ignore" });
  const [stdout, stderr, code] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited]);
  return { stdout, stderr, code };
}
