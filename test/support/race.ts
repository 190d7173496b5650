/**
 * The multi-process race of the notebook tests: racers run
 * test/e2e/race-worker.ts, each printing one JSON line per acknowledged commit.
 */
import { expect } from "bun:test";
import { join } from "node:path";

export interface Acknowledged {
  id: string;
  j: number;
  generation: number;
}

/** Run `racers` workers of `commits` commits each; every worker must exit 0. Returns what they acknowledged. */
export async function runRacers(
  racers: number,
  commits: number,
  checkout: (i: number) => string,
  env: (i: number) => Record<string, string>,
): Promise<Acknowledged[]> {
  const worker = join(import.meta.dir, "../e2e/race-worker.ts");
  const workers = Array.from({ length: racers }, (_, i) =>
    Bun.spawn([process.execPath, worker, String(i), checkout(i), String(commits)], { env: env(i), stdout: "pipe", stderr: "pipe" }),
  );
  const outputs = await Promise.all(
    workers.map(async (w) => ({ out: await new Response(w.stdout).text(), err: await new Response(w.stderr).text(), code: await w.exited })),
  );
  for (const o of outputs) {
    if (o.code !== 0) console.error(o.err);
    expect(o.code).toBe(0);
  }
  return outputs.flatMap((o) =>
    o.out
      .trim()
      .split("\n")
      .filter(Boolean)
      .map((l) => JSON.parse(l) as Acknowledged),
  );
}
