/**
 * The first commit of a large notebook, as one whole CLI process, does not
 * hold the notebook in memory several times over: its peak resident memory
 * above that of an idle call (a pull of the empty notebook, same binary) is
 * bounded by a multiple of the notebook's bytes.
 *
 * Measured on 10,000 files of ~5.6 KB (54 MiB) with the embedded store:
 * 335–383 MB above the idle call (6.2–6.8× the notebook) when the scan kept
 * every file's bytes and the pack was built from a list of its entries,
 * then copied twice; 197–205 MB (3.7×) since. The bound, 5×, sits between the two
 * with room for the garbage collector's timing. The rest is the pack, which
 * the embedded store copies twice more on its way into SQLite, and garbage
 * not yet collected (docs/performance.md, BULK).
 */
import { afterAll, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { peakOf } from "../support/peak-memory.ts";
import { mulberry32 } from "../support/seeded.ts";

const binary = join(import.meta.dir, "../../dist/slivingdoc");
const root = mkdtempSync(join(tmpdir(), "slivingdoc-bulk-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));

const FILES = 10_000;
const BYTES = 5_600;
const BOUND = 5;

const WORDS = "the agent notes plan decided ship review merge commit pull store pack tree file line draft open question answer risk owner".split(" ");

/** Deterministic prose, 100 files to a directory; returns the bytes written. */
function writeNotebook(dir: string): number {
  const rand = mulberry32(24);
  let total = 0;
  for (let i = 0; i < FILES; i++) {
    let text = `# note ${i}\n\n`;
    while (text.length < BYTES) {
      const n = 6 + Math.floor(rand() * 9);
      text += `${Array.from({ length: n }, () => WORDS[Math.floor(rand() * WORDS.length)]).join(" ")}\n`;
    }
    const file = join(dir, `d${String(Math.floor(i / 100)).padStart(3, "0")}`, `f${String(i).padStart(5, "0")}.md`);
    mkdirSync(dirname(file), { recursive: true });
    writeFileSync(file, text);
    total += text.length;
  }
  return total;
}

/** The binary on this test's store and private root, to its end: its peak resident memory in bytes. */
function peakOfCall(args: string[]): Promise<number> {
  const env = { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: join(root, "home") };
  return peakOf([binary, ...args, "--store", `sqlite:${join(root, "store.db")}`, "--private-root", join(root, "private"), "--deadline", "30m"], env);
}

test(`the first commit of ${FILES.toLocaleString("en")} files holds at most ${BOUND}× the notebook beyond an idle call`, async () => {
  const dir = join(root, "notebook");
  const idle = await peakOfCall(["pull", dir]);
  const bytes = writeNotebook(dir);
  const peak = await peakOfCall(["commit", dir, "-m", "first"]);
  const mb = (n: number) => `${(n / 2 ** 20).toFixed(0)} MB`;
  console.log(`first commit: ${mb(peak - idle)} above the idle call's ${mb(idle)}, for ${mb(bytes)} of files: ${((peak - idle) / bytes).toFixed(1)}×`);
  expect((peak - idle) / bytes).toBeLessThanOrEqual(BOUND);
}, 600_000);
