/**
 * The stores a suite runs on alike: the embedded store, and S3 — the test
 * server, each world under a prefix of its own — when one is configured;
 * else a failing test says how to get one (s3ServerMissing), since CI runs
 * them all.
 */
import { makeWorld, type World } from "./fixture.ts";
import { emptyStore, s3ServerMissing, testBucket, testEndpoint, testS3Store } from "./s3-test-store.ts";

export interface StorePlaces {
  /** Each store's name for the tests' titles, and how to make a world on it. */
  places: Array<[string, () => World]>;
  /** Empty the S3 prefix of the last world made on S3 (before that world closes): the suite's afterEach. */
  emptyS3(): Promise<void>;
}

/** `name` goes into each S3 world's prefix, so that a run's litter says which suite left it. */
export function storePlaces(name: string): StorePlaces {
  let cleanup: (() => Promise<void>) | undefined;
  const s3 = () => {
    const prefix = `slivingdoc-test/${name}-${crypto.randomUUID().slice(0, 8)}`;
    const store = testS3Store(prefix);
    cleanup = () => emptyStore(store);
    return makeWorld(store, `s3://${testBucket}/${prefix}/@${testEndpoint ?? "aws"}`);
  };
  const places: StorePlaces["places"] = [["the embedded store", () => makeWorld()]];
  if (!s3ServerMissing()) places.push(["S3", s3]);
  return {
    places,
    async emptyS3() {
      const c = cleanup;
      cleanup = undefined;
      await c?.();
    },
  };
}
