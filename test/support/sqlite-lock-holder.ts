/**
 * Another process holding the embedded store's write lock, as any SQLite
 * client can: run as a script, it opens the SQLite file its argument names,
 * begins an immediate transaction (the write lock), says "locked" on
 * stdout, and holds it until its stdin ends; then commits and exits.
 */
import { Database } from "bun:sqlite";

/**
 * Start a holder of `file`'s write lock; resolves once it holds it, with
 * `release`, which ends the hold and waits for the process to exit.
 */
export async function holdWriteLock(file: string): Promise<{ release(): Promise<void> }> {
  const p = Bun.spawn([process.execPath, import.meta.path, file], { stdin: "pipe", stdout: "pipe", stderr: "inherit" });
  const reader = p.stdout.getReader();
  let said = "";
  while (!said.includes("locked\n")) {
    const { value, done } = await reader.read();
    if (done) throw new Error(`the lock holder ended before it held the lock (exit ${await p.exited})`);
    said += new TextDecoder().decode(value);
  }
  return {
    async release() {
      p.stdin.end();
      await p.exited;
    },
  };
}

if (import.meta.main) {
  const db = new Database(process.argv[2]!);
  db.run("BEGIN IMMEDIATE");
  process.stdout.write("locked\n");
  for await (const _ of Bun.stdin.stream()) {
    // Nothing is read but the end of the stream.
  }
  db.run("COMMIT");
  db.close();
}
