/**
 * Bytes ⇄ text for notebook files. The decoder is fatal (invalid UTF-8 is
 * refused, never replaced) and keeps a BOM, so a decode/encode round trip is
 * exact for every file the notebook accepts
 * (docs/decisions/0005-the-notebook-contract.md).
 */
const decoder = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });
const encoder = new TextEncoder();

export function decodeText(bytes: Uint8Array): string | null {
  if (bytes.includes(0)) return null;
  try {
    return decoder.decode(bytes);
  } catch {
    return null;
  }
}

export function encodeText(text: string): Uint8Array {
  return encoder.encode(text);
}
