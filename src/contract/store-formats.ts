/**
 * The manifest's format numbers (engine/publish/manifest.ts says what each adds), apart
 * from the manifest's schema so that `--version` can name them without
 * loading anything else.
 */
export const FORMAT_VERSION = 1;
export const FORMAT_WITH_HISTORY = 2;
export const FORMAT_WITH_COMBINED = 3;
export const FORMAT_WITH_NOTEBOOK = 4;

/** The formats this binary reads, oldest first; it writes the newest. */
export const FORMATS_READ = [FORMAT_VERSION, FORMAT_WITH_HISTORY, FORMAT_WITH_COMBINED, FORMAT_WITH_NOTEBOOK] as const;
export const FORMAT_WRITTEN = FORMAT_WITH_NOTEBOOK;
