import { DomainError, type ErrorFile } from "../../contract/errors.ts";

/** CONTENT_CONFLICT · MERGE_CONFLICT after the merged result, markers included, was written. */
export function conflictError(files: ErrorFile[], operation: "pull" | "commit"): DomainError {
  const tail =
    operation === "commit"
      ? " Nothing was published; the accepted state is unchanged."
      : "";
  return new DomainError(
    "MERGE_CONFLICT",
    `Resolve the conflict blocks before notes_commit.${tail}`,
    { files },
  );
}
