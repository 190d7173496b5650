/**
 * The manifest's format numbers (engine/publish/manifest.ts says what each
 * adds), apart from the manifest's schema so that `--version` can name them
 * without loading anything else; and what a binary answers when it meets a
 * store of a newer format than it reads: not damage, a newer slivingdoc's
 * store (docs/cli.md, "Versions that meet").
 */
import { DomainError } from "./errors.ts";
import { StartupRefusal } from "./startup.ts";

export const FORMAT_VERSION = 1;
export const FORMAT_WITH_HISTORY = 2;
export const FORMAT_WITH_COMBINED = 3;
export const FORMAT_WITH_NOTEBOOK = 4;

/** The formats this binary reads, oldest first; it writes the newest. */
export const FORMATS_READ = [FORMAT_VERSION, FORMAT_WITH_HISTORY, FORMAT_WITH_COMBINED, FORMAT_WITH_NOTEBOOK] as const;
export const FORMAT_WRITTEN = FORMAT_WITH_NOTEBOOK;

/** The manifest's key: the one mutable object, naming the accepted state. */
export const MANIFEST_KEY = "current";

/** The newest format this binary reads. */
export const NEWEST_FORMAT = FORMATS_READ[FORMATS_READ.length - 1]!;

/**
 * The format a manifest says it has, read leniently and before any
 * validation: from its `format` field when it parses as JSON, else from the
 * first `"format": N` in its text (a truncated manifest still names it near
 * its start); null when it names none. What a manifest claims to be, so that
 * one of a newer format is never taken for damage.
 */
export function declaredFormat(body: Uint8Array): number | null {
  const text = new TextDecoder("utf-8").decode(body);
  try {
    const json: unknown = JSON.parse(text);
    if (typeof json === "object" && json !== null && "format" in json && typeof json.format === "number") return json.format;
  } catch {
    // Not JSON: read on as text.
  }
  const found = /"format"\s*:\s*(\d+)/.exec(text);
  return found === null ? null : Number(found[1]);
}

/** The words for a store of a newer format, the same on every surface. */
function newerWords(format: number): string {
  return `a newer version of slivingdoc wrote this store (store format ${format}; this version reads formats ${FORMATS_READ[0]} to ${NEWEST_FORMAT}). The store is not damaged: upgrade slivingdoc to use it`;
}

/**
 * A store of a newer format met by a call: the token table allows only
 * STORAGE_INTEGRITY · MANIFEST_INVALID there, so the message says it is a
 * newer slivingdoc's store, not a damaged one. A command line turns it into
 * its start-up refusal (startupRefusal).
 */
export class NewerStoreFormat extends DomainError {
  constructor(readonly storeFormat: number) {
    super("MANIFEST_INVALID", `${capitalised(newerWords(storeFormat))}.`);
  }

  /** The CLI's and serve's answer at start: INCOMPATIBLE_STORE, one line, exit 2. */
  startupRefusal(): StartupRefusal {
    return new StartupRefusal("INCOMPATIBLE_STORE", newerWords(this.storeFormat));
  }
}

function capitalised(text: string): string {
  return text.charAt(0).toUpperCase() + text.slice(1);
}

/** Throws NewerStoreFormat for a manifest of a format this binary does not read. */
export function refuseNewerFormat(body: Uint8Array): void {
  const format = declaredFormat(body);
  if (format !== null && format > NEWEST_FORMAT) throw new NewerStoreFormat(format);
}
