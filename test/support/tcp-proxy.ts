/**
 * A TCP proxy in front of a real server (Ceph RGW in the tests and the
 * bench), for tests and the bench alike: point `--endpoint` (or
 * AWS_ENDPOINT_URL_S3) at `url`. Requests pass through unchanged (SigV4
 * signs the Host header as the client sent it, and the proxy does not touch
 * it). It can do three things to what passes:
 *
 * - Delay it, as the network to a distant server does (`delayMs`): every
 *   request and its answer take `delayMs` longer, a round trip — 20 ms is a
 *   region-local AWS S3. Each direction carries half: a chunk goes on
 *   `delayMs / 2` after it arrived, in order. A large body therefore pays
 *   the delay once, not once per chunk: its chunks stream on at the pace
 *   they came, as on a network whose bandwidth is not the limit. A new
 *   connection pays one round trip before its first byte goes on, as a TCP
 *   handshake does (the client's connect returns at once here, so its
 *   first bytes are held instead). AWS S3 is reached over TLS, whose
 *   handshake costs one more round trip (TLS 1.3) or two (1.2); this proxy
 *   speaks plain TCP and does not add them — they fall on the connections
 *   a process opens, which `connections` counts.
 * - Count the HTTP requests that pass (`counts()`), and how many of them
 *   the clients waited for in turn (`sequential`, see `ProxyCounts`).
 * - Stop answering (`blackHole`): an endpoint that hangs, as a stalled
 *   server, a load balancer with no backend or a network that drops
 *   packets makes it. Connections are still accepted — a connect
 *   succeeds, unlike a closed port — and then nothing comes back, ever.
 */
import { connect, createServer, type Socket } from "node:net";

export interface TcpProxy {
  /** The proxy's endpoint, http://127.0.0.1:PORT. */
  readonly url: string;
  readonly port: number;
  /** Count afresh from now on: requests in flight now are not counted, nor is anything sent after their answers taken to wait for them. */
  resetCounts(): void;
  /** What passed since the proxy started or the last `resetCounts`. */
  counts(): ProxyCounts;
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

export interface ProxyCounts {
  /** HTTP requests that came through (request lines seen, on any connection). */
  requests: number;
  /**
   * The round trips the clients waited for one after another: the longest
   * chain of requests in which each was sent after the one before it had
   * its whole answer (its last byte handed to the client). A request sent
   * while another is still in flight joins no chain through that one: it
   * goes in parallel, and costs no round trip of its own beyond the
   * longest. Under a delay D, the clients spent at least `sequential` × D.
   */
  sequential: number;
  /** Connections opened: each paid a handshake round trip under a delay. */
  connections: number;
}

/** A chunk passed on, the end of a direction, or the end of the connection. */
type Item = Buffer | "end" | "destroy";

/**
 * One direction of one connection: items go on at their own time, in the
 * order they came — an item is never passed on before the one ahead of it,
 * nor before its time.
 */
class Lane {
  private readonly queue: Array<{ at: number; item: Item }> = [];
  private timer: ReturnType<typeof setTimeout> | null = null;

  constructor(private readonly deliver: (item: Item) => void) {}

  push(at: number, item: Item): void {
    if (this.queue.length === 0 && at <= performance.now()) {
      this.deliver(item);
      return;
    }
    this.queue.push({ at, item });
    this.arm();
  }

  clear(): void {
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = null;
    this.queue.length = 0;
  }

  private arm(): void {
    if (this.timer !== null || this.queue.length === 0) return;
    // A timer may fire a fraction of a millisecond early: `flush` then
    // passes nothing and arms again.
    this.timer = setTimeout(() => {
      this.timer = null;
      this.flush();
    }, Math.max(0, this.queue[0]!.at - performance.now()));
  }

  private flush(): void {
    const now = performance.now();
    while (this.queue.length > 0 && this.queue[0]!.at <= now) this.deliver(this.queue.shift()!.item);
    this.arm();
  }
}

/** How a message's body is delimited, once its head is read ("bad": not HTTP). */
type Framing = { length: number } | "chunked" | "until-close" | "bad";

/**
 * Finds where HTTP/1.1 messages begin and end in one direction of a
 * connection (heads, Content-Length and chunked bodies), as far as counting
 * needs: `begin` at a message's first byte, `head` with its header block
 * (answering how its body is delimited, or null for an interim answer, a
 * 1xx, which ends nothing), `end` after its last byte. Anything that is not
 * HTTP makes it give up (`lost`).
 */
class Framer {
  private mode: "head" | "body" | "chunk-size" | "chunk-data" | "trailer" | "until-close" | "lost" = "head";
  private text = "";
  private left = 0;

