/**
 * The multi-process race of the notebook tests: racers run
 * test/e2e/race-worker.ts, each printing one JSON line per acknowledged commit.
 */
import { expect } from "bun:test";
import { readFileSync } from "node:fs";
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

/** shared.md before the race: one line per racer, two blank lines apart, so edits to different slots merge. */
export function raceSeed(racers: number): string {
  return Array.from({ length: racers }, (_, i) => `slot ${i}: none\n\n\n`).join("");
}

/** After the race, a fresh checkout holds every acknowledged edit: each racer's last slot value and all its own lines. */
export function expectRaceSurvived(check: string, racers: number, commits: number): void {
  const shared = readFileSync(join(check, "shared.md"), "utf8");
  for (let i = 0; i < racers; i++) {
    expect(shared).toContain(`slot ${i}: ${commits - 1}\n`);
    const own = readFileSync(join(check, `agent-${i}.md`), "utf8");
    expect(own).toBe(Array.from({ length: commits }, (_, j) => `agent ${i} commit ${j}\n`).join(""));
  }
}
