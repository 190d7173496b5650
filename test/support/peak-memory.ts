/**
 * A whole process's peak resident memory: VmHWM from /proc, read every 5 ms
 * until the process exits (Linux). The memory tests hold a command's peak
 * above that of an idle call to a multiple of the bytes it handles.
 */
import { expect } from "bun:test";
import { readFileSync } from "node:fs";

/** Run `argv` to its end with `env`; its peak resident memory in bytes. A failing run throws with its stderr. */
export async function peakOf(argv: string[], env: Record<string, string>): Promise<number> {
  const p = Bun.spawn(argv, { env, stdout: "ignore", stderr: "pipe" });
  let peak = 0;
  const sample = () => {
    try {
      const m = /^VmHWM:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${p.pid}/status`, "utf8"));
      if (m) peak = Math.max(peak, Number(m[1]) * 1024);
    } catch {
      /* exited between samples */
    }
  };
  const timer = setInterval(sample, 5);
  const [code, err] = await Promise.all([p.exited, new Response(p.stderr).text()]);
  clearInterval(timer);
  if (code !== 0) throw new Error(`${argv.slice(1, 2).join(" ")} exited ${code}: ${err.slice(0, 2000)}`);
  expect(peak).toBeGreaterThan(0);
  return peak;
}
