// `npm run bench`: the benchmark suite (test/bench/run.ts), not a test.
// Installs dependencies when needed, builds dist/slivingdoc (the scenarios
// run the binary as users do), starts a throwaway Ceph RGW unless an S3
// endpoint is already given in the environment (SLIVINGDOC_TEST_S3_BUCKET),
// runs the suite, and always stops RGW again. Extra arguments go to the
// suite (`npm run bench -- --only warm-commit,start-up --quick`). The table goes to stdout
// and, with --out FILE, the raw rows to FILE as JSON.
import { spawnSync } from "node:child_process";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { withRgw } from "./rgw.mjs";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const bun = join(root, "node_modules", ".bin", "bun");

let code = 1;
try {
  const deps = spawnSync(process.execPath, [join(root, "build/ensure-deps.mjs")], { cwd: root, stdio: "inherit" });
  if (deps.status !== 0) throw new Error("installing dependencies failed; see the lines above");
  const built = spawnSync(bun, ["build/compile.ts"], { cwd: root, stdio: "inherit" });
  if (built.status !== 0) throw new Error("the build failed; see the lines above");
  code = withRgw(root, { ...process.env }, (env) => {
    const result = spawnSync(bun, ["test/bench/run.ts", ...process.argv.slice(2)], { cwd: root, env, stdio: "inherit" });
    return result.status ?? 1;
  });
} catch (e) {
  process.stderr.write(`npm run bench: ${e.message}\n`);
  code = 1;
}
process.exit(code);
