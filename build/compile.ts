// `npm run build`: the standalone binary for this machine at dist/slivingdoc.
// `.env` and bunfig.toml autoloading are off in the binary, so a file in the
// user's working directory cannot change how slivingdoc behaves.
import { join } from "node:path";

const root = join(import.meta.dir, "..");
const outfile = join(root, "dist", "slivingdoc");
const result = await Bun.build({
  entrypoints: [join(root, "src", "main.ts")],
  compile: { outfile, autoloadDotenv: false, autoloadBunfig: false },
  minify: true,
  // Precompiled bytecode: start-up roughly halves (docs/performance.md, S8).
  bytecode: true,
  format: "esm",
  sourcemap: "linked",
});
if (!result.success) {
  for (const log of result.logs) console.error(log);
  process.exit(1);
}
console.error(`built ${outfile}`);
