/**
 * A TCP proxy in front of a real server (Ceph RGW in the tests) that can
 * stop answering: an endpoint that hangs, as a stalled server, a load
 * balancer with no backend or a network that drops packets makes it.
 * Connections are still accepted — a connect succeeds, unlike a closed
 * port — and then nothing comes back, ever. For tests and the bench alike:
 * point `--endpoint` (or AWS_ENDPOINT_URL_S3) at `url`.
 *
 * Requests pass through unchanged (SigV4 signs the Host header as the
 * client sent it, and the proxy does not touch it).
 */
import { connect, createServer, type Socket } from "node:net";

export interface BlackHoleProxy {
  /** The proxy's endpoint, http://127.0.0.1:PORT. */
  readonly url: string;
  readonly port: number;
  /** Stop answering: on every connection, open or new, nothing goes either way any more. */
  blackHole(): void;
  /**
   * Forward until a client sends bytes matching `pattern` (a request line,
   * say /PUT \S*\/current\?/: no `^`, since on a kept-alive connection a
   * request follows the previous body directly), let that request through
   * to the server, and then stop answering: its answer is lost, and so is
   * everything after. Resolves once that happened.
   */
  blackHoleAfter(pattern: RegExp): Promise<void>;
  /** Answer again: the connections swallowed so far are closed, new ones are forwarded. */
  heal(): void;
  close(): Promise<void>;
}

interface Pair {
  client: Socket;
  upstream: Socket | null;
  /** Nothing goes to the client any more, nor to the server unless `passing`. */
  holed: boolean;
  /** The request that triggered the black hole: the rest of it still reaches the server. */
  passing: boolean;
  /** What the client sent since the trigger was armed, for the pattern (latin1, the tail only). */
  seen: string;
}

/** What of a connection's bytes is kept to match a pattern split across reads. */
const SEEN_TAIL = 16 * 1024;

export async function startBlackHoleProxy(target: string): Promise<BlackHoleProxy> {
  const { hostname, port } = new URL(target);
  const pairs = new Set<Pair>();
  let holed = false;
  let trigger: { pattern: RegExp; fired: () => void } | null = null;

  const holeAll = () => {
    holed = true;
    for (const pair of pairs) pair.holed = true;
  };

  const server = createServer((client) => {
    const pair: Pair = { client, upstream: null, holed, passing: false, seen: "" };
    pairs.add(pair);
    client.on("error", () => {});
    client.on("close", () => {
      pairs.delete(pair);
      pair.upstream?.destroy();
    });
    if (holed) return; // accepted, never answered
    const upstream = connect({ host: hostname, port: Number(port) });
    pair.upstream = upstream;
    upstream.on("error", () => {
      if (!pair.holed) client.destroy();
    });
    upstream.on("data", (chunk) => {
      if (!pair.holed) client.write(chunk);
    });
    upstream.on("end", () => {
      if (!pair.holed) client.end();
    });
    client.on("data", (chunk) => {
      if (pair.holed && !pair.passing) return;
      if (trigger !== null && !pair.holed) {
        pair.seen = (pair.seen + chunk.toString("latin1")).slice(-SEEN_TAIL);
        if (trigger.pattern.test(pair.seen)) {
          const { fired } = trigger;
          trigger = null;
          holeAll();
          pair.passing = true;
          fired();
        }
      }
      upstream.write(chunk);
    });
    client.on("end", () => {
      if (!pair.holed || pair.passing) upstream.end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const listening = (server.address() as { port: number }).port;

  return {
    url: `http://127.0.0.1:${listening}`,
    port: listening,
    blackHole: holeAll,
    blackHoleAfter(pattern) {
      for (const pair of pairs) pair.seen = "";
      return new Promise<void>((resolve) => {
        trigger = { pattern, fired: resolve };
      });
    },
    heal() {
      holed = false;
      trigger = null;
      for (const pair of pairs) {
        if (!pair.holed) continue;
        pair.client.destroy();
        pair.upstream?.destroy();
        pairs.delete(pair);
      }
    },
    async close() {
      for (const pair of pairs) {
        pair.client.destroy();
        pair.upstream?.destroy();
      }
      pairs.clear();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
