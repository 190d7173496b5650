/**
 * The identity of a directory: device, inode and birth time. A checkout is
 * the directory itself, not its path (docs/storage-protocol.md, "The
 * baseline invariant"): its private state records this identity, so a
 * directory removed and made again at the same path is known for a new
 * one, and one moved to another path is still known for itself.
 */
import { statSync } from "node:fs";

/**
 * The inode alone is not enough — a directory removed and made again often
 * gets the same inode number at once — and the birth time tells them apart
 * where the file system records one (ext4, XFS, Btrfs, APFS, NTFS, tmpfs).
 * Where it does not (birth time 0), the inode is all there is (docs/failures.md).
 */
export function directoryIdentity(dir: string): string {
  const st = statSync(dir);
  return `${st.dev}:${st.ino}:${st.birthtimeMs}`;
}

/**
 * Whether `identity` carries a birth time, so that no other directory can
 * have it: without one, a directory made after another was removed may get
 * its device and inode, and be taken for it.
 */
export function isUnique(identity: string): boolean {
  return !identity.endsWith(":0");
}
