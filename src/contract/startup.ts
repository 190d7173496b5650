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
  ) {
    super(message);
  }

  /** The one diagnostic line, scrubbed of anything secret-shaped. */
  diagnostic(secrets: readonly string[] = []): string {
    return scrubText(`slivingdoc: ${this.kind}: ${this.message}`, secrets).replace(/\s*\n\s*/g, " ");
  }
}
