/**
 * The checkouts registered under a private root: each has a state directory
 * `<privateRoot>/checkouts/<id>/` (checkout-state.ts), found here for the
 * nesting check and removed here once its directory is gone.
 */
import { createHash } from "node:crypto";
import { lstatSync, readdirSync, renameSync, rmSync } from "node:fs";
import { join } from "node:path";
import { randomHex } from "../contract/random-hex.ts";
import { readJson } from "./atomic-file.ts";
import { type CheckoutStateFile, StateSchema } from "./state-files.ts";
import { fileIdentity } from "./kept.ts";
import type { ProcessMemory } from "./process-memory.ts";

export function checkoutId(storeId: string, dir: string): string {
  return createHash("sha256").update(`${storeId}\0${dir}`).digest("hex").slice(0, 32);
}

/** The private state directory of the checkout at `dir` (its real path). */
export function checkoutStateDir(privateRoot: string, storeId: string, dir: string): string {
  return join(privateRoot, "checkouts", checkoutId(storeId, dir));
}

/**
 * Real paths of every checkout registered under the private root, for the
 * nesting check. A checkout whose directory is gone is no checkout: its
 * state is removed on the way (unless an operation holds it), so states of
 * removed directories — temporary ones above all — do not pile up and slow
 * every call down.
 */
export function registeredCheckouts(privateRoot: string, memory: ProcessMemory): string[] {
  const knownCheckouts = memory.checkouts;
  const base = join(privateRoot, "checkouts");
  let ids: string[];
  try {
    ids = readdirSync(base);
  } catch {
    return [];
  }
  const dirs: string[] = [];
  for (const id of ids) {
    if (id.startsWith(".")) continue; // being removed (below)
    const file = join(base, id, "state.json");
    // Every call checks every checkout: parse each state file only when it changed
    // (state files are replaced, never edited).
    const identity = fileIdentity(file);
    const known = knownCheckouts.get(file);
    let checkout = identity !== null && known?.identity === identity ? known.checkout : null;
    if (checkout === null) {
      try {
        const parsed = StateSchema.safeParse(readJson(file));
        if (!parsed.success) continue;
        checkout = parsed.data.checkout;
        if (identity !== null) knownCheckouts.set(file, { identity, checkout });
      } catch {
        continue; // unreadable state is the business of its own checkout
      }
    }
    if (exists(checkout)) dirs.push(checkout);
    else forgetCheckout(base, id);
  }
  return dirs;
}

function exists(path: string): boolean {
  try {
    lstatSync(path);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code !== "ENOENT";
  }
}

/**
 * Remove the state of a checkout whose directory is gone, unless an
 * operation holds its lock (it may be making the directory again). Renamed
 * aside first, so a half-removed state is never read as a checkout's.
 */
function forgetCheckout(base: string, id: string): void {
  if (exists(join(base, id, "lock"))) return;
  const aside = join(base, `.gone-${id}-${randomHex(4)}`);
  try {
    renameSync(join(base, id), aside);
    rmSync(aside, { recursive: true, force: true });
  } catch {
    /* another process got there first, or a state file is in use: next time */
  }
}

/**
 * Remove the private state of a checkout whose directory is being removed
 * (a server's temporary session directory, discard.ts). Call only once
 * nothing in the directory remains unpublished.
 */
export function forgetCheckoutState(privateRoot: string, storeId: string, dir: string): void {
  forgetCheckout(join(privateRoot, "checkouts"), checkoutId(storeId, dir));
}

/**
 * The state of every checkout registered under the private root, whatever
 * its store: what each was brought to, for a store that went backwards
 * (went-backwards.ts) and for gc. A state that does not parse is left out.
 */
export function checkoutStates(privateRoot: string): CheckoutStateFile[] {
  const base = join(privateRoot, "checkouts");
  let ids: string[];
  try {
    ids = readdirSync(base);
  } catch {
    return [];
  }
  const states: CheckoutStateFile[] = [];
  for (const id of ids) {
    if (id.startsWith(".")) continue; // being removed
    try {
      const parsed = StateSchema.safeParse(readJson(join(base, id, "state.json")));
      if (parsed.success) states.push(parsed.data);
    } catch {
      /* unreadable state is the business of its own checkout */
    }
  }
  return states;
}
