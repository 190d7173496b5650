/**
 * A full disk, really full: a 256 KiB tmpfs mounted, in a mount namespace of
 * the test's own (`unshare`: as root, or as a user through a user
 * namespace), under the notebook directory or the private root, while
 * another checkout published a file larger than that. The answer keeps the
 * table's tokens, says that space ran out and where, and does not send the
 * caller to pull into the same full disk (src/engine/checkout/disk-full.ts).
 */
import { afterAll, expect, test } from "bun:test";
import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { BINARY, requireBinary } from "../support/mcp.ts";
import { jsonOf, runCli, scratchDir } from "../support/kill-harness.ts";

const scratch = scratchDir("disk-full");
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

/** Runs `script` (bash) with a small tmpfs at `$SMALL`, in a mount namespace that ends with it; its stdout. */
function inSmallDisk(script: string): string {
  const small = join(scratch, "small");
  mkdirSync(small, { recursive: true });
  const asRoot = process.getuid?.() === 0;
  const unshare = asRoot ? ["unshare", "--mount"] : ["unshare", "--user", "--map-root-user", "--mount"];
  const r = Bun.spawnSync([...unshare, "bash", "-euc", `mount -t tmpfs -o size=256k tmpfs "$SMALL"\n${script}`], {
    env: { ...(process.env as Record<string, string>), SMALL: small, B: BINARY, SLIVINGDOC_STORE: `sqlite:${join(scratch, "store.db")}` },
  });
  if (r.exitCode !== 0) throw new Error(`the full-disk scenario could not run (unshare and mount -t tmpfs are needed):\n${r.stderr.toString()}`);
  return r.stdout.toString();
}

async function published(): Promise<void> {
  const env = { ...(process.env as Record<string, string>), SLIVINGDOC_STORE: `sqlite:${join(scratch, "store.db")}`, SLIVINGDOC_PRIVATE_ROOT: join(scratch, "private-b") };
  const b = join(scratch, "b");
  expect((await runCli(["pull", b], env)).code).toBe(0);
  // Larger than the whole small disk, even compressed in its pack: random text.
  const lines = Array.from({ length: 6_000 }, () => Buffer.from(crypto.getRandomValues(new Uint8Array(48))).toString("base64"));
  writeFileSync(join(b, "big.md"), `${lines.join("\n")}\n`);
  writeFileSync(join(b, "small.md"), "small\n");
  expect((await runCli(["commit", "-m", "big", b], env)).code).toBe(0);
}

test("a pull into a notebook on a full disk: RECOVERY_FAILURE that says the notebook's disk is full, the files as they were", async () => {
  requireBinary();
  await published();
  const out = inSmallDisk(`
    export SLIVINGDOC_PRIVATE_ROOT=${join(scratch, "private-a")}
    "$B" pull --json "$SMALL/nb" > ${join(scratch, "first.json")} || true
    "$B" pull --json "$SMALL/nb" > ${join(scratch, "second.json")} || true
    ls -A "$SMALL/nb"
  `);
  for (const name of ["first.json", "second.json"]) {
    const answer = JSON.parse(readFileSync(join(scratch, name), "utf8"));
    expect([answer.code, answer.reason, answer.action]).toEqual(["RECOVERY_FAILURE", "LOCAL_MUTATION_FAILED", "PULL"]);
    expect(answer.recovery).toEqual({ stage: "pull.materialize", remoteAccepted: "no", resynchronized: true });
    expect(answer.message).toContain("No space was left on the device that holds the notebook directory");
    expect(answer.message).toContain("Free some space there before you pull again");
    expect(answer.message).not.toContain("ENOSPC");
  }
  // Put back as it was: empty, not a half-written big.md.
  expect(out.trim()).toBe("");
});

test("a pull whose private state is on a full disk: LOCAL_STATE that says so, nothing changed", async () => {
  requireBinary();
  const nb = join(scratch, "nb-private-full");
  inSmallDisk(`
    export SLIVINGDOC_PRIVATE_ROOT="$SMALL/private"
    "$B" pull --json ${nb} > ${join(scratch, "private.json")} 2> ${join(scratch, "private.err")} || true
  `);
  const r = { stdout: readFileSync(join(scratch, "private.json"), "utf8") };
  const answer = jsonOf(r)!;
  expect([answer.code, answer.reason, answer.action]).toEqual(["STORAGE_FAILURE", "LOCAL_STATE", "RETRY"]);
  expect(answer.message).toContain("No space is left on the device that holds slivingdoc's private state (--private-root); no file was changed.");
  expect(JSON.stringify(answer)).not.toContain(scratch);
  expect(readFileSync(join(scratch, "private.err"), "utf8")).not.toContain("ENOSPC");
});
