/**
 * A loose object's file: the zlib stream of its header and content, written
 * as it is deflated (zlib.ts deflateInParts), so that a big file costs
 * neither a wrapped copy nor its whole stream in memory. The caller writes
 * to a temporary name and renames it into place.
 */
import * as fs from "node:fs";
import { dirname } from "node:path";
import { deflateInParts } from "./zlib.ts";

export function writeLooseFile(file: string, type: string, content: Uint8Array, level: number): void {
  const fd = openCreating(file);
  try {
    deflateInParts(Buffer.from(`${type} ${content.byteLength}\0`), content, level, (part) => {
      for (let at = 0; at < part.length; ) at += fs.writeSync(fd, part, at);
    });
  } catch (e) {
    fs.closeSync(fd);
    fs.rmSync(file, { force: true });
    throw e;
  }
  fs.closeSync(fd);
}

/** Open `file` for writing; its fan-out directory is made on first need (most exist). */
function openCreating(file: string): number {
  try {
    return fs.openSync(file, "w");
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== "ENOENT") throw e;
    fs.mkdirSync(dirname(file), { recursive: true });
    return fs.openSync(file, "w");
  }
}
