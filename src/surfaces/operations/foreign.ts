/**
 * A directory a first pull would refuse (engine/foreign.ts: files, never a
 * checkout, nothing of the notebook's), and the words of that refusal: for
 * pull and `init PATH` on the command line, and serve's --workspace-root.
 */
import { type RefusalKind, StartupRefusal } from "../../contract/startup.ts";
import type { EngineDeps } from "../../engine/engine.ts";

/**
 * Refuses, as `refusal` says, a directory a first pull would refuse,
 * found before the caller changes anything: `init PATH` and serve's
 * --workspace-root. An absent or empty directory needs no look at the
 * engine, so `deps` are made only when there are files.
 */
export async function refuseForeignDirectory(dir: string, deps: () => EngineDeps, refusal: { kind: RefusalKind; what: string; advice: string }): Promise<void> {
  const { existsSync, readdirSync, realpathSync } = await import("node:fs");
  if (!existsSync(dir) || readdirSync(dir).length === 0) return;
  const { foreignFiles } = await import("../../engine/foreign.ts");
  const foreign = await foreignFiles(deps(), realpathSync(dir));
  if (foreign !== null) throw new StartupRefusal(refusal.kind, foreignRefusal(refusal.what, foreign, refusal.advice));
}

/**
 * The refusal of a first pull into a directory of files that are nothing
 * of the notebook's, `what` naming the directory and `adopt` the way to
 * take them anyway: how many files it holds, and why they are not pulled
 * over.
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
