/**
 * A big buffer given back at once, rather than at the collector's next pass.
 * JavaScriptCore frees an ArrayBuffer's memory only when it collects it, and
 * a call that reads a 100 MB file allocates several buffers of its size
 * before any pass: a compressed pack entry dead once inflated stays resident
 * beside the content, the merge's three sides and its result. Detaching the
 * buffer (`ArrayBuffer.prototype.transfer(0)`) frees its memory now.
 *
 * Only for a buffer its caller alone holds: every other view of it reads as
 * empty afterwards. A view of part of a buffer (the runtime's pool of small
 * buffers) is left alone, and so is anything small, which the collector
 * handles well.
 */
const RELEASE_FROM = 1 << 20;

export function release(bytes: Uint8Array): void {
  if (bytes.byteLength < RELEASE_FROM || bytes.byteOffset !== 0 || bytes.byteLength !== bytes.buffer.byteLength) return;
  if (bytes.buffer instanceof ArrayBuffer) bytes.buffer.transfer(0);
}
