/**
 * Every snippet in docs/connect-a-host.md, read as its host reads it: JSON,
 * JSON with comments (VS Code, Zed: Microsoft's jsonc-parser, the one VS Code
 * uses), TOML (Codex: smol-toml), YAML (Continue, Goose: yaml), or a command
 * line (Claude Code, Codex). Each is checked against the keys its host documents — the
 * servers' key (`mcpServers`, `servers`, `context_servers`, `mcp_servers`,
 * or Continue's list), the entry's own keys — and its command line against
 * slivingdoc's own: `serve` with flags `serve` knows. A snippet's fence
 * names its host after the language (```json cursor), and `windows` marks
 * the form for Windows, where npx must run through `cmd /c`.
 */
import { expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { parse as parseJsonc, type ParseError } from "jsonc-parser";
import { parse as parseToml } from "smol-toml";
import { parse as parseYaml } from "yaml";
import { parseStrict } from "../../src/surfaces/cli/arguments.ts";
import { serveCommand } from "../../src/surfaces/cli/definitions.ts";

const doc = readFileSync(join(import.meta.dir, "../../docs/connect-a-host.md"), "utf8");

interface Snippet {
  lang: string;
  host: string;
  windows: boolean;
  text: string;
}

const snippets: Snippet[] = [...doc.matchAll(/^```(\w+) ([\w-]+)( windows)?\n([\s\S]*?)^```$/gm)].map((m) => ({
  lang: m[1]!,
  host: m[2]!,
  windows: m[3] !== undefined,
  text: m[4]!,
}));

/** The hosts the doc must cover, each with a Windows form. */
const HOSTS = [
  "claude-desktop",
  "claude-code",
  "cursor",
  "vscode",
  "windsurf",
  "cline",
  "zed",
  "codex",
  "codex-config",
  "gemini-cli",
  "continue",
  "goose",
  "jetbrains-ai",
  "junie",
];

/** How each host's file holds the server: its format, where the entry is, and the keys an entry may have. */
type Entry = Record<string, unknown>;
const MCP_SERVERS = { formats: ["json"], entry: (doc: any): Entry => doc.mcpServers?.notebook, keys: ["command", "args", "env"] };
const SHAPES: Record<
  string,
  { formats: string[]; entry(doc: any): Entry | undefined; keys: string[]; check?(doc: any, entry: Entry): void; launch?(entry: Entry): Entry }
> = {
  mcpServers: MCP_SERVERS,
  "claude-desktop": MCP_SERVERS,
  "claude-code-project": MCP_SERVERS,
  cursor: MCP_SERVERS,
  "jetbrains-ai": MCP_SERVERS,
  junie: MCP_SERVERS,
  windsurf: MCP_SERVERS,
  "gemini-cli": { ...MCP_SERVERS, keys: ["command", "args", "env", "cwd", "timeout", "trust"] },
  cline: { ...MCP_SERVERS, keys: ["command", "args", "env", "disabled", "autoApprove"] },
  vscode: {
    formats: ["jsonc"],
    entry: (doc) => doc.servers?.notebook,
    keys: ["type", "command", "args", "env", "envFile"],
    check: (_doc, entry) => expect(entry.type).toBe("stdio"),
  },
  zed: { formats: ["jsonc"], entry: (doc) => doc.context_servers?.notebook, keys: ["command", "args", "env"] },
  "codex-config": { formats: ["toml"], entry: (doc) => doc.mcp_servers?.notebook, keys: ["command", "args", "env", "cwd", "startup_timeout_sec", "tool_timeout_sec"] },
  continue: {
    formats: ["yaml"],
    entry: (doc) => (Array.isArray(doc.mcpServers) ? doc.mcpServers.find((s: Entry) => s.name === "notebook") : undefined),
    keys: ["name", "command", "args", "env", "cwd"],
    // A block file names itself and its schema version.
    check: (doc) => expect([typeof doc.name, typeof doc.version, doc.schema]).toEqual(["string", "string", "v1"]),
  },
  goose: {
    formats: ["yaml"],
    entry: (doc) => doc.extensions?.notebook,
    keys: ["name", "type", "enabled", "cmd", "args", "envs", "env_keys", "timeout", "description", "bundled"],
    check: (_doc, entry) => expect([entry.name, entry.type, entry.enabled]).toEqual(["notebook", "stdio", true]),
    // Goose names the command `cmd` and the environment `envs`.
    launch: (entry) => ({ command: entry.cmd, args: entry.args, env: entry.envs }),
  },
};

function parsed(s: Snippet): any {
  switch (s.lang) {
    case "json":
      return JSON.parse(s.text);
    case "jsonc": {
      const errors: ParseError[] = [];
      const value = parseJsonc(s.text, errors, { allowTrailingComma: false, disallowComments: false });
      expect({ host: s.host, errors }).toEqual({ host: s.host, errors: [] });
      return value;
    }
    case "toml":
      return parseToml(s.text);
    case "yaml":
      return parseYaml(s.text);
    default:
      throw new Error(`no parser for ${s.lang}`);
  }
}

/** The command a host runs, and what slivingdoc itself is given: after `npx -y slivingdoc`, through `cmd /c` on Windows. */
function slivingdocArgs(s: Snippet, command: string, args: string[]): string[] {
  const npx = s.windows ? ["cmd", "/c", "npx", "-y", "slivingdoc"] : ["npx", "-y", "slivingdoc"];
  const line = [command, ...args];
  expect({ host: s.host, windows: s.windows, start: line.slice(0, npx.length) }).toEqual({ host: s.host, windows: s.windows, start: npx });
  return line.slice(npx.length);
}

/** slivingdoc's own parser takes them: `serve`, then flags serve knows. */
function expectServe(host: string, argv: string[]): void {
  expect({ host, command: argv[0] }).toEqual({ host, command: "serve" });
  const { positionals } = parseStrict(serveCommand.args, argv.slice(1));
  expect({ host, positionals }).toEqual({ host, positionals: [] });
}

test("every host has a snippet, and a Windows form", () => {
  for (const host of HOSTS) {
    expect({ host, forms: snippets.filter((s) => s.host === host).map((s) => s.windows) }).toEqual({ host, forms: [false, true] });
  }
});

test("each snippet parses as its host reads it, with the keys its host documents", () => {
  const files = snippets.filter((s) => s.lang !== "sh");
  expect(files.length).toBeGreaterThanOrEqual(24);
  for (const s of files) {
    const shape = SHAPES[s.host];
    expect({ host: s.host, known: shape !== undefined }).toEqual({ host: s.host, known: true });
    expect({ host: s.host, lang: shape!.formats.includes(s.lang) }).toEqual({ host: s.host, lang: true });
    const value = parsed(s);
    const entry = shape!.entry(value);
    expect({ host: s.host, entry: typeof entry }).toEqual({ host: s.host, entry: "object" });
    expect({ host: s.host, unknown: Object.keys(entry!).filter((k) => !shape!.keys.includes(k)) }).toEqual({ host: s.host, unknown: [] });
    shape!.check?.(value, entry!);
    const { command, args, env } = (shape!.launch?.(entry!) ?? entry) as { command: unknown; args: unknown; env?: unknown };
    expect(typeof command).toBe("string");
    expect(Array.isArray(args) && args.every((a) => typeof a === "string")).toBe(true);
    if (env !== undefined) expect(Object.values(env as object).every((v) => typeof v === "string")).toBe(true);
    expectServe(s.host, slivingdocArgs(s, command as string, args as string[]));
  }
});

test("Claude Code's and Codex's command lines add the server by name, the command after --", () => {
  const lines = snippets.filter((s) => s.lang === "sh");
  expect(lines.map((s) => s.host)).toEqual(["claude-code", "claude-code", "codex", "codex"]);
  for (const s of lines) {
    const words = s.text.trim().split(/\s+/);
    const tool = s.host === "codex" ? "codex" : "claude";
    expect(words.slice(0, 5)).toEqual([tool, "mcp", "add", "notebook", "--"]);
    expectServe(s.host, slivingdocArgs(s, words[5]!, words.slice(6)));
  }
});

test("Claude Code's scopes are told as the tool has them: local by default, -s project writes .mcp.json", () => {
  const section = doc.slice(doc.indexOf("### Claude Code"), doc.indexOf("### Cursor"));
  expect(section).toContain("scope `local`");
  expect(section).toContain("`-s project` writes it to `.mcp.json`");
  expect(section).toContain("`-s user`");
});
