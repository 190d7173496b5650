/**
 * The container, built from the project's own Dockerfile with Debian's
 * podman (test/support/podman.ts) and driven as a host drives it: MCP over
 * `podman run -i`, with the volumes /notebook and /state. Initialize, pull,
 * commit; the store persisting across containers; a fresh /notebook volume
 * over the old /state losing nothing and deleting nothing; `podman stop`
 * ending the server through its SIGTERM handler; everything written by the
 * non-root user 10001.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { chownSync, readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { buildImage, IMAGE, type Podman } from "../support/podman.ts";
import { type RawMcp, spawnMcp } from "../support/raw-mcp.ts";

const UID = 10001;
let podman: Podman;
const started = performance.now();

beforeAll(() => {
  podman = buildImage();
}, 280_000);

afterAll(() => {
  if (!podman) return;
  const total = Math.round((performance.now() - started) / 1000);
  process.stderr.write(`container test: ${total} s in all; ${Object.entries(podman.timings).map(([k, v]) => `${k} ${v} s`).join(", ")}\n`);
  podman.remove();
});

/** The server in a new container, with these two volumes, as a host starts it. */
function container(notebook: string, state: string, name?: string): RawMcp {
  const args = ["run", "-i", "--rm", "--network", "none", "-v", `${notebook}:/notebook`, "-v", `${state}:/state`];
  if (name) args.push("--name", name);
  return spawnMcp(["podman", ...podman.args(...args, IMAGE)], podman.env);
}

async function session<T>(notebook: string, state: string, fn: (s: RawMcp) => Promise<T>): Promise<T> {
  const s = container(notebook, state);
  await s.initialize();
  const result = await fn(s);
  s.endInput();
  expect(await s.exited).toBe(0);
  return result;
}

async function tool(s: RawMcp, id: number, name: string, args: Record<string, unknown>): Promise<Record<string, any>> {
  s.callTool(id, name, args);
  const answer = await s.answer(id);
  expect(answer.result?.isError ?? false).toBe(false);
  return answer.result.structuredContent;
}

/** Every file and folder under a host path, with its owner. */
function owners(dir: string): Array<{ path: string; uid: number }> {
  return readdirSync(dir, { recursive: true }).map((rel) => ({ path: String(rel), uid: statSync(join(dir, String(rel))).uid }));
}

const notebookFiles = (volume: string) =>
  Object.fromEntries(
    readdirSync(podman.volumePath(volume))
      .sort()
      .map((n) => [n, readFileSync(join(podman.volumePath(volume), n), "utf8")]),
  );

describe("the container", () => {
  test("answers initialize over podman run -i, naming /notebook", async () => {
    const s = container("nb-init", "state-init");
    s.send({ jsonrpc: "2.0", id: 0, method: "initialize", params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "container-test", version: "1" } } });
    const answer = await s.answer(0);
    expect(answer.result.serverInfo.name).toBe("slivingdoc");
    expect(answer.result.instructions).toStartWith("The notebook directory is /notebook.");
    s.endInput();
    expect(await s.exited).toBe(0);
  });

  test("pull, commit, and the store persisting into the next container", async () => {
    await session("nb-1", "state", async (s) => {
      expect((await tool(s, 1, "notes_pull", {})).generation).toBe(0);
      // The agent's edits, made in the volume as the container's user would.
      const dir = podman.volumePath("nb-1");
      for (const [name, text] of [["plan.md", "- ship on Friday\n"], ["notes.txt", "kept\n"]] as const) {
        writeFileSync(join(dir, name), text);
        chownSync(join(dir, name), UID, UID);
      }
      const committed = await tool(s, 2, "notes_commit", { message: "plan" });
      expect(committed.generation).toBe(1);
    });
    // A new container on the same volumes: the embedded store in /state still has generation 1.
    await session("nb-1", "state", async (s) => {
      const pulled = await tool(s, 1, "notes_pull", {});
      expect(pulled.generation).toBe(1);
      expect(pulled.filesChanged).toBe(0);
    });
    expect(notebookFiles("nb-1")).toEqual({ "notes.txt": "kept\n", "plan.md": "- ship on Friday\n" });
  });

  test("a fresh /notebook volume over the old /state: nothing lost, nothing deleted", async () => {
    await session("nb-2", "state", async (s) => {
      const pulled = await tool(s, 1, "notes_pull", {});
      expect(pulled.generation).toBe(1);
      expect(notebookFiles("nb-2")).toEqual({ "notes.txt": "kept\n", "plan.md": "- ship on Friday\n" });
      // Nothing was edited: a commit publishes nothing, and above all no deletion.
      const committed = await tool(s, 2, "notes_commit", { message: "nothing" });
      expect(committed.deletions).toBe(0);
      expect(committed.files).toEqual([]);
    });
    await session("nb-3", "state", async (s) => {
      await tool(s, 1, "notes_pull", {});
    });
    expect(notebookFiles("nb-3")).toEqual({ "notes.txt": "kept\n", "plan.md": "- ship on Friday\n" });
  });

  test("podman stop ends the server through its SIGTERM handler: 'server stopped', exit 0", async () => {
    const s = container("nb-stop", "state-stop", "slivingdoc-stop-test");
    await s.initialize();
    await s.logged("server started");
    const stop = Bun.spawn(["podman", ...podman.args("stop", "--time", "60", "slivingdoc-stop-test")], { env: podman.env, stdout: "ignore", stderr: "pipe" });
    // Exit 0 is the server's own: a container killed after the grace time exits 137.
    expect(await s.exited).toBe(0);
    expect(await stop.exited).toBe(0);
    const records = s.records();
    expect(records.find((r) => r.msg === "stopping")?.signal).toBe("SIGTERM");
    expect(records.at(-1)?.msg).toBe("server stopped");
  });

  test("runs as uid 10001, and everything in both volumes belongs to it", async () => {
    const id = podman.run(["run", "--rm", "--network", "none", "--entrypoint", "/usr/bin/id", IMAGE, "-u"]);
    expect(id.stdout.trim()).toBe(String(UID));
    // Two sibling checkouts under /notebook: what one publishes, the container writes into the other.
    await session("nb-own", "state-own", async (s) => {
      await tool(s, 1, "notes_pull", { path: "/notebook/a" });
      const a = join(podman.volumePath("nb-own"), "a");
      writeFileSync(join(a, "shared.md"), "from a\n");
      chownSync(join(a, "shared.md"), UID, UID);
      await tool(s, 2, "notes_commit", { message: "from a", path: "/notebook/a" });
      await tool(s, 3, "notes_pull", { path: "/notebook/b" });
    });
    const notebook = owners(podman.volumePath("nb-own"));
    const state = owners(podman.volumePath("state-own"));
    expect(notebook.map((f) => f.path).sort()).toEqual(["a", "a/shared.md", "b", "b/shared.md"]);
    expect(state.length).toBeGreaterThan(0);
    expect([...state, ...notebook].filter((f) => f.uid !== UID)).toEqual([]);
    expect(statSync(podman.volumePath("state-own")).uid).toBe(UID);
    expect(statSync(podman.volumePath("nb-own")).uid).toBe(UID);
  });
});
