/**
 * A second writer in a checkout's directory, as a script logging into a
 * notebook file is: every few milliseconds it appends one numbered line the
 * way `echo line >> FILE` does (open for appending, write, close), with a
 * pause of up to a tenth of a second now and then, until it gets SIGTERM.
 * Then it prints what it wrote, as JSON on stdout.
 *
 *   appender-worker.ts FILE TAG
 *
 * Each line is classified by whether the path still named the very file it
 * wrote into, checked after the write: "named" lines were written into the
 * file while it had its name, so nothing may lose them; "unnamed" ones went
 * into a file that had been replaced by then, which slivingdoc carries into
 * the new file only when they were written before the call's last look at
 * the old one (docs/failures.md). The test asserts on the first and reports
 * the second.
 * `replaced` counts the times the file at the path was another one than at
 * the previous append: the rewrites the test is about.
 */
import { closeSync, fstatSync, openSync, statSync, writeSync } from "node:fs";

const [file, tag] = process.argv.slice(2) as [string, string];
const named: number[] = [];
const unnamed: number[] = [];
let replaced = 0;
let last = -1;
let stop = false;
process.on("SIGTERM", () => {
  stop = true;
});

for (let n = 1; !stop; n++) {
  const fd = openSync(file, "a");
  try {
    writeSync(fd, `${tag} ${n}\n`);
    let there = -1;
    try {
      there = statSync(file).ino;
    } catch {
      /* no file at the path at this instant */
    }
    const mine = fstatSync(fd).ino;
    (there === mine ? named : unnamed).push(n);
    if (last !== -1 && mine !== last) replaced++;
    last = mine;
  } finally {
    closeSync(fd);
  }
  // Bursts, as logging comes: a file written to without a pause is merged again and again, and left for the next call.
  await Bun.sleep(Math.random() < 0.05 ? 20 + Math.random() * 80 : 1 + Math.random() * 5);
}
process.stdout.write(`${JSON.stringify({ named, unnamed, replaced })}\n`);
