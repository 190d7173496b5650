/**
 * The MCP surface's fixed text (mcp-tools.md): exactly two tools, the
 * path-set sentences and the server instructions. Every string here is
 * contract, reproduced byte for byte and pinned by test/e2e/mcp.test.ts and
 * test/contract/path-sets.test.ts. Each tool's description and input schema
 * are in its entry of the operations registry (src/surfaces/operations/notebook.ts).
 */
import type { PathSets } from "./results.ts";

export const TOOL_NAMES = ["notes_pull", "notes_commit"] as const;
export type ToolName = (typeof TOOL_NAMES)[number];

/**
 * The hints hosts read to decide what to auto-approve (MCP tool
 * annotations). Neither tool only reads: a pull writes the notebook
 * directory, a commit the store. Both touch only the notebook and its store,
 * never the open world. A pull never overwrites an unpublished edit and a
 * second pull changes nothing, so it is neither destructive nor unsafe to
 * repeat; a commit can publish deletions to every agent, and each call is a
 * new publication.
 */
export const TOOL_ANNOTATIONS: Record<ToolName, { title: string; readOnlyHint: boolean; destructiveHint: boolean; idempotentHint: boolean; openWorldHint: boolean }> = {
  notes_pull: { title: "Pull the shared notebook", readOnlyHint: false, destructiveHint: false, idempotentHint: true, openWorldHint: false },
  notes_commit: { title: "Publish notebook edits", readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: false },
};

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

/** `text` with the path-set sentences appended; a description is one paragraph, so they follow after a space. */
export function withSentences(text: string, sets: PathSets, separator = " "): string {
  const sentences = pathSetSentences(sets);
  return sentences.length === 0 ? text : `${text}${separator}${sentences.join(separator)}`;
}

/** The instructions, with mcp-tools.md's line breaks kept as written; each path-set sentence on a line of its own. */
export function serverInstructions(notebookDir: string, sets: PathSets): string {
  const base =
    `The notebook directory is ${notebookDir}. Call notes_pull, edit UTF-8 text files\n` +
    "(without U+0000) there, then call notes_commit to publish. Both tools\n" +
    "default to that directory; pass path only to address a subdirectory of it.";
  return withSentences(base, sets, "\n");
}
