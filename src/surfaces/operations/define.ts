/**
 * What every entry of the operations registry (operations.ts) is made
 * with: the definition that infers an entry's input and result types, and
 * the reading of a whole number from the command line.
 */
import { StartupRefusal } from "../../contract/startup.ts";
import type { Operation } from "../operation.ts";

/** An entry, with its input and result types inferred from it. */
export function defineOperation<I, R>(operation: Operation<I, R>): Operation<I, R> {
  return operation;
}

/** A whole number on the command line, `min` or more, or the start-up refusal naming it and saying what it must be. */
export function parseCount(name: string, value: string | boolean | undefined, min = 0, what = "a whole number", max = Number.MAX_SAFE_INTEGER): number {
  if (typeof value !== "string" || !/^\d{1,15}$/.test(value) || Number(value) < min || Number(value) > max) {
    throw new StartupRefusal("argument refusal", `${name} must be ${what}; got "${String(value ?? "").slice(0, 40)}"`);
  }
  return Number(value);
}
