/** Git blob ids computed in memory: equality of content without writing objects. */
import { createHash } from "node:crypto";

export function blobId(bytes: Uint8Array): string {
  return createHash("sha1").update(`blob ${bytes.byteLength}\0`).update(bytes).digest("hex");
}