  constructor(
    private readonly begin: () => void,
    private readonly head: (lines: string[]) => Framing | null,
    private readonly end: () => void,
  ) {}

  get lost(): boolean {
    return this.mode === "lost";
  }

  feed(data: Buffer): void {
    let i = 0;
    while (i < data.length && this.mode !== "lost" && this.mode !== "until-close") {
      if (this.mode === "body" || this.mode === "chunk-data") {
        const n = Math.min(this.left, data.length - i);
        this.left -= n;
        i += n;
        if (this.left > 0) continue;
        if (this.mode === "body") this.done();
        else this.mode = "chunk-size";
        continue;
      }
      if (this.mode === "head" && this.text === "") this.begin();
      const terminator = this.mode === "head" ? "\r\n\r\n" : "\r\n";
      const known = this.text.length;
      const text = this.text + data.toString("latin1", i);
      const at = text.indexOf(terminator);
      if (at < 0) {
        this.text = text;
        i = data.length;
        if (text.length > 64 * 1024) this.mode = "lost";
        continue;
      }
      i += at + terminator.length - known;
      this.text = "";
      this.line(text.slice(0, at));
    }
  }

  /** The connection ended: a body delimited by the close is complete. */
  closed(): void {
    if (this.mode === "until-close") this.done();
  }

  private line(text: string): void {
    if (this.mode === "head") {
      const framing = this.head(text.split("\r\n"));
      if (framing === null) return; // an interim answer: the final one follows
      if (framing === "bad") this.mode = "lost";
      else if (framing === "chunked") this.mode = "chunk-size";
      else if (framing === "until-close") this.mode = "until-close";
      else if (framing.length > 0) {
        this.mode = "body";
        this.left = framing.length;
      } else this.done();
    } else if (this.mode === "chunk-size") {
      const size = Number.parseInt(text.split(";")[0]!, 16);
      if (!Number.isInteger(size) || size < 0) this.mode = "lost";
      else if (size === 0) this.mode = "trailer";
      else {
        this.mode = "chunk-data";
        this.left = size + 2; // and the CRLF after it
      }
    } else if (text === "") this.done(); // the empty line that ends the trailer
  }

