/**
 * Bytes ⇄ text for notebook files. The decoder is fatal (invalid UTF-8 is
 * refused, never replaced) and keeps a BOM, so a decode/encode round trip is
 * exact for every file the notebook accepts
 * (docs/decisions/0005-the-notebook-contract.md).
 */
import { isUtf8 } from "node:buffer";

const decoder = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });
const encoder = new TextEncoder();

/** Whether `bytes` is a notebook file's content: valid UTF-8 without U+0000. Checked in place, no text made. */
export function isText(bytes: Uint8Array): boolean {
  return !bytes.includes(0) && isUtf8(bytes);
}

export function decodeText(bytes: Uint8Array): string | null {
  if (!isText(bytes)) return null;
  try {
    return decoder.decode(bytes);
  } catch {
    return null;
  }
}

export function encodeText(text: string): Uint8Array {
  return encoder.encode(text);
}
