/**
 * Reads the headers of a built executable, so the release build can prove
 * each cross-compiled binary is what its name says (operating system,
 * architecture, C library) without running it; and checks a Mach-O ad-hoc
 * code signature page by page, since Apple Silicon kills a binary whose
 * signature does not match its bytes and this machine has no `codesign`.
 */
import { createHash } from "node:crypto";

export interface BinaryFormat {
  os: "linux" | "darwin" | "win32";
  cpu: "x64" | "arm64";
  /** Linux only: from the ELF program interpreter. */
  libc?: "glibc" | "musl";
}

const ELF_MACHINE: Record<number, BinaryFormat["cpu"]> = { 0x3e: "x64", 0xb7: "arm64" };
const MACHO_CPU: Record<number, BinaryFormat["cpu"]> = { 0x01000007: "x64", 0x0100000c: "arm64" };
const PE_MACHINE: Record<number, BinaryFormat["cpu"]> = { 0x8664: "x64", 0xaa64: "arm64" };

const LC_SEGMENT_64 = 0x19;
const LC_CODE_SIGNATURE = 0x1d;
const CSMAGIC_EMBEDDED_SIGNATURE = 0xfade0cc0;
const CSMAGIC_CODEDIRECTORY = 0xfade0c02;
const CSSLOT_CODEDIRECTORY = 0;
/** Hash types of a CodeDirectory: 1 is SHA-1, 2 is SHA-256. */
const HASH_ALGORITHM: Record<number, string> = { 1: "sha1", 2: "sha256" };

/** The format of an executable, or an Error saying why it is none we build. */
export function binaryFormat(bytes: Uint8Array): BinaryFormat | Error {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (bytes.length < 64) return new Error("too short to be an executable");
  // ELF, 64-bit little-endian.
  if (view.getUint32(0, false) === 0x7f454c46) {
    if (bytes[4] !== 2 || bytes[5] !== 1) return new Error("ELF that is not 64-bit little-endian");
    const cpu = ELF_MACHINE[view.getUint16(18, true)];
    if (!cpu) return new Error(`ELF for machine ${view.getUint16(18, true)}`);
    const phoff = Number(view.getBigUint64(32, true));
    const phentsize = view.getUint16(54, true);
    const phnum = view.getUint16(56, true);
    let interpreter = "";
    for (let i = 0; i < phnum; i++) {
      const at = phoff + i * phentsize;
      if (view.getUint32(at, true) !== 3) continue; // PT_INTERP
      const offset = Number(view.getBigUint64(at + 8, true));
      const size = Number(view.getBigUint64(at + 32, true));
      interpreter = new TextDecoder().decode(bytes.subarray(offset, offset + size)).replace(/\0+$/, "");
    }
    if (interpreter === "") return new Error("ELF without a program interpreter");
    return { os: "linux", cpu, libc: interpreter.includes("musl") ? "musl" : "glibc" };
  }
  // Mach-O, 64-bit little-endian.
  if (view.getUint32(0, true) === 0xfeedfacf) {
    const cpu = MACHO_CPU[view.getUint32(4, true)];
    return cpu ? { os: "darwin", cpu } : new Error(`Mach-O for CPU type ${view.getUint32(4, true)}`);
  }
  // PE: "MZ", then "PE\0\0" at e_lfanew and the machine after it.
  if (bytes[0] === 0x4d && bytes[1] === 0x5a) {
    const pe = view.getUint32(0x3c, true);
    if (pe + 6 > bytes.length || view.getUint32(pe, false) !== 0x50450000) return new Error("MZ without a PE header");
    const cpu = PE_MACHINE[view.getUint16(pe + 4, true)];
    return cpu ? { os: "win32", cpu } : new Error(`PE for machine ${view.getUint16(pe + 4, true)}`);
  }
  return new Error("neither ELF, Mach-O nor PE");
}

/**
 * Checks the embedded code signature of a 64-bit Mach-O the way the macOS
 * kernel and `codesign --verify --strict` do for an ad-hoc signature: the
 * CodeDirectory covers every byte before the signature, each page hash
 * matches, the special slots match the blobs present, and nothing follows
 * the signature. Returns the problems found; an empty list means valid.
 */