  private done(): void {
    this.mode = "head";
    this.end();
  }
}

function headers(lines: string[]): Map<string, string> {
  const out = new Map<string, string>();
  for (const line of lines.slice(1)) {
    const colon = line.indexOf(":");
    if (colon > 0) out.set(line.slice(0, colon).trim().toLowerCase(), line.slice(colon + 1).trim());
  }
  return out;
}

function bodyFraming(h: Map<string, string>, otherwise: Framing): Framing {
  if (/chunked/i.test(h.get("transfer-encoding") ?? "")) return "chunked";
  const length = h.get("content-length");
  if (length === undefined) return otherwise;
  return /^\d+$/.test(length) ? { length: Number(length) } : "bad";
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
  toServer: Lane;
  toClient: Lane;
  requests: Framer;
  responses: Framer;
  /** Requests sent and not yet answered, oldest first: their method and chain depth. */
  inFlight: Array<{ method: string; depth: number }>;
}

/** What of a connection's bytes is kept to match a pattern split across reads. */
const SEEN_TAIL = 16 * 1024;

export async function startTcpProxy(target: string, options: { delayMs?: number } = {}): Promise<TcpProxy> {
  const { hostname, port } = new URL(target);
  const pairs = new Set<Pair>();
  const delayMs = options.delayMs ?? 0;
  let holed = false;
  let trigger: { pattern: RegExp; fired: () => void } | null = null;

  // Counting (see ProxyCounts): a request's depth is one more than the
  // deepest request fully answered before it was sent.
  let requests = 0;
  let connections = 0;
  let deepest = 0;
  let deepestAnswered = 0;
  let lostConnections = 0;

  const follow = (framer: Framer, chunk: Buffer) => {
    if (framer.lost) return;
    framer.feed(chunk);
    if (framer.lost) lostConnections++;
  };

  const holeAll = () => {
    holed = true;
    for (const pair of pairs) pair.holed = true;
  };

  // No Nagle on either side: a small write held back for an ACK (which
  // the other end may delay by up to 40 ms) would add latency of its own.
  const server = createServer({ noDelay: true }, (client) => {
    connections++;
    // A handshake's round trip: the client's first bytes go on after it.
    const openedAt = performance.now() + delayMs;
    const pair: Pair = {
      client,
      upstream: null,
      holed,
      passing: false,
      seen: "",
      toServer: new Lane((item) => {
        if (pair.holed && !pair.passing) return;
        if (item === "end") pair.upstream?.end();
        else if (item !== "destroy") pair.upstream?.write(item);
      }),
      toClient: new Lane((item) => {
        if (pair.holed) return;
        if (item === "destroy") client.destroy();
        else if (item === "end") {
          pair.responses.closed();
          client.end();
        } else {
          follow(pair.responses, item);
          client.write(item);
        }
      }),
      requests: new Framer(
        () => {
          requests++;
          const depth = deepestAnswered + 1;
          deepest = Math.max(deepest, depth);
          pair.inFlight.push({ method: "", depth });
        },
        (lines) => {
          const m = /^([A-Z]+) \S+ HTTP\/1\.[01]$/.exec(lines[0]!);
          if (m === null) return "bad";
          pair.inFlight.at(-1)!.method = m[1]!;
          return bodyFraming(headers(lines), { length: 0 });
        },
        () => {},
      ),
      responses: new Framer(
        () => {},
        (lines) => {
          const status = Number(/^HTTP\/1\.[01] (\d{3})/.exec(lines[0]!)?.[1] ?? Number.NaN);
          if (status >= 100 && status < 200) return null;
          const request = pair.inFlight[0];
          if (request === undefined || !(status >= 200)) return "bad";
          if (request.method === "HEAD" || status === 204 || status === 304) return { length: 0 };
          return bodyFraming(headers(lines), "until-close");
        },
        () => {
          const answered = pair.inFlight.shift();
          if (answered !== undefined) deepestAnswered = Math.max(deepestAnswered, answered.depth);
        },
      ),
      inFlight: [],
    };
    pairs.add(pair);
    client.on("error", () => {});
    client.on("close", () => {
      pairs.delete(pair);
      pair.toServer.clear();
      pair.toClient.clear();
      pair.upstream?.destroy();
    });
    if (holed) return; // accepted, never answered
    const upstream = connect({ host: hostname, port: Number(port), noDelay: true });
    pair.upstream = upstream;
    const later = () => performance.now() + delayMs / 2;
    upstream.on("error", () => pair.toClient.push(later(), "destroy"));
    upstream.on("data", (chunk: Buffer) => pair.toClient.push(later(), chunk));
    upstream.on("end", () => pair.toClient.push(later(), "end"));
    client.on("data", (chunk: Buffer) => {
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
      follow(pair.requests, chunk);
      pair.toServer.push(Math.max(performance.now(), openedAt) + delayMs / 2, chunk);
    });
    client.on("end", () => pair.toServer.push(Math.max(performance.now(), openedAt) + delayMs / 2, "end"));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const listening = (server.address() as { port: number }).port;

  return {
    url: `http://127.0.0.1:${listening}`,
    port: listening,
    resetCounts() {
      // A request still in flight belongs to the count before: its answer
      // must not start a chain in this one.
      for (const pair of pairs) for (const request of pair.inFlight) request.depth = 0;
      requests = 0;
      connections = 0;
      deepest = 0;
      deepestAnswered = 0;
      lostConnections = 0;
    },
    counts() {
      // A count that missed requests would pass for a good one: refuse it.
      if (lostConnections > 0) throw new Error(`tcp proxy: ${lostConnections} connection(s) carried something that is not HTTP/1.1; the counts would be wrong`);
      return { requests, sequential: deepest, connections };
    },
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
        pair.toServer.clear();
        pair.toClient.clear();
        pair.client.destroy();
        pair.upstream?.destroy();
      }
      pairs.clear();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
