/**
 * The S3 test server as the environment names it — the throwaway Ceph RGW
 * `npm test` starts (build/rgw.mjs), or an endpoint of your own (docs/s3.md)
 * — and stores on it under a prefix of the test's choosing.
 */
import type { ObjectStore } from "../../src/store/object-store.ts";
import { createS3Store } from "../../src/store/s3.ts";

const env = process.env;

/** The test bucket; undefined when no S3 test server is configured. */
export const testBucket = env.SLIVINGDOC_TEST_S3_BUCKET;
export const testEndpoint = env.AWS_ENDPOINT_URL_S3 ?? env.AWS_ENDPOINT_URL;

/** A store on the test bucket under `prefix` (no trailing slash needed). */
export function testS3Store(prefix: string): ObjectStore {
  const region = env.S3_REGION ?? env.AWS_REGION;
  return createS3Store({
    bucket: testBucket!,
    prefix,
    ...(region ? { region } : {}),
    ...(testEndpoint ? { endpoint: testEndpoint } : {}),
    forcePathStyle: env.S3_FORCE_PATH_STYLE === "1",
  });
}

/** Delete every object under the store's prefix. */
export async function emptyStore(store: ObjectStore): Promise<void> {
  for (const o of await store.list("")) await store.delete(o.key);
}
