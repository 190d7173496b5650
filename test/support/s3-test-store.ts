/**
 * The S3 test server as the environment names it — the throwaway Ceph RGW
 * `npm test` starts (build/rgw.mjs), or an endpoint of your own (docs/s3.md)
 * — and stores on it under a prefix of the test's choosing.
 */
import { test } from "bun:test";
import type { ObjectStore } from "../../src/store/object-store.ts";
import { createS3Store } from "../../src/store/s3.ts";
import { SYSTEM_CLOCK } from "../../src/surfaces/system-clock.ts";

const env = process.env;

/** The test bucket; undefined when no S3 test server is configured. */
export const testBucket = env.SLIVINGDOC_TEST_S3_BUCKET;
export const testEndpoint = env.AWS_ENDPOINT_URL_S3 ?? env.AWS_ENDPOINT_URL;

/**
 * Whether no S3 test server is configured — and if so, a failing test
 * saying how to get one, registered in the calling file: a suite that
 * cannot run on S3 fails rather than skips, since CI runs them all.
 */
export function s3ServerMissing(): boolean {
  if (testBucket) return false;
  test("S3 test server is configured", () => {
    throw new Error(
      "SLIVINGDOC_TEST_S3_BUCKET is not set, so the S3 tests cannot run. Run `npm test` (it starts a throwaway Ceph RGW), " +
        "or start one with `bash test/support/ceph-rgw.sh start DIR` and load it with `set -a; . DIR/env; set +a` (see docs/s3.md).",
    );
  });
  return true;
}

/** What a test sets otherwise than the environment: a missing bucket, a dead endpoint, no retries. */
export interface TestStoreOptions {
  bucket?: string;
  endpoint?: string;
  maxAttempts?: number;
}

/** A store on the test bucket under `prefix` (no trailing slash needed). */
export function testS3Store(prefix: string, options: TestStoreOptions = {}): ObjectStore {
  const region = env.S3_REGION ?? env.AWS_REGION;
  const endpoint = options.endpoint ?? testEndpoint;
  return createS3Store({
    bucket: options.bucket ?? testBucket!,
    prefix,
    ...(region ? { region } : {}),
    ...(endpoint ? { endpoint } : {}),
    ...(options.maxAttempts !== undefined ? { maxAttempts: options.maxAttempts } : {}),
    forcePathStyle: env.S3_FORCE_PATH_STYLE === "1",
    clock: SYSTEM_CLOCK,
  });
}

/**
 * Delete every object under each of `prefixes` (keys of the test bucket,
 * each ending in "/"): leave the bucket as the test found it, which
 * matters on a shared one. Best effort: what cannot be listed or deleted
 * is left, and the test's own result stands.
 */
export async function removePrefixes(prefixes: readonly string[]): Promise<void> {
  if (!testBucket || prefixes.length === 0) return;
  const cleaner = testS3Store("");
  for (const prefix of prefixes) {
    for (const o of await cleaner.list(prefix).catch(() => [])) await cleaner.delete(o.key).catch(() => {});
  }
  await cleaner.close();
}

/** Delete every object under the store's prefix. */
export async function emptyStore(store: ObjectStore): Promise<void> {
  for (const o of await store.list("")) await store.delete(o.key);
}
