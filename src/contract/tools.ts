/**
 * The MCP surface's fixed text and schemas (mcp-tools.md): exactly two
 * tools, their descriptions, their input schemas, and the server
 * instructions. Every string here is contract, reproduced byte for byte and
 * pinned by test/contract/tools.test.ts.
 */
import type { PathSets } from "./results.ts";

export const TOOL_NAMES = ["notes_pull", "notes_commit"] as const;
export type ToolName = (typeof TOOL_NAMES)[number];

const PULL_DESCRIPTION =
  "Write the current notebook into the notebook directory and record the accepted state. Omit path or pass an empty string to use the server’s notebook directory, which the result reports. Edit UTF-8 text files (without U+0000) there between notes_pull and notes_commit; notes_commit publishes the changes and incorporates concurrent non-conflicting changes.";

const COMMIT_DESCRIPTION =
  "Publish the caller’s changes in the notebook directory and incorporate concurrent non-conflicting changes. Omit path or pass an empty string to use the server’s notebook directory, which the result reports. message must be non-blank UTF-8 without U+0000, at most 16,384 bytes; it is retained in recent internal history only.";

/**
 * The path-set sentences appended to the instructions and both
 * descriptions, one per configured set (mcp-tools.md "Server instructions").
 * Empty when no set is configured, so such a process is byte for byte
 * unchanged.
 */
export function pathSetSentences(sets: PathSets): string[] {
  const sentences: string[] = [];
  if (sets.writable.length > 0) {
    sentences.push(
      `Writable paths: ${sets.writable.join(", ")}. notes_commit refuses any change elsewhere, resets those files, and reports READ_ONLY_PATH; write only under them.`,
    );
  }
  if (sets.readOnly.length > 0) {
    const ending = sets.writable.length > 0 ? "where the two sets nest, the longest matching entry decides." : "write elsewhere.";
    sentences.push(
      `Read-only paths: ${sets.readOnly.join(", ")}. notes_commit refuses any change to them, resets those files, and reports READ_ONLY_PATH; ${ending}`,
    );
  }
  return sentences;
}

/** Descriptions are one paragraph: the sentences follow after a space. */
function withSentences(text: string, sets: PathSets, separator = " "): string {
  const sentences = pathSetSentences(sets);
  return sentences.length === 0 ? text : `${text}${separator}${sentences.join(separator)}`;
}

export function toolDescription(name: ToolName, sets: PathSets): string {
  return withSentences(name === "notes_pull" ? PULL_DESCRIPTION : COMMIT_DESCRIPTION, sets);
}

/** The instructions, with mcp-tools.md's line breaks kept as written; each path-set sentence on a line of its own. */
export function serverInstructions(notebookDir: string, sets: PathSets): string {
  const base =
    `The notebook directory is ${notebookDir}. Call notes_pull, edit UTF-8 text files\n` +
    "(without U+0000) there, then call notes_commit to publish. Both tools\n" +
    "default to that directory; pass path only to address a subdirectory of it.";
  return withSentences(base, sets, "\n");
}

const PATH_SCHEMA = {
  type: "string",
  description:
    "Optional host path of the notebook directory, at or below the workspace root; may begin with ~/. Omit it or pass an empty string for the server's notebook directory.",
} as const;

/** The advertised JSON Schemas; the byte bounds are enforced by the strict decode, not here. */
export function inputSchema(name: ToolName): Record<string, unknown> {
  if (name === "notes_pull") {
    return { type: "object", properties: { path: PATH_SCHEMA }, additionalProperties: false };
  }
  return {
    type: "object",
    properties: {
      message: {
        type: "string",
        description: "The commit message: non-blank UTF-8 without U+0000, at most 16,384 bytes.",
      },
      path: PATH_SCHEMA,
    },
    required: ["message"],
    additionalProperties: false,
  };
}