export function machoSignatureProblems(bytes: Uint8Array): string[] {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (view.getUint32(0, true) !== 0xfeedfacf) return ["not a 64-bit little-endian Mach-O"];
  const ncmds = view.getUint32(16, true);
  let at = 32;
  let signature: { offset: number; size: number } | null = null;
  let linkeditEnd = 0;
  for (let i = 0; i < ncmds; i++) {
    const cmd = view.getUint32(at, true);
    const cmdsize = view.getUint32(at + 4, true);
    if (cmd === LC_CODE_SIGNATURE) signature = { offset: view.getUint32(at + 8, true), size: view.getUint32(at + 12, true) };
    if (cmd === LC_SEGMENT_64) {
      const name = new TextDecoder().decode(bytes.subarray(at + 8, at + 24)).replace(/\0+$/, "");
      if (name === "__LINKEDIT") linkeditEnd = Number(view.getBigUint64(at + 40, true) + view.getBigUint64(at + 48, true));
    }
    at += cmdsize;
  }
  if (!signature) return ["no LC_CODE_SIGNATURE: the binary is unsigned"];
  const problems: string[] = [];
  const end = signature.offset + signature.size;
  if (end !== bytes.length) problems.push(`the signature ends at ${end} but the file is ${bytes.length} bytes`);
  if (linkeditEnd < end) problems.push(`__LINKEDIT ends at ${linkeditEnd}, before the signature's end ${end}`);
  if (view.getUint32(signature.offset, false) !== CSMAGIC_EMBEDDED_SIGNATURE) return [...problems, "the signature is not an embedded SuperBlob"];
  const count = view.getUint32(signature.offset + 8, false);
  const blobs = new Map<number, Uint8Array>();
  for (let i = 0; i < count; i++) {
    const type = view.getUint32(signature.offset + 12 + i * 8, false);
    const offset = signature.offset + view.getUint32(signature.offset + 16 + i * 8, false);
    const length = view.getUint32(offset + 4, false);
    blobs.set(type, bytes.subarray(offset, offset + length));
  }
  const cd = blobs.get(CSSLOT_CODEDIRECTORY);
  if (!cd) return [...problems, "the SuperBlob has no CodeDirectory"];
  const cdView = new DataView(cd.buffer, cd.byteOffset, cd.byteLength);
  if (cdView.getUint32(0, false) !== CSMAGIC_CODEDIRECTORY) return [...problems, "the CodeDirectory has a wrong magic"];
  const hashOffset = cdView.getUint32(16, false);
  const nSpecialSlots = cdView.getUint32(24, false);
  const nCodeSlots = cdView.getUint32(28, false);
  const codeLimit = cdView.getUint32(32, false);
  const hashSize = cd[36]!;
  const algorithm = HASH_ALGORITHM[cd[37]!];
  const pageSize = 2 ** cd[39]!;
  if (!algorithm) return [...problems, `unknown hash type ${cd[37]}`];
  if (codeLimit !== signature.offset) problems.push(`the CodeDirectory covers ${codeLimit} bytes but the signature starts at ${signature.offset}`);
  const pages = Math.ceil(codeLimit / pageSize);
  if (nCodeSlots !== pages) problems.push(`${nCodeSlots} code slots for ${pages} pages`);
  let wrong = 0;
  for (let i = 0; i < Math.min(nCodeSlots, pages); i++) {
    const page = bytes.subarray(i * pageSize, Math.min((i + 1) * pageSize, codeLimit));
    const expected = cd.subarray(hashOffset + i * hashSize, hashOffset + (i + 1) * hashSize);
    if (!createHash(algorithm).update(page).digest().subarray(0, hashSize).equals(expected)) wrong++;
  }
  if (wrong > 0) problems.push(`${wrong} of ${nCodeSlots} page hashes do not match`);
  for (const [type, blob] of blobs) {
    if (type === CSSLOT_CODEDIRECTORY || type > nSpecialSlots || type >= 0x1000) continue;
    const slot = cd.subarray(hashOffset - type * hashSize, hashOffset - (type - 1) * hashSize);
    if (!createHash(algorithm).update(blob).digest().subarray(0, hashSize).equals(slot)) problems.push(`special slot ${type} does not match its blob`);
  }
  return problems;
}

/** The fixed part of a version 0x20400 CodeDirectory, then the SuperBlob header and its one index entry. */
const CODE_DIRECTORY_SIZE = 88;
const SUPERBLOB_HEADER = 12 + 8;
const PAGE_BITS = 12;
/** __LINKEDIT's vmsize is rounded to the larger (arm64) page size, valid on both architectures. */
const SEGMENT_ALIGN = 0x4000n;

