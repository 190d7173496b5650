/**
 * A local server that answers every request as S3 answers one it refuses:
 * an HTTP status and S3's XML error body with its code — for the causes
 * the real S3 server of the tests cannot be made to give (expired
 * credentials, a clock too far off, a request timed out), read by the real
 * AWS SDK exactly as it reads AWS's own answers. Over TLS with a
 * certificate of its own when asked: one no system trusts.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

export interface RefusingServer {
  url: string;
  /** Requests it has answered. */
  requests(): number;
  stop(): void;
}

/** Answers `status` with `code` to everything, on a free local port. */
export function s3Refusing(code: string, status: number): RefusingServer {
  let requests = 0;
  const server = Bun.serve({
    port: 0,
    hostname: "127.0.0.1",
    fetch() {
      requests++;
      const body = `<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>${code}</Code><Message>refused by the test</Message><RequestId>t</RequestId></Error>`;
      return new Response(body, { status, headers: { "content-type": "application/xml", date: new Date().toUTCString() } });
    },
  });
  return { url: `http://127.0.0.1:${server.port}`, requests: () => requests, stop: () => server.stop(true) };
}

/** An https:// endpoint whose certificate is self-signed (openssl makes it); it answers 200 to whatever reaches it. */
export function selfSignedTls(): RefusingServer {
  const dir = mkdtempSync(join(tmpdir(), "slivingdoc-tls-"));
  const made = Bun.spawnSync(
    ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=127.0.0.1", "-keyout", join(dir, "key.pem"), "-out", join(dir, "cert.pem")],
    { stderr: "pipe" },
  );
  if (made.exitCode !== 0) throw new Error(`openssl could not make a certificate: ${made.stderr.toString()}`);
  let requests = 0;
  const server = Bun.serve({
    port: 0,
    hostname: "127.0.0.1",
    tls: { cert: Bun.file(join(dir, "cert.pem")), key: Bun.file(join(dir, "key.pem")) },
    fetch() {
      requests++;
      return new Response("", { status: 200 });
    },
  });
  return {
    url: `https://127.0.0.1:${server.port}`,
    requests: () => requests,
    stop() {
      server.stop(true);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** A local port nothing listens on: bound, then closed. */
export async function closedPort(): Promise<number> {
  const server = Bun.listen({ hostname: "127.0.0.1", port: 0, socket: { data() {} } });
  const port = server.port;
  server.stop(true);
  return port;
}
