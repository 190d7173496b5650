// `npm test`: every suite, on the embedded store and on a real S3 server.
// Builds dist/slivingdoc first, since the MCP suites spawn the binary.
// Starts a throwaway Ceph RGW (test/support/ceph-rgw.sh) unless an S3
// endpoint is already given in the environment (SLIVINGDOC_TEST_S3_BUCKET,
// for MinIO or AWS by hand), runs `bun test`, and always stops RGW again.
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const bun = join(root, "node_modules", ".bin", "bun");
const env = { ...process.env };
let rgwDir = null;

function stopRgw() {
  if (rgwDir === null) return;
  spawnSync("bash", [join(root, "test/support/ceph-rgw.sh"), "stop", rgwDir], { stdio: "inherit" });
  rmSync(rgwDir, { recursive: true, force: true });
  rgwDir = null;
}

for (const signal of ["SIGINT", "SIGTERM"]) {
  process.on(signal, () => {
    stopRgw();
    process.exit(130);
  });
}

let code = 1;
try {
  // The end-to-end suites spawn the built binary, as users run it.
  const built = spawnSync(bun, ["build/compile.ts"], { cwd: root, stdio: "inherit" });
  if (built.status !== 0) throw new Error("the build failed; see the lines above");
  if (!env.SLIVINGDOC_TEST_S3_BUCKET) {
    rgwDir = mkdtempSync(join(tmpdir(), "slivingdoc-rgw-"));
    const started = spawnSync("bash", [join(root, "test/support/ceph-rgw.sh"), "start", rgwDir], { stdio: "inherit" });
    if (started.status !== 0) throw new Error("Ceph RGW did not start; see the lines above");
    for (const line of readFileSync(join(rgwDir, "env"), "utf8").split("\n")) {
      const eq = line.indexOf("=");
      if (eq > 0) env[line.slice(0, eq)] = line.slice(eq + 1);
    }
  }
  // Suites spawn real processes and a real S3 server: a test may take far
  // longer than Bun's 5-second default on a busy 2-core machine.
  const result = spawnSync(bun, ["test", "--timeout", "120000", ...process.argv.slice(2)], { cwd: root, env, stdio: "inherit" });
  code = result.status ?? 1;
} catch (e) {
  process.stderr.write(`npm test: ${e.message}\n`);
  code = 1;
} finally {
  stopRgw();
}
process.exit(code);
