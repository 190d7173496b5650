/**
 * Who publishes: the agent named on every publication, as its commit's
 * author and committer, so that `log` and `show` can say who changed what.
 * A name, never a credential.
 *
 * The name goes into a git ident line, `NAME <EMAIL> SECONDS +0000`, which
 * C git reads only when the name holds no `<`, `>` or line break; and it is
 * printed by `log` to terminals. So a name is at most 128 bytes of UTF-8,
 * without control characters (C0, DEL, C1) or angle brackets, and without
 * white space at either end. A name given by the operator (`--agent`,
 * `SLIVINGDOC_AGENT`) that breaks a rule is refused at start-up; a name
 * slivingdoc derives itself (the MCP client's clientInfo, the user and host
 * name) is made to fit instead.
 */

export const AGENT_MAX_BYTES = 128;

/** The name commits carried before identities were recorded, and the last resort. */
export const DEFAULT_AGENT = "slivingdoc";

// C0, DEL and C1 controls, and the two characters that end a git ident's name.
const FORBIDDEN = /[\u0000-\u001f\u007f-\u009f<>]/u;
const FORBIDDEN_ALL = /[\u0000-\u001f\u007f-\u009f<>]/gu;

/** Why `name` is not a valid agent name, or null when it is one. */
export function agentProblem(name: string): string | null {
  if (name.trim() === "") return "is blank";
  if (name !== name.trim()) return "has white space at an end";
  if (FORBIDDEN.test(name)) return "holds a control character, < or >";
  if (name.includes("\uFFFD")) return "is not valid UTF-8";
  if (Buffer.byteLength(name, "utf8") > AGENT_MAX_BYTES) return `is longer than ${AGENT_MAX_BYTES} bytes`;
  return null;
}

/** `raw` with forbidden characters dropped and white space collapsed: "" when nothing printable is left. */
function clean(raw: string): string {
  return raw.replace(FORBIDDEN_ALL, " ").replace(/\uFFFD/g, "").replace(/\s+/gu, " ").trim();
}

/** `raw` made into a valid agent name: cleaned, cut to the bound; DEFAULT_AGENT when nothing is left. */
export function fitAgent(raw: string): string {
  let name = clean(raw);
  while (Buffer.byteLength(name, "utf8") > AGENT_MAX_BYTES) name = Array.from(name).slice(0, -1).join("").trimEnd();
  return agentProblem(name) === null ? name : DEFAULT_AGENT;
}

/** The CLI's default: `user@host`. */
export function userAtHost(user: string | undefined, host: string): string {
  return fitAgent(`${user && user !== "" ? user : "unknown"}@${host}`);
}

/**
 * `serve`'s default: the MCP client's clientInfo name and version, with the
 * user and host name — `CLIENT/VERSION USER@HOST`. A client whose name is
 * empty or blank names nobody, so it counts as no client (`USER@HOST`, never
 * `/ USER@HOST`); a blank version is left out with its slash
 * (`CLIENT USER@HOST`).
 */
export function clientAgent(client: { name: string; version: string } | undefined, who: string): string {
  const name = clean(client?.name ?? "");
  if (name === "") return who;
  const version = clean(client?.version ?? "");
  return fitAgent(version === "" ? `${name} ${who}` : `${name}/${version} ${who}`);
}
