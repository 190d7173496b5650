/**
 * Git objects: the id of an object, the loose-object encoding, and the
 * codecs of the two structured kinds slivingdoc writes and reads — trees
 * (regular files and subdirectories only) and commits.
 * https://git-scm.com/book/en/v2/Git-Internals-Git-Objects
 */
import { createHash } from "./hash.ts";

export type ObjectType = "blob" | "tree" | "commit";

/** An object's kind and content (without the "<type> <size>\0" header). */
export interface GitObject {
  type: string;
  object: Uint8Array;
}

/** An object the history needs is absent: the state cannot be trusted. */
export class MissingObjectError extends Error {
  override readonly name = "MissingObjectError";
}

/** A downloaded pack could not be imported. */
export class BadPackError extends Error {
  override readonly name = "BadPackError";
}

export const FILE_MODE = "100644";
export const TREE_MODE = "40000";

export function sha1Hex(data: Uint8Array): string {
  return createHash("sha1").update(data).digest("hex");
}

/** The id, hashed from the header and the content in turn: no copy of a big content. */
export function objectId(type: string, content: Uint8Array): string {
  return createHash("sha1").update(`${type} ${content.byteLength}\0`).update(content).digest("hex");
}

/** A loose object, inflated: split its header from its content; null when malformed. */
export function unwrapObject(raw: Buffer): { type: string; object: Buffer } | null {
  const space = raw.indexOf(0x20);
  const nul = raw.indexOf(0, space);
  return space > 0 && nul > space ? { type: raw.toString("latin1", 0, space), object: raw.subarray(nul + 1) } : null;
}

export interface TreeEntry {
  name: string;
  isTree: boolean;
  oid: string;
}

/** A tree object of files (mode 100644) and subtrees, in git's order: names as bytes, a tree as if it ended in "/". */
export function encodeTree(entries: Iterable<TreeEntry>): Buffer {
  // Sort keys computed once.
  const keyed: Array<{ key: Buffer; name: Buffer; isTree: boolean; oid: string }> = [];
  for (const e of entries) {
    const name = Buffer.from(e.name);
    keyed.push({ key: e.isTree ? Buffer.from(`${e.name}/`) : name, name, isTree: e.isTree, oid: e.oid });
  }
  keyed.sort((a, b) => Buffer.compare(a.key, b.key));
  const parts: Buffer[] = [];
  for (const e of keyed) {
    parts.push(Buffer.from(`${e.isTree ? TREE_MODE : FILE_MODE} `), e.name, Buffer.from([0]), Buffer.from(e.oid, "hex"));
  }
  return Buffer.concat(parts);
}

/** The entries of a tree object, with their modes; throws MissingObjectError when malformed. */
export function decodeTree(object: Uint8Array): Array<{ mode: string; name: string; oid: string }> {
  const buf = Buffer.from(object.buffer, object.byteOffset, object.byteLength);
  const entries: Array<{ mode: string; name: string; oid: string }> = [];
  let i = 0;
  while (i < buf.length) {
    const space = buf.indexOf(0x20, i);
    const nul = buf.indexOf(0, space);
    if (space < 0 || nul < 0 || nul + 21 > buf.length) throw new MissingObjectError("malformed tree");
    entries.push({ mode: buf.toString("latin1", i, space), name: buf.toString("utf8", space + 1, nul), oid: buf.toString("hex", nul + 1, nul + 21) });
    i = nul + 21;
  }
  return entries;
}

/**
 * The commit header naming the base generation: the generation the
 * publishing checkout's baseline had when its agent committed
 * (docs/decisions/0020-the-base-generation-in-the-commit.md). Publications
 * have one parent, the accepted head they landed on; this header is what
 * still tells, after the fact, which generations the agent had not seen.
 * After the committer line, where git keeps headers it does not know:
 * C git stores, copies and fscks it, and ignores it.
 */
export const BASE_GENERATION_HEADER = "slivingdoc-base-generation";

/**
 * A commit whose message is kept byte for byte. Author and committer are
 * both the publishing agent (contract/agent.ts: a name valid in a git
 * ident; "slivingdoc" when none is given), with slivingdoc's address, in UTC;
 * `base`, the base generation, in its own header (BASE_GENERATION_HEADER).
 */
export function encodeCommit(args: { tree: string; parent: string | null; message: string; when: Date; agent?: string; base?: number }): Buffer {
  const seconds = Math.floor(args.when.getTime() / 1000);
  const name = args.agent ?? "slivingdoc";
  if (/[<>\n\u0000]/.test(name) || name.trim() === "") throw new Error("an agent name must be valid in a git ident");
  if (args.base !== undefined && (!Number.isSafeInteger(args.base) || args.base < 0)) throw new Error("a base generation is a whole number");
  const ident = `${name} <slivingdoc@localhost> ${seconds} +0000`;
  const head = [`tree ${args.tree}`];
  if (args.parent) head.push(`parent ${args.parent}`);
  head.push(`author ${ident}`, `committer ${ident}`);
  if (args.base !== undefined) head.push(`${BASE_GENERATION_HEADER} ${args.base}`);
  return Buffer.concat([Buffer.from(`${head.join("\n")}\n\n`), Buffer.from(args.message, "utf8")]);
}

/**
 * The same commit with another tree and parent: every other header (author
 * and committer, with their times, and the base generation: a carried
 * proposal keeps its proposer's) and the message are kept byte for byte.
 * Null when `object` does not start with one tree line and at most one
 * parent line, as every commit slivingdoc writes does.
 */
export function rebasedCommit(object: Uint8Array, tree: string, parent: string | null): Buffer | null {
  const bytes = Buffer.from(object.buffer, object.byteOffset, object.byteLength);
  const text = bytes.toString("latin1");
  const first = /^tree [0-9a-f]{40}\n(parent [0-9a-f]{40}\n)?/.exec(text);
  if (first === null || /^parent /.test(text.slice(first[0].length))) return null;
  const head = `tree ${tree}\n${parent !== null ? `parent ${parent}\n` : ""}`;
  return Buffer.concat([Buffer.from(head), bytes.subarray(first[0].length)]);
}

/** A commit's tree and parents (first parent first), from its headers; throws MissingObjectError without a tree. */
export function decodeCommit(object: Uint8Array): { tree: string; parents: string[] } {
  const text = Buffer.from(object.buffer, object.byteOffset, object.byteLength).toString("latin1");
  const end = text.indexOf("\n\n");
  let tree: string | null = null;
  const parents: string[] = [];
  for (const line of text.slice(0, end < 0 ? text.length : end).split("\n")) {
    if (tree === null && /^tree [0-9a-f]{40}$/.test(line)) tree = line.slice(5);
    else if (/^parent [0-9a-f]{40}$/.test(line)) parents.push(line.slice(7));
  }
  if (tree === null) throw new MissingObjectError("commit without a tree");
  return { tree, parents };
}

/** A blob's id computed in memory (no copy of the content): equality of content without writing objects. */
export function blobId(bytes: Uint8Array): string {
  return objectId("blob", bytes);
}
