/** `bytes` random bytes as lowercase hex: unique names for temporary files, publications and nonces. */
export function randomHex(bytes: number): string {
  return Array.from(crypto.getRandomValues(new Uint8Array(bytes)), (b) => b.toString(16).padStart(2, "0")).join("");
}
