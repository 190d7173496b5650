/**
 * s3rver, an S3 server from npm that ignores the conditional-write headers
 * (If-None-Match, If-Match): the store every S3 look-alike that answers 200
 * to everything stands for. Only doctor's tests need it, so it is not a
 * dependency of the project: it is installed on first use, at a pinned
 * version, into node_modules/.cache (which `npm ci` empties), keeping its
 * packages and whatever npm says of them out of every install.
 */
import { existsSync, mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const VERSION = "3.7.1";
const HOME = join(import.meta.dir, "../../node_modules/.cache", `s3rver-${VERSION}`);
const SCRIPT = join(HOME, "node_modules/s3rver/bin/s3rver.js");

/** The access key s3rver accepts, public and fixed: not a secret. */
export const S3RVER_KEY = "S3RVER";

export interface S3rver {
  url: string;
  bucket: string;
  close(): Promise<void>;
}

function install(): void {
  if (existsSync(SCRIPT)) return;
  mkdirSync(HOME, { recursive: true });
  const npm = Bun.spawnSync(["npm", "install", "--prefix", HOME, "--no-audit", "--no-fund", "--no-save", "--loglevel=error", `s3rver@${VERSION}`], {
    stdout: "pipe",
    stderr: "pipe",
  });
  if (npm.exitCode !== 0 || !existsSync(SCRIPT)) throw new Error(`installing s3rver@${VERSION} failed:\n${npm.stderr.toString()}`);
}

/** s3rver on a free port with one empty bucket, run by this runtime. */
export async function startS3rver(bucket = "notes"): Promise<S3rver> {
  install();
  const data = mkdtempSync(join(tmpdir(), "slivingdoc-s3rver-"));
  const p = Bun.spawn([process.execPath, SCRIPT, "--directory", data, "--port", "0", "--configure-bucket", bucket, "--silent"], { stdout: "pipe", stderr: "pipe" });
  const reader = p.stdout.getReader();
  let seen = "";
  const deadline = Date.now() + 20_000;
  while (!/listening on [\d.]+:(\d+)/.test(seen)) {
    if (Date.now() > deadline) throw new Error(`s3rver did not start: ${seen}`);
    const { value, done } = await reader.read();
    if (done) throw new Error(`s3rver ended: ${seen}${await new Response(p.stderr).text()}`);
    seen += new TextDecoder().decode(value);
  }
  reader.releaseLock();
  const port = /listening on [\d.]+:(\d+)/.exec(seen)![1];
  return {
    url: `http://127.0.0.1:${port}`,
    bucket,
    async close() {
      p.kill();
      await p.exited;
      rmSync(data, { recursive: true, force: true });
    },
  };
}
