/**
 * Opening the configured store for use, proving first, where its kind asks
 * (stores.ts), that it enforces the conditional writes the protocol rests
 * on — and remembering a passed probe in a trust file under the private
 * root, so CLI calls do not pay for it each time.
 */
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { StartupRefusal } from "../contract/startup.ts";
import type { ObjectStore } from "../store/object-store.ts";
import type { RuntimeConfig } from "./config.ts";
import { DeferredStore } from "./deferred-store.ts";
import { openStore, storeIdentity, storeKind } from "./stores.ts";

/** How long a passed compatibility probe is trusted for one store location. */
export const PROBE_TRUST_MS = 24 * 60 * 60 * 1000;

/**
 * Open the configured store, proving first that an S3 store enforces the
 * conditional writes the protocol rests on (docs/design.md, The store and the
 * publication protocol). A passed probe is remembered per store location
 * under the private root for PROBE_TRUST_MS, so CLI calls do not pay for it
 * each time; a failed one is never cached. The embedded store is this
 * project's own code and is not probed.
 *
 * A trusted S3 store is opened on its first use (DeferredStore): opening it
 * loads the AWS SDK (~20 ms) and sends nothing, so nothing the start could
 * refuse is put off, and `serve` answers the handshake without it.
 */
export async function openVerifiedStore(config: RuntimeConfig, now: () => number = Date.now): Promise<ObjectStore> {
  const kind = storeKind(config.store);
  if (!kind.probe) return openStore(config.store);
  // Bun's hasher, not node:crypto's createHash, which costs ~2 ms to load; the same digest.
  const digest = new Bun.CryptoHasher("sha256").update(storeIdentity(config.store)).digest("hex");
  const marker = join(config.privateRoot, "probes", `${digest.slice(0, 32)}.json`);
  try {
    const passedAt = (JSON.parse(readFileSync(marker, "utf8")) as { passedAt?: unknown }).passedAt;
    if (typeof passedAt === "number" && now() - passedAt >= 0 && now() - passedAt < PROBE_TRUST_MS) {
      const spec = config.store;
      return new DeferredStore(spec.kind, () => openStore(spec));
    }
  } catch {
    /* no marker, or an unreadable one: probe */
  }
  const store = await openStore(config.store);
  const { probeStore } = await import("../store/probe.ts");
  const result = await probeStore(store);
  if (!result.ok) {
    await store.close();
    throw new StartupRefusal("INCOMPATIBLE_STORE", `the S3 compatibility probe failed: ${result.cause}`);
  }
  try {
    mkdirSync(dirname(marker), { recursive: true, mode: 0o700 });
    writeFileSync(marker, `${JSON.stringify({ passedAt: now() })}\n`, { mode: 0o600 });
  } catch {
    /* an unwritable cache only means probing again next time */
  }
  return store;
}
