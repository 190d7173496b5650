/**
 * SHA-1 and SHA-256 by Bun's own hasher: the same digests, and the same
 * update/digest calls, as node:crypto's createHash, without loading
 * node:crypto, which costs about 5 ms of every call.
 */
export function createHash(algorithm: "sha1" | "sha256"): Bun.CryptoHasher {
  return new Bun.CryptoHasher(algorithm);
}
