/**
 * `serve`'s session directory: without --workspace-root the server makes a
 * fresh `$TMPDIR/slivingdoc-XXXXXX/` whose `notebook/` is both its notebook
 * directory and its workspace root
 * (docs/decisions/0004-checkouts-and-the-private-root.md). Sessions must not
 * pile up, with their private state, for every server ever started; nor may
 * one go that holds anything unpublished.
 *
 * - A server that stops (stdin's end, SIGTERM, SIGINT, SIGHUP, a client
 *   gone) removes its own session when nothing in it is unpublished: never
 *   pulled, or its files exactly what it last pulled or committed
 *   (engine/discard-unchanged.ts).
 * - A server that could not (SIGKILL, the out-of-memory killer) leaves its
 *   session behind: the next server started with the same store and private
 *   root sweeps it, by the same rule, once the marker `server` in it names a
 *   process that is gone. A session without a marker (made by an older
 *   version) is never swept.
 */
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, realpathSync, rmdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { EngineDeps } from "../../engine/engine.ts";
import type { Log } from "../log.ts";
import { queueIdentity } from "../process-identity.ts";

/** The marker naming the server that owns a session, the store and the private root its checkout's state is under. */
const MARKER = "server";
const SESSION_PREFIX = "slivingdoc-";
const SESSION_NAME = /^slivingdoc-[A-Za-z0-9]{6}$/;

interface Marker {
  server: string;
  storeId: string;
  privateRoot: string;
}

/** Where the server keeps its notebook: a fresh session directory (session), or the workspace root given (session null). */
export interface NotebookRoot {
  dir: string;
  session: string | null;
}

/** The directory sessions are made in. */
export const sessionsDir = (env: Record<string, string | undefined>) => env.TMPDIR || tmpdir();

/** The notebook directory: the workspace root made if needed, or a fresh session whose marker names this server. */
export function notebookRoot(workspaceRoot: string | null, env: Record<string, string | undefined>, owner: Omit<Marker, "server">): NotebookRoot {
  if (workspaceRoot !== null) {
    mkdirSync(workspaceRoot, { recursive: true });
    return { dir: realpathSync(workspaceRoot), session: null };
  }
  const session = mkdtempSync(join(sessionsDir(env), SESSION_PREFIX));
  const marker: Marker = { server: queueIdentity().holder, ...owner };
  writeFileSync(join(session, MARKER), `${JSON.stringify(marker)}\n`, { mode: 0o600 });
  const dir = join(session, "notebook");
  mkdirSync(dir);
  return { dir: realpathSync(dir), session };
}

/** Remove `session` when its notebook holds nothing unpublished; returns whether it did. A session it keeps stays as it was. */
export async function removeSession(deps: EngineDeps, session: string): Promise<boolean> {
  const notebook = join(session, "notebook");
  let dir: string | null;
  try {
    dir = realpathSync(notebook);
  } catch (e) {
    // Gone already (removed by hand, or by a discard killed once it was done): the rest of the session can go.
    if ((e as NodeJS.ErrnoException).code !== "ENOENT") return false;
    dir = null;
  }
  try {
    if (dir !== null) {
      // The engine's discard is loaded when a session is to go: the engine stays out of the handshake's path.
      const { discardIfUnchanged } = await import("../../engine/discard-unchanged.ts");
      if (!(await discardIfUnchanged(deps, dir))) return false;
    }
    rmSync(join(session, MARKER), { force: true });
    rmdirSync(session);
    return true;
  } catch {
    /* not removable: keep it */
    return false;
  }
}

/** The marker of a session in `sessions`, when it names a server that is gone and the same store and private root as `deps`. */
function abandoned(session: string, deps: EngineDeps, isGone: (holder: string) => boolean): boolean {
  let marker: Partial<Marker>;
  try {
    marker = JSON.parse(readFileSync(join(session, MARKER), "utf8")) as Partial<Marker>;
  } catch {
    return false;
  }
  if (marker.storeId !== deps.storeId || marker.privateRoot !== deps.privateRoot || typeof marker.server !== "string") return false;
  return isGone(marker.server);
}

/**
 * Sweep the sessions of servers that died without removing theirs (SIGKILL,
 * out of memory), each by the rule of removeSession; `own` is this
 * server's, never swept.
 */
export async function sweepSessions(deps: EngineDeps, env: Record<string, string | undefined>, own: string | null, log: Log): Promise<void> {
  const where = sessionsDir(env);
  let names: string[];
  try {
    names = readdirSync(where).filter((n) => SESSION_NAME.test(n));
  } catch {
    return;
  }
  const { isGone } = queueIdentity();
  let removed = 0;
  let kept = 0;
  for (const name of names) {
    const session = join(where, name);
    if (session === own || !abandoned(session, deps, isGone)) continue;
    if (await removeSession(deps, session)) removed++;
    else kept++;
  }
  if (removed + kept > 0) log.info("sessions of stopped servers swept", { removed, kept });
}
