/**
 * The command line as bytes. `process.argv` has already decoded each
 * argument, replacing bytes that are not UTF-8 with U+FFFD, so a message
 * given with `-m` cannot tell a real U+FFFD from invalid bytes. On Linux,
 * /proc/self/cmdline still holds the bytes the process was started with.
 */
import { readFileSync } from "node:fs";

/**
 * The raw bytes of the last `count` arguments (the user's, after the
 * runtime and script), or null where they cannot be known: no /proc, or a
 * command line that does not line up with `argv` (then nothing is trusted).
 */
export function rawUserArgs(argv: readonly string[]): Uint8Array[] | null {
  let bytes: Buffer;
  try {
    bytes = readFileSync("/proc/self/cmdline");
  } catch {
    return null;
  }
  // NUL-terminated entries; the last one ends the buffer.
  if (bytes.length === 0 || bytes[bytes.length - 1] !== 0) return null;
  const entries: Uint8Array[] = [];
  let start = 0;
  for (let i = 0; i < bytes.length; i++) {
    if (bytes[i] === 0) {
      entries.push(new Uint8Array(bytes.subarray(start, i)));
      start = i + 1;
    }
  }
  if (entries.length < argv.length) return null;
  const raw = entries.slice(entries.length - argv.length);
  // Every argument that decoded without loss must be byte for byte the same.
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (!arg.includes("\uFFFD") && !Buffer.from(arg, "utf8").equals(raw[i]!)) return null;
  }
  return raw;
}

const strict = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });

export function isUtf8(bytes: Uint8Array): boolean {
  try {
    strict.decode(bytes);
    return true;
  } catch {
    return false;
  }
}
