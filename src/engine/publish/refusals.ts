/**
 * The refusals the attempt's machine (attempt.ts) ends a commit with, in
 * the table's words (docs/errors.md), and which failures say nothing of a
 * proposal's fate.
 */
import { DomainError } from "../../contract/errors.ts";
import { StoreError } from "../../store/object-store.ts";

/** RETRIES_EXHAUSTED after `lost` races lost and the last one; `outOfTime`: the call's deadline ended them. */
export function exhausted(lost: number, outOfTime: boolean): DomainError {
  return new DomainError(
    "RETRIES_EXHAUSTED",
    outOfTime
      ? `Other commits won the race ${lost + 1} times in a row until the call deadline; your files are untouched. Call again.`
      : `Other commits won the race ${lost + 1} times in a row; your files are untouched. Call again, or raise --commit-retries.`,
  );
}

/** A proposer that looked again only after its proposal's entry would have left the list (combine.ts fateOf). */
export function unprovenProposal(): DomainError {
  return new DomainError(
    "PUBLICATION_UNPROVEN",
    "So many publications landed while this commit waited that it cannot prove whether its own was among them; pull first and look before committing again.",
  );
}

/** The store failed while our proposal was out, and taking it back could not prove whether another writer published it. */
export function unprovenOffer(failure: unknown): DomainError {
  return new DomainError(
    "PUBLICATION_UNPROVEN",
    "The store failed while this commit's offer to be published with another was out, and whether another writer published it could not be proved; pull first and look before committing again.",
    { cause: failure },
  );
}

/** A failure of the store's own (a retryable STORAGE_FAILURE other than the checkout's private state), which says nothing of a proposal's fate. */
export function storeFailed(e: unknown): boolean {
  if (e instanceof StoreError) return true;
  return e instanceof DomainError && e.code === "STORAGE_FAILURE" && e.action === "RETRY" && e.reason !== "LOCAL_STATE";
}
