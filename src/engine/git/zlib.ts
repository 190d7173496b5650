/**
 * node:zlib, loaded on first use: only writing objects and indexing a
 * downloaded pack need it (reading inflates by Bun's own, pack-reader.ts),
 * and loading it costs about 7 ms of every call, a no-change pull's too.
 */
let loaded: typeof import("node:zlib") | undefined;

export function zlib(): typeof import("node:zlib") {
  return (loaded ??= require("node:zlib") as typeof import("node:zlib"));
}
