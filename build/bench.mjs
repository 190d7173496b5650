// `npm run bench`: the benchmark suite (test/bench/run.ts), not a test.
// Installs dependencies when needed, builds dist/slivingdoc (the scenarios
// run the binary as users do), starts a throwaway Ceph RGW unless an S3
// endpoint is already given in the environment (SLIVINGDOC_TEST_S3_BUCKET),
// runs the suite, and always stops RGW again. Extra arguments go to the
// suite (`npm run bench -- --only S1,S8 --quick`). The table goes to stdout
// and, with --out FILE, the raw rows to FILE as JSON.
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
  const deps = spawnSync(process.execPath, [join(root, "build/ensure-deps.mjs")], { cwd: root, stdio: "inherit" });
  if (deps.status !== 0) throw new Error("installing dependencies failed; see the lines above");
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
  const result = spawnSync(bun, ["test/bench/run.ts", ...process.argv.slice(2)], { cwd: root, env, stdio: "inherit" });
  code = result.status ?? 1;
} catch (e) {
  process.stderr.write(`npm run bench: ${e.message}\n`);
  code = 1;
} finally {
  stopRgw();
}
process.exit(code);
