// `npm run build`: the standalone binary for this machine at dist/slivingdoc.
// The compile options are shared with the release build (binary-options.ts).
import { existsSync, readdirSync, rmSync } from "node:fs";
import { join } from "node:path";
import { binaryBuild } from "./binary-options.ts";

const root = join(import.meta.dir, "..");
const dist = join(root, "dist");
const outfile = join(dist, "slivingdoc");
// Each build writes the source maps of its chunks under new names; the last
// build's are the only ones that describe the binary.
for (const name of existsSync(dist) ? readdirSync(dist, { withFileTypes: true }) : []) {
  if (name.isFile() && /^chunk-[a-z0-9]+\.js\.map$/.test(name.name)) rmSync(join(dist, name.name));
}
const result = await Bun.build(await binaryBuild(outfile));
if (!result.success) {
  for (const log of result.logs) console.error(log);
  process.exit(1);
}
console.error(`built ${outfile}`);
