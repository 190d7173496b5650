// `npm run build`: the standalone binary for this machine at dist/slivingdoc.
// The compile options are shared with the release build (binary-options.ts).
import { join } from "node:path";
import { binaryBuild } from "./binary-options.ts";

const root = join(import.meta.dir, "..");
const outfile = join(root, "dist", "slivingdoc");
const result = await Bun.build(binaryBuild(outfile));
if (!result.success) {
  for (const log of result.logs) console.error(log);
  process.exit(1);
}
console.error(`built ${outfile}`);
