/**
 * The wrappers put around a store pass the same conformance suite as the
 * stores themselves (docs/decisions/0006-one-pointer-over-immutable-packs.md):
 * the fault injector with no fault armed (test/support/faulty-store.ts),
 * and the store opened on first use that `serve` and the
 * CLI get for a trusted S3 store (src/surfaces/deferred-store.ts) — both
 * around the embedded store, and around each other.
 */
import { afterAll } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { NO_CAPABILITIES } from "../../src/store/object-store.ts";
import { openSqliteStore } from "../../src/store/sqlite.ts";
import { DeferredStore } from "../../src/surfaces/deferred-store.ts";
import { STORES } from "../../src/surfaces/stores.ts";
import { faultyStore } from "../support/faulty-store.ts";
import { describeStoreConformance } from "./conformance.ts";
import { SYSTEM_CLOCK } from "../../src/surfaces/system-clock.ts";

const root = mkdtempSync(join(tmpdir(), "slivingdoc-wrappers-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));
let n = 0;
const sqlite = () => openSqliteStore(join(root, `store-${n++}.db`), SYSTEM_CLOCK);

// The fault injector offers only the requests every store serves, which it can fault.
describeStoreConformance("faulty(sqlite), no fault armed", async () => faultyStore(sqlite(), () => null), { capabilities: NO_CAPABILITIES });
describeStoreConformance("deferred(sqlite)", async () => new DeferredStore("sqlite", STORES.sqlite.capabilities, async () => sqlite()), {
  capabilities: STORES.sqlite.capabilities,
});
describeStoreConformance("deferred(faulty(sqlite))", async () => new DeferredStore("sqlite", NO_CAPABILITIES, async () => faultyStore(sqlite(), () => null)), {
  capabilities: NO_CAPABILITIES,
});
