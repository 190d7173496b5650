// `npm test`: every suite, on the embedded store and on a real S3 server.
// Builds dist/slivingdoc first, since the MCP suites spawn the binary, then
// runs `bun test` with the S3 test server of build/rgw.mjs.
import { spawnSync } from "node:child_process";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { withRgw } from "./rgw.mjs";
import { ensureTestPackages } from "./test-packages.mjs";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const bun = join(root, "node_modules", ".bin", "bun");

let code = 1;
try {
  // The type checker first: a type error fails the run before anything else.
  const tsc = join(root, "node_modules", "typescript", "bin", "tsc");
  // The web page (browser code, DOM types) has its own tsconfig.json.
  for (const project of ["tsconfig.json", "src/surfaces/web/page/tsconfig.json"]) {
    const typed = spawnSync(process.execPath, [tsc, "--noEmit", "-p", project], { cwd: root, stdio: "inherit" });
    if (typed.status !== 0) throw new Error(`the type check (tsc --noEmit -p ${project}) failed; see the errors above`);
  }
  // Programs the suites call (strace): installed here, never by a suite.
  ensureTestPackages();
  // The end-to-end suites spawn the built binary, as users run it.
  const built = spawnSync(bun, ["build/compile.ts"], { cwd: root, stdio: "inherit" });
  if (built.status !== 0) throw new Error("the build failed; see the lines above");
  code = withRgw(root, { ...process.env }, (env) => {
    // Suites spawn real processes and a real S3 server: a test may take far
    // longer than Bun's 5-second default on a busy 2-core machine.
    const result = spawnSync(bun, ["test", "--timeout", "120000", ...process.argv.slice(2)], { cwd: root, env, stdio: "inherit" });
    return result.status ?? 1;
  });
} catch (e) {
  process.stderr.write(`npm test: ${e.message}\n`);
  code = 1;
}
process.exit(code);
