/**
 * Startup refusals (errors.md, "Startup refusals"): failures before any tool
 * call. They never travel in the error envelope; the process prints one
 * redacted line on stderr and exits non-zero.
 */
import { scrubText } from "./scrub.ts";

export type RefusalKind =
  | "INCOMPATIBLE_STORE"
  | "invalid configuration"
  | "invalid path-set entry"
  | "overlapping path settings"
  | "argument refusal";

export class StartupRefusal extends Error {
  override readonly name = "StartupRefusal";
  constructor(
    readonly kind: RefusalKind,
    message: string,
    /** The caller's own values the message quotes (a directory as typed): never scrubbed, whatever they look like. */
    readonly named: readonly string[] = [],
  ) {
    super(message);
  }

  /** The one diagnostic line, scrubbed of the process's `credentials` and of store keys and object ids (scrub.ts), the caller's `named` values kept. */
  diagnostic(credentials: readonly string[] = []): string {
    return scrubText(`slivingdoc: ${this.kind}: ${this.message}`, { credentials, callerValues: this.named }).replace(/\s*\n\s*/g, " ");
  }
}
