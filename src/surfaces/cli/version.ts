/**
 * `slivingdoc --version`: the release, the commit it was built from, the
 * store formats it reads and writes, and the platform, so an operator can
 * tell at once whether this binary can read a store another one wrote. It
 * loads nothing else and touches no store: the bench times every start
 * against it.
 */
import { FORMAT_WRITTEN, FORMATS_READ } from "../../contract/store-formats.ts";

/** Set by the build (build/binary-options.ts); absent when run from source. */
declare const SLIVINGDOC_BUILD_COMMIT: string | undefined;

export interface VersionInfo {
  version: string;
  commit: string;
  formats: { reads: number[]; writes: number };
  platform: string;
}

export function versionInfo(version: string): VersionInfo {
  return {
    version,
    commit: typeof SLIVINGDOC_BUILD_COMMIT === "string" ? SLIVINGDOC_BUILD_COMMIT : "source",
    formats: { reads: [...FORMATS_READ], writes: FORMAT_WRITTEN },
    platform: `${process.platform}-${process.arch}`,
  };
}

export function renderVersion(v: VersionInfo): string {
  const reads = v.formats.reads;
  return (
    `slivingdoc ${v.version}\n` +
    `commit: ${v.commit}\n` +
    `store formats: reads ${reads[0]}–${reads[reads.length - 1]}, writes ${v.formats.writes}\n` +
    `platform: ${v.platform}\n`
  );
}
