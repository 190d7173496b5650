/**
 * `slivingdoc web`'s server (docs/web.md), through the built binary on the
 * embedded store and on S3 (Ceph RGW): who may ask (the token, its cookie,
 * the Host check, the headers every answer carries), the JSON API over a
 * seeded history — its `show` patch byte for byte `slivingdoc show`'s, its
 * log, blame and agents those of the CLI — the event stream telling of a
 * commit made while connected, a store with no notebook (its file not
 * made), SIGTERM, a busy port and --listen. And, in this process over a
 * real store that counts its requests, that an idle notebook costs one
 * conditional read per poll and nothing else; over one made to fail, that
 * the failure is the state's error while polling goes on.
 */
import { afterAll, expect, test } from "bun:test";
import { mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { EXIT_CODES } from "../../src/contract/tokens.ts";
import { errorEnvelope } from "../../src/contract/results.ts";
import { DomainError } from "../../src/contract/errors.ts";
import type { ConditionalRead, ObjectStore } from "../../src/store/object-store.ts";
import { openSqliteStore } from "../../src/store/sqlite.ts";
import { SYSTEM_CLOCK } from "../../src/surfaces/system-clock.ts";
import { logPage } from "../../src/engine/history/log.ts";
import { closeHistory, openHistory } from "../../src/engine/history/read.ts";
import { KeptHistory } from "../../src/surfaces/web/kept-history.ts";
import type { WebState } from "../../src/surfaces/web/poller.ts";
import { startWeb as startWebServer } from "../../src/surfaces/web/server.ts";
import { runAs, userEnv } from "../support/binary-env.ts";
import { faultyStore } from "../support/faulty-store.ts";
import { makeWorld, write } from "../support/fixture.ts";
import { removePrefixes, s3ServerMissing, testBucket } from "../support/s3-test-store.ts";
import { waitFor } from "../support/wait.ts";
import { openEvents, startWeb, type WebProcess } from "../support/web.ts";

const root = mkdtempSync(join(tmpdir(), "slivingdoc-web-"));
const runId = crypto.randomUUID().slice(0, 8);
const prefixes: string[] = [];
afterAll(async () => {
  await removePrefixes(prefixes);
  rmSync(root, { recursive: true, force: true });
});

const env = userEnv(root, "user");
let made = 0;

/** The stores the tests run on: the embedded one, and S3 when configured (its absence is a failing test, not a skip). */
const STORES: Array<{ name: string; store: () => string }> = [{ name: "embedded", store: () => `sqlite:${join(root, `store-${++made}.db`)}` }];
if (!s3ServerMissing()) {
  STORES.push({
    name: "S3",
    store: () => {
      const prefix = `slivingdoc-test/web-${runId}-${++made}`;
      prefixes.push(`${prefix}/`);
      return `s3://${testBucket}/${prefix}`;
    },
  });
}

async function ok(...args: string[]): Promise<string> {
  const r = await runAs(env, ...args);
  if (r.code !== 0) throw new Error(`slivingdoc ${args.join(" ")} exited ${r.code}: ${r.stderr}`);
  return r.stdout;
}

/**
 * Six generations by two agents: ann 1, 3, 5; bo 2, 4, 6. a.md at 1 and 3,
 * deleted at 5; notes/plan.md at 1, 2 and 6; b.md added at 4. A committer
 * for more.
 */
async function seeded(store: string): Promise<(files: Record<string, string>, agent: string, message: string) => Promise<void>> {
  const dir = mkdtempSync(join(root, "nb-"));
  await ok("pull", "--store", store, dir);
  const commit = async (files: Record<string, string | null>, agent: string, message: string) => {
    for (const [path, content] of Object.entries(files)) {
      if (content === null) rmSync(join(dir, path));
      else write(dir, path, content);
    }
    await ok("commit", "-m", message, "--agent", agent, "--store", store, dir);
  };
  await commit({ "a.md": "one\n", "notes/plan.md": "goal: ship\n" }, "ann", "start");
  await commit({ "notes/plan.md": "goal: ship\nowner: bo\n" }, "bo", "owner");
  await commit({ "a.md": "one\ntwo\n" }, "ann", "two");
  await commit({ "b.md": "bee\n" }, "bo", "bee");
  await commit({ "a.md": null }, "ann", "drop a");
  await commit({ "notes/plan.md": "goal: ship friday\nowner: bo\n" }, "bo", "friday");
  return commit;
}

async function body(web: WebProcess, path: string): Promise<any> {
  const r = await web.get(path);
  if (r.status !== 200) throw new Error(`${path} answered ${r.status}: ${await r.text()}`);
  return r.json();
}

const generations = (page: { entries: { generation: number }[] }) => page.entries.map((e) => e.generation);

for (const { name, store: newStore } of STORES) {
  test(`${name}: the API answers a seeded history as the CLI does: log by pages and agent, show's patch byte for byte, blame, tree, file, agents`, async () => {
    const store = newStore();
    await seeded(store);
    const web = await startWeb(env, "--store", store);
    try {
      expect(await body(web, "/api/state")).toEqual({ notebook: true, generation: 6, oldestRetained: 1, pollMs: 2000, error: null });
      const first = await body(web, "/api/log?limit=4");
      expect([generations(first), first.next, first.generation, first.oldestRetained]).toEqual([[6, 5, 4, 3], 3, 6, 1]);
      const second = await body(web, `/api/log?limit=4&before=${first.next}`);
      expect([generations(second), second.next]).toEqual([[2, 1], null]);
      // The pages together are `slivingdoc log`'s entries.
      const log = JSON.parse(await ok("log", "--json", "--store", store));
      expect([...first.entries, ...second.entries]).toEqual(log.entries);
      expect(generations(await body(web, "/api/log?agent=bo"))).toEqual([6, 4, 2]);
      expect(generations(await body(web, "/api/log?path=notes"))).toEqual([6, 2, 1]);
      expect(generations(await body(web, "/api/log?path=./notes/"))).toEqual([6, 2, 1]);
      expect(generations(await body(web, `/api/log?since=${encodeURIComponent(log.entries[0].time)}`))).toContain(6);
      const history = await body(web, "/api/history?path=a.md&limit=2");
      expect([generations(history), history.next]).toEqual([[5, 3], 3]);

      for (let g = 1; g <= 6; g++) {
        const shown = await body(web, `/api/show?generation=${g}`);
        const cli = await runAs(env, "show", String(g), "--store", store);
        expect(shown.patch).toBe(cli.stdout);
        expect(shown.entry).toEqual(log.entries.find((e: { generation: number }) => e.generation === g));
      }
      expect(await body(web, "/api/blame?path=notes/plan.md")).toEqual(JSON.parse(await ok("blame", "notes/plan.md", "--json", "--store", store)));
      expect(await body(web, "/api/blame?path=a.md&generation=3")).toEqual(JSON.parse(await ok("blame", "a.md", "--at", "3", "--json", "--store", store)));
      expect(await body(web, "/api/tree")).toEqual({
        generation: 6,
        files: [
          { path: "b.md", size: 4 },
          { path: "notes/plan.md", size: 28 },
        ],
      });
      expect((await body(web, "/api/tree?generation=3")).files.map((f: { path: string }) => f.path)).toEqual(["a.md", "notes/plan.md"]);
      expect(await body(web, "/api/file?generation=3&path=a.md")).toEqual({ generation: 3, path: "a.md", text: "one\ntwo\n", size: 8 });
      const agents = await body(web, "/api/agents");
      const { publications, ...summaries } = agents;
      expect(summaries).toEqual(JSON.parse(await ok("agents", "--json", "--store", store)));
      expect(publications.map((p: { generation: number; agent: string }) => `${p.generation}:${p.agent}`)).toEqual(["6:bo", "5:ann", "4:bo", "3:ann", "2:bo", "1:ann"]);
    } finally {
      expect((await web.stop()).code).toBe(EXIT_CODES.OK);
    }
  });

  test(`${name}: a generation or a file the history does not have is 404 with the CLI's envelope; a query it cannot take, 400`, async () => {
    const store = newStore();
    await seeded(store);
    const web = await startWeb(env, "--store", store);
    try {
      const missing = await web.get("/api/show?generation=999");
      expect(missing.status).toBe(404);
      const cli = JSON.parse((await runAs(env, "show", "999", "--json", "--store", store)).stdout);
      expect({ ...((await missing.json()) as any).error, diagnosticId: "" }).toEqual({ ...cli, diagnosticId: "" });
      const gone = await web.get("/api/file?generation=6&path=a.md");
      expect(gone.status).toBe(404);
      expect(((await gone.json()) as any).error).toMatchObject({ code: "INVALID_REQUEST", reason: "MALFORMED_INPUT", message: '"a.md" is not a file of the notebook at generation 6.' });
      for (const bad of ["/api/log?limit=201", "/api/log?before=x", "/api/show", "/api/log?since=yesterday", "/api/file?generation=2", "/api/history?path=../x", "/api/history"]) {
        const r = await web.get(bad);
        expect({ bad, status: r.status }).toEqual({ bad, status: 400 });
        expect(((await r.json()) as any).error.reason).toBe("MALFORMED_INPUT");
      }
      // Nothing an answer carries names a commit id, a store key or a private path.
      const everything = await Promise.all(["/api/log", "/api/agents", "/api/show?generation=2", "/api/tree"].map(async (p) => (await web.get(p)).text()));
      expect(everything.join("").match(/\b[0-9a-f]{40}\b|packs\/|\/state\//g)).toBeNull();
    } finally {
      expect((await web.stop()).code).toBe(EXIT_CODES.OK);
    }
  });

  test(`${name}: a commit made while a page listens comes as a state event with the new generation`, async () => {
    const store = newStore();
    const commit = await seeded(store);
    const web = await startWeb(env, "--store", store, "--poll", "200ms");
    const events = await openEvents(web);
    try {
      expect(await events.next()).toEqual({ event: "state", data: { notebook: true, generation: 6, oldestRetained: 1, pollMs: 200, error: null } });
      await commit({ "b.md": "bee\nhive\n" }, "ann", "hive");
      const next = await events.next();
      expect(next).toEqual({ event: "state", data: { notebook: true, generation: 7, oldestRetained: 1, pollMs: 200, error: null } });
      // The history kept open was replaced: the API answers the new generation.
      expect(generations(await body(web, "/api/log?limit=1"))).toEqual([7]);
    } finally {
      events.close();
      expect((await web.stop()).code).toBe(EXIT_CODES.OK);
    }
  });
}

test("the token: 401 without it, a 303 to the clean URL setting an HttpOnly SameSite=Strict cookie with it; then the page", async () => {
  const web = await startWeb(env, "--store", STORES[0]!.store());
  try {
    const noToken = { headers: {} };
    const page = await web.get("/", noToken);
    expect(page.status).toBe(401);
    expect(await page.text()).not.toContain("assets");
    const api = await web.get("/api/state", noToken);
    expect(api.status).toBe(401);
    expect(((await api.json()) as any).error).toMatchObject({ code: "INVALID_REQUEST", reason: "MALFORMED_INPUT", action: "FIX_INPUT" });
    expect((await web.get("/?token=not-the-token", noToken)).status).toBe(401);
    expect((await web.get("/api/state", { headers: { Cookie: "slivingdoc_web=not-the-token" } })).status).toBe(401);

    const redirect = await web.get(`/?token=${web.token}`, noToken);
    expect(redirect.status).toBe(303);
    expect(redirect.headers.get("location")).toBe("/");
    expect(redirect.headers.get("set-cookie")).toBe(`slivingdoc_web=${web.token}; HttpOnly; SameSite=Strict; Path=/`);
    const withCookie = await web.get("/", { headers: { Cookie: `slivingdoc_web=${web.token}` } });
    expect(withCookie.status).toBe(200);
    expect(await withCookie.text()).toContain('src="/assets/app.js"');
    expect((await web.get("/api/state", { headers: { Cookie: `other=1; slivingdoc_web=${web.token}` } })).status).toBe(200);
  } finally {
    const { code, stderr } = await web.stop();
    expect(code).toBe(EXIT_CODES.OK);
    // The token is on the ready line only.
    expect(stderr).not.toContain(web.token);
  }
});

test("the Host: a loopback name on any port is answered, another name (DNS rebinding) is refused 403 with no data; every answer carries the CSP and the other headers; only GET", async () => {
  const store = STORES[0]!.store();
  await seeded(store);
  const web = await startWeb(env, "--store", store);
  const as = (host: string) => ({ headers: { Host: host, Authorization: `Bearer ${web.token}` } });
  try {
    const evil = await web.get("/api/log", as("evil.example"));
    expect(evil.status).toBe(403);
    expect(await evil.text()).not.toContain("generation");
    expect((await web.get("/api/log", as("evil.example:7878"))).status).toBe(403);
    expect((await web.get("/api/log", as("127.0.0.1.evil.example"))).status).toBe(403);
    for (const host of ["localhost:9999", "127.0.0.1", `[::1]:${web.port}`, "LOCALHOST"]) {
      expect({ host, status: (await web.get("/api/state", as(host))).status }).toEqual({ host, status: 200 });
    }
    const CSP =
      "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; font-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";
    for (const r of [await web.get("/api/log"), await web.get("/"), evil, await web.get("/api/state", { headers: {} }), await web.get("/assets/app.js")]) {
      expect(r.headers.get("content-security-policy")).toBe(CSP);
      expect(r.headers.get("x-content-type-options")).toBe("nosniff");
      expect(r.headers.get("referrer-policy")).toBe("no-referrer");
    }
    expect((await web.get("/api/log")).headers.get("cache-control")).toBe("no-store");
    const post = await web.get("/api/state", { method: "POST", headers: { Authorization: `Bearer ${web.token}` } });
    expect(post.status).toBe(405);
    expect(((await post.json()) as any).error.reason).toBe("MALFORMED_INPUT");
  } finally {
    expect((await web.stop()).code).toBe(EXIT_CODES.OK);
  }
});

test("a store with no notebook: the state says so, the API answers an empty history, and the embedded store's file is not made", async () => {
  const file = join(root, "none-yet.db");
  const web = await startWeb(env, "--store", `sqlite:${file}`);
  try {
    expect(await body(web, "/api/state")).toEqual({ notebook: false, generation: 0, oldestRetained: 0, pollMs: 2000, error: null });
    expect(await body(web, "/api/log")).toEqual({ generation: 0, oldestRetained: 0, entries: [], next: null });
    expect((await body(web, "/api/agents")).publications).toEqual([]);
    expect((await web.get("/api/tree")).status).toBe(404);
  } finally {
    expect((await web.stop()).code).toBe(EXIT_CODES.OK);
  }
  expect(readdirSync(root).filter((f) => f.startsWith("none-yet"))).toEqual([]);
});

test("a busy port is an argument refusal naming it and --port, exit 2; a port that is no number too", async () => {
  const web = await startWeb(env, "--store", STORES[0]!.store());
  try {
    const busy = await runAs(env, "web", "--port", String(web.port), "--store", STORES[0]!.store());
    expect(busy.code).toBe(EXIT_CODES.STARTUP);
    expect(busy.stderr).toContain("argument refusal");
    expect(busy.stderr).toContain(`port ${web.port}`);
    expect(busy.stderr).toContain("--port");
    expect(busy.stdout).toBe("");
    const bad = await runAs(env, "web", "--port", "http");
    expect([bad.code, bad.stderr.includes("--port must be a port number")]).toEqual([EXIT_CODES.STARTUP, true]);
  } finally {
    expect((await web.stop()).code).toBe(EXIT_CODES.OK);
  }
});

/** A real store that counts the reads of `current` by what they answered. */
function counting(inner: ObjectStore): ObjectStore & { reads: string[] } {
  const reads: string[] = [];
  const outcome = (r: ConditionalRead) => (r === "unchanged" ? "unchanged" : r === null ? "absent" : "body");
  return {
    ...inner,
    kind: inner.kind,
    reads,
    get: async (key, signal) => {
      const r = await inner.get(key, signal);
      if (key === "current") reads.push(`get ${outcome(r)}`);
      return r;
    },
    getIfNoneMatch: async (key, etag, signal) => {
      const r = await inner.getIfNoneMatch(key, etag, signal);
      reads.push(`getIfNoneMatch ${outcome(r)}`);
      return r;
    },
    list: (prefix, signal) => inner.list(prefix, signal),
    putIfAbsent: (k, b, s) => inner.putIfAbsent(k, b, s),
    putIfMatch: (k, b, e, s) => inner.putIfMatch(k, b, e, s),
    delete: (k, s) => inner.delete(k, s),
    close: () => inner.close(),
  };
}

test("an idle notebook costs one conditional read of current per poll, answered not modified; a change, one read with its body", async () => {
  const storeUrl = STORES[0]!.store();
  const commit = await seeded(storeUrl);
  const store = counting(openSqliteStore(storeUrl.slice("sqlite:".length), SYSTEM_CLOCK));
  const world = makeWorld(store, storeUrl);
  const envelope = (e: unknown) => errorEnvelope(e instanceof DomainError ? e : new DomainError("INTERNAL", String(e)), "0", { readOnly: [], writable: [] });
  const server = await startWebServer({ deps: world.deps(), deadlineMs: 10_000, pollMs: 20, port: 0, hostname: "127.0.0.1", listen: null, token: "t", envelope });
  try {
    await waitFor(() => store.reads.length >= 6, "six polls");
    // The first poll reads current whole (nothing held yet), the history's opening once more; every poll after, a 304.
    expect(store.reads.slice(0, 2)).toEqual(["get body", "get body"]);
    expect(new Set(store.reads.slice(2))).toEqual(new Set(["getIfNoneMatch unchanged"]));
    await commit({ "b.md": "changed\n" }, "ann", "change");
    await waitFor(() => store.reads.includes("getIfNoneMatch body"), "the change seen");
    const after = store.reads.length;
    await waitFor(() => store.reads.length >= after + 3, "three polls more");
    expect(new Set(store.reads.slice(after + 1))).toEqual(new Set(["getIfNoneMatch unchanged"]));
  } finally {
    await server.stop();
    await world.close();
  }
});

test("a store that fails while the server runs: the state carries the error envelope, polling goes on, and the next read that succeeds clears it", async () => {
  const storeUrl = STORES[0]!.store();
  await seeded(storeUrl);
  let failing = false;
  const store = faultyStore(openSqliteStore(storeUrl.slice("sqlite:".length), SYSTEM_CLOCK), (op) => (failing && op === "get" ? "fail-before" : null), {
    message: () => `injected failure at ${root}`,
  });
  const world = makeWorld(store, storeUrl);
  const envelope = (e: unknown) => errorEnvelope(e instanceof DomainError ? e : new DomainError("INTERNAL", String(e)), "0", { readOnly: [], writable: [] });
  const states: WebState[] = [];
  const server = await startWebServer({ deps: world.deps(), deadlineMs: 10_000, pollMs: 20, port: 0, hostname: "127.0.0.1", listen: null, token: "t", envelope });
  const state = async () => (await (await fetch(`http://127.0.0.1:${server.port}/api/state`, { headers: { Authorization: "Bearer t" } })).json()) as WebState;
  try {
    expect(await state()).toMatchObject({ notebook: true, generation: 6, error: null });
    failing = true;
    await waitFor(async () => (states[0] = await state()).error !== null, "the failure in the state");
    expect(states[0]!).toMatchObject({ notebook: true, generation: 6, error: { code: "STORAGE_FAILURE", reason: "MANIFEST_READ", action: "RETRY" } });
    expect(JSON.stringify(states[0])).not.toContain(root);
    // The API still answers from the history it keeps.
    expect((await (await fetch(`http://127.0.0.1:${server.port}/api/log?limit=1`, { headers: { Authorization: "Bearer t" } })).json()) as object).toMatchObject({ generation: 6 });
    failing = false;
    await waitFor(async () => (await state()).error === null, "the failure cleared");
  } finally {
    await server.stop();
    await world.close();
  }
});

test("--listen on an address that is not loopback: a warning on stderr that points to an SSH tunnel; its address is a Host it answers", async () => {
  const web = await startWeb(env, "--store", STORES[0]!.store(), "--listen", "0.0.0.0");
  expect(web.url).toStartWith(`http://0.0.0.0:${web.port}/?token=`);
  expect((await web.get("/api/state", { headers: { Host: `0.0.0.0:${web.port}`, Authorization: `Bearer ${web.token}` } })).status).toBe(200);
  const { code, stderr } = await web.stop();
  expect(code).toBe(EXIT_CODES.OK);
  expect(stderr).toContain("slivingdoc web: warning: --listen 0.0.0.0 is not a loopback address");
  expect(stderr).toContain("SSH tunnel");
  const loopback = await startWeb(env, "--store", STORES[0]!.store(), "--listen", "127.0.0.1");
  expect((await loopback.stop()).stderr).toBe("");
});

test("a store out of reach at start does not refuse it: the ready line comes, and the state carries the store's failure", async () => {
  if (!testBucket) throw new Error("no S3 test server");
  // A port nothing listens on: the one a server just let go.
  const gone = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: () => new Response("") });
  const port = gone.port;
  await gone.stop(true);
  const web = await startWeb({ ...env, AWS_ENDPOINT_URL_S3: `http://127.0.0.1:${port}`, AWS_ENDPOINT_URL: "" }, "--store", `s3://${testBucket}/slivingdoc-test/web-${runId}-unreachable`, "--deadline", "2s");
  try {
    const state = (await (await web.get("/api/state")).json()) as WebState;
    expect(state).toMatchObject({ notebook: false, generation: 0, error: { code: "STORAGE_FAILURE", action: "RETRY" } });
    expect(JSON.stringify(state)).not.toContain(root);
  } finally {
    expect((await web.stop()).code).toBe(EXIT_CODES.OK);
  }
});

test("a request reading the kept history while current changes reads it to the end; it is closed once no request uses it", async () => {
  const storeUrl = STORES[0]!.store();
  const commit = await seeded(storeUrl);
  const world = makeWorld(openSqliteStore(storeUrl.slice("sqlite:".length), SYSTEM_CLOCK), storeUrl);
  const closed: number[] = [];
  const kept = new KeptHistory(
    () => openHistory(world.deps()),
    (h) => {
      closed.push(h.manifest?.generation ?? 0);
      closeHistory(h);
    },
  );
  try {
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    let entered!: () => void;
    const inside = new Promise<void>((resolve) => (entered = resolve));
    const reading = kept.use(async (h) => {
      entered();
      await held;
      // Reads what only the history's object cache holds: a closed one could not.
      return (await logPage(h, { limit: 2 })).entries.map((e) => e.files);
    });
    await inside;
    await commit({ "b.md": "bee\nhive\n" }, "ann", "hive");
    expect((await kept.reopen()).history.manifest?.generation).toBe(7);
    expect(closed).toEqual([]);
    release();
    expect((await reading).length).toBe(2);
    expect(closed).toEqual([6]);
    expect((await kept.use((h) => logPage(h, { limit: 1 }))).entries[0]!.generation).toBe(7);
  } finally {
    kept.dispose();
    await world.close();
  }
  expect(closed).toEqual([6, 7]);
});
