/**
 * Defence in depth for every text that leaves the process (mcp-tools.md):
 * pack and probe keys, 40- and 64-hex ids, AWS access key ids and URL user
 * information are replaced, whatever produced the text. Private paths and
 * secrets known at runtime are passed in and replaced too.
 */

const PATTERNS: Array<[RegExp, string]> = [
  // URL user information: scheme://user:password@host
  [/([a-z][a-z0-9+.-]*:\/\/)[^/\s@]+@/gi, "$1<redacted>@"],
  // Pack and probe keys of the storage layout (docs/storage-protocol.md).
  [/\b(?:[\w.-]+\/)*packs\/[\w.-]+/g, "<pack>"],
  [/\b(?:[\w.-]+\/)*probe\/[\w.-]+/g, "<probe>"],
  // Git object ids (SHA-1) and SHA-256 digests.
  [/\b[0-9a-f]{64}\b/gi, "<id>"],
  [/\b[0-9a-f]{40}\b/gi, "<id>"],
  // AWS access key ids (long-term AKIA, temporary ASIA, and the other prefixes).
  [/\b(?:AKIA|ASIA|AGPA|AIDA|AROA|ANPA|ANVA|AIPA)[A-Z0-9]{12,}\b/g, "<access-key-id>"],
];

export function scrubText(text: string, secrets: readonly string[] = []): string {
  let out = text;
  // Longest first, so a private root is replaced before a shorter prefix of it.
  for (const secret of [...secrets].filter((s) => s.length >= 4).sort((a, b) => b.length - a.length)) {
    out = out.split(secret).join("<private>");
  }
  for (const [pattern, replacement] of PATTERNS) out = out.replace(pattern, replacement);
  return out;
}
