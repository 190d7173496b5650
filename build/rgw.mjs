// The throwaway Ceph RGW that `npm test` and `npm run bench` run against:
// started unless an S3 endpoint is already given in the environment
// (SLIVINGDOC_TEST_S3_BUCKET, for MinIO or AWS by hand), and always stopped,
// also on Ctrl-C. Plain Node: it runs before anything else is known to work.
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

/** Run `fn(env)` with the S3 test server's variables in `env`; returns fn's exit code. */
export function withRgw(root, env, fn) {
  let dir = null;
  const stop = () => {
    if (dir === null) return;
    spawnSync("bash", [join(root, "test/support/ceph-rgw.sh"), "stop", dir], { stdio: "inherit" });
    rmSync(dir, { recursive: true, force: true });
    dir = null;
  };
  const onSignal = () => {
    stop();
    process.exit(130);
  };
  process.on("SIGINT", onSignal);
  process.on("SIGTERM", onSignal);
  try {
    if (!env.SLIVINGDOC_TEST_S3_BUCKET) {
      dir = mkdtempSync(join(tmpdir(), "slivingdoc-rgw-"));
      const started = spawnSync("bash", [join(root, "test/support/ceph-rgw.sh"), "start", dir], { stdio: "inherit" });
      if (started.status !== 0) throw new Error("Ceph RGW did not start; see the lines above");
      for (const line of readFileSync(join(dir, "env"), "utf8").split("\n")) {
        const eq = line.indexOf("=");
        if (eq > 0) env[line.slice(0, eq)] = line.slice(eq + 1);
      }
    }
    return fn(env);
  } finally {
    stop();
    process.off("SIGINT", onSignal);
    process.off("SIGTERM", onSignal);
  }
}
