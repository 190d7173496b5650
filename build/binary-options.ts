// How every slivingdoc binary is compiled, for this machine (build/compile.ts)
// and for each release target (build/release.ts), so the two cannot drift.
import { spawnSync } from "node:child_process";
import { join } from "node:path";
import { bundlePage } from "../src/surfaces/web/assets.ts";

const root = join(import.meta.dir, "..");

/** The commit the binary is built from, as `--version` names it; "unknown" outside a git checkout. */
function buildCommit(): string {
  const head = spawnSync("git", ["rev-parse", "--short=12", "HEAD"], { cwd: root, encoding: "utf8" });
  if (head.status !== 0) return "unknown";
  const dirty = spawnSync("git", ["status", "--porcelain", "--untracked-files=no"], { cwd: root, encoding: "utf8" });
  return `${head.stdout.trim()}${dirty.stdout.trim() === "" ? "" : "+changes"}`;
}

/** Bun.build options for a standalone binary at `outfile`; `cross` names another platform's target and runtime. */
export async function binaryBuild(outfile: string, cross?: { target: string; executablePath: string }): Promise<Parameters<typeof Bun.build>[0]> {
  // The page of `slivingdoc web`, bundled for the browser now and carried as
  // one string: the binary fetches and builds nothing at run time. Only
  // src/surfaces/web/assets.ts reads it, in the chunk `web` alone loads.
  const webPage = JSON.stringify(await bundlePage());
  return {
    entrypoints: [join(root, "src", "main.ts")],
    compile: {
      ...(cross ? { target: cross.target as never, executablePath: cross.executablePath } : {}),
      outfile,
      // A `.env` or bunfig.toml in the user's directory must not change how slivingdoc behaves.
      autoloadDotenv: false,
      autoloadBunfig: false,
    },
    minify: true,
    // Precompiled bytecode: start-up roughly halves (docs/performance.md, scenario `start-up`).
    bytecode: true,
    // Modules imported dynamically (the MCP SDK, the engine, the AWS SDK) go
    // into their own chunks inside the binary, loaded when first imported: in
    // one file, their mere presence cost ~8 ms of every start.
    splitting: true,
    format: "esm",
    // The binary embeds its source map; the .map file beside it is not shipped.
    sourcemap: "linked",
    // Read by `--version` (surfaces/cli/version.ts); a run from source has none.
    define: { SLIVINGDOC_BUILD_COMMIT: JSON.stringify(buildCommit()), SLIVINGDOC_WEB_ASSETS: JSON.stringify(webPage) },
  };
}