/**
 * Replaces the signature of a 64-bit Mach-O executable with a fresh ad-hoc
 * one over all its bytes, as the Go linker's cmd/internal/codesign writes
 * it (one SHA-256 CodeDirectory, flags adhoc|linker-signed, no
 * entitlements). Needed because Bun 1.4.5 cross-compiling to darwin-x64
 * leaves the runtime's original Developer ID signature in place, which no
 * longer matches the bytes once the bundle is added; macOS kills such a
 * process. The signature keeps its offset and grows as needed, with the
 * load commands that describe its extent.
 */
export function adhocSign(bytes: Uint8Array, identifier: string): Uint8Array {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (view.getUint32(0, true) !== 0xfeedfacf) throw new Error("not a 64-bit little-endian Mach-O");
  const isMain = view.getUint32(12, true) === 2; // MH_EXECUTE
  const ncmds = view.getUint32(16, true);
  let at = 32;
  let signatureCmd = -1;
  let linkeditCmd = -1;
  let text = { offset: 0n, size: 0n };
  for (let i = 0; i < ncmds; i++) {
    const cmd = view.getUint32(at, true);
    if (cmd === LC_CODE_SIGNATURE) signatureCmd = at;
    if (cmd === LC_SEGMENT_64) {
      const name = new TextDecoder().decode(bytes.subarray(at + 8, at + 24)).replace(/\0+$/, "");
      if (name === "__LINKEDIT") linkeditCmd = at;
      if (name === "__TEXT") text = { offset: view.getBigUint64(at + 40, true), size: view.getBigUint64(at + 48, true) };
    }
    at += view.getUint32(at + 4, true);
  }
  if (signatureCmd < 0 || linkeditCmd < 0) throw new Error("no LC_CODE_SIGNATURE or __LINKEDIT to hold a signature");
  const codeLimit = view.getUint32(signatureCmd + 8, true);
  const pages = Math.ceil(codeLimit / 2 ** PAGE_BITS);
  const id = new TextEncoder().encode(`${identifier}\0`);
  const hashOffset = CODE_DIRECTORY_SIZE + id.length;
  const cdLength = hashOffset + pages * 32;
  const size = SUPERBLOB_HEADER + cdLength;

  const out = new Uint8Array(codeLimit + size);
  out.set(bytes.subarray(0, codeLimit));
  const o = new DataView(out.buffer);
  // The load commands first: they are in page 0, which the signature hashes.
  o.setUint32(signatureCmd + 12, size, true);
  const linkeditOffset = o.getBigUint64(linkeditCmd + 40, true);
  const linkeditSize = BigInt(codeLimit + size) - linkeditOffset;
  o.setBigUint64(linkeditCmd + 48, linkeditSize, true);
  const vmsize = ((linkeditSize + SEGMENT_ALIGN - 1n) / SEGMENT_ALIGN) * SEGMENT_ALIGN;
  if (vmsize > o.getBigUint64(linkeditCmd + 32, true)) o.setBigUint64(linkeditCmd + 32, vmsize, true);

  let p = codeLimit;
  const u32 = (v: number) => {
    o.setUint32(p, v, false);
    p += 4;
  };
  const u64 = (v: bigint) => {
    o.setBigUint64(p, v, false);
    p += 8;
  };
  u32(CSMAGIC_EMBEDDED_SIGNATURE);
  u32(size);
  u32(1);
  u32(CSSLOT_CODEDIRECTORY);
  u32(SUPERBLOB_HEADER);
  u32(CSMAGIC_CODEDIRECTORY);
  u32(cdLength);
  u32(0x20400); // version: up to the exec segment fields
  u32(0x20002); // CS_ADHOC | CS_LINKER_SIGNED
  u32(hashOffset);
  u32(CODE_DIRECTORY_SIZE); // identOffset
  u32(0); // nSpecialSlots
  u32(pages);
  u32(codeLimit);
  out[p++] = 32; // hashSize
  out[p++] = 2; // hashType: SHA-256
  out[p++] = 0; // platform
  out[p++] = PAGE_BITS;
  u32(0); // spare2
  u32(0); // scatterOffset
  u32(0); // teamOffset
  u32(0); // spare3
  u64(0n); // codeLimit64
  u64(text.offset); // execSegBase
  u64(text.size); // execSegLimit
  u64(isMain ? 1n : 0n); // execSegFlags: CS_EXECSEG_MAIN_BINARY
  out.set(id, p);
  p += id.length;
  for (let i = 0; i < pages; i++) {
    const page = out.subarray(i * 2 ** PAGE_BITS, Math.min((i + 1) * 2 ** PAGE_BITS, codeLimit));
    out.set(createHash("sha256").update(page).digest(), p);
    p += 32;
  }
  return out;
}
