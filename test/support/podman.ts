/**
 * The project's own Dockerfile, built and run with Debian's podman, with
 * nothing from a container registry: this machine reaches only the npm
 * registry and Debian's packages.
 *
 * - podman, runc and debootstrap come from Debian (`apt-get install`, as root).
 * - runc is the runtime (crun fails in sandboxes like ours), set with a
 *   containers.conf of the test's own, with fixed ulimits.
 * - The Dockerfile's base images are made here: `debian:12-slim` is a
 *   `debootstrap --variant=minbase bookworm` tree imported with `podman
 *   import`; `node:20-bookworm-slim` is that image plus this machine's own
 *   Node.js and npm (and its CA bundle, for a proxy that re-signs TLS). The
 *   debootstrap tree is cached as a tarball under
 *   ~/.cache/slivingdoc/container, so it is made once per machine.
 * - podman keeps its storage in a folder of the test's own (--root,
 *   --runroot) beside that cache, removed at the end; nothing touches the
 *   machine's images.
 * - The build reuses this machine's npm cache and the release build's Bun
 *   runtime cache through build-time volumes, which never enter the image.
 *
 * Facts this relies on are in docs/install.md ("Checking the container").
 */
import { copyFileSync, cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, renameSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { homedir, tmpdir } from "node:os";
import { dirname, isAbsolute, join } from "node:path";
import { CannotRun, ensurePackages, must, run } from "./debian.ts";

const REPO = join(import.meta.dir, "../..");
export const IMAGE = "localhost/slivingdoc:test";

/** Why this machine cannot run the container test; the test fails with it. */
const cannotRun = (why: string) =>
  new CannotRun("the container test", why, 'It needs Debian 12 as root with apt-get (podman, runc, debootstrap); docs/install.md, "Checking the container", says how to run the same checks with Docker.');

/** podman, runc and debootstrap, installed from Debian when missing. */
function installTools(): void {
  ensurePackages({ podman: "/usr/bin/podman", runc: "/usr/sbin/runc", debootstrap: "/usr/sbin/debootstrap" }, cannotRun);
}

/** The Debian mirror apt uses here, for debootstrap. */
function debianMirror(): string {
  const texts: string[] = [];
  for (const f of ["/etc/apt/sources.list.d/debian.sources", "/etc/apt/sources.list"]) {
    try {
      texts.push(readFileSync(f, "utf8"));
    } catch {
      /* absent */
    }
  }
  for (const text of texts) {
    const deb822 = /^URIs:\s*(\S+)\s*\n(?:[^\n]+\n)*?Suites:\s*bookworm\b/m.exec(text);
    if (deb822) return deb822[1]!;
    const line = /^deb\s+(?:\[[^\]]*\]\s+)?(\S+)\s+bookworm\s/m.exec(text);
    if (line) return line[1]!;
  }
  return "http://deb.debian.org/debian";
}

function cacheDir(): string {
  const xdg = process.env.XDG_CACHE_HOME;
  return join(xdg && isAbsolute(xdg) ? xdg : join(homedir(), ".cache"), "slivingdoc");
}

/** A bookworm minbase tree as a tarball, made once with debootstrap and cached. */
function baseTarball(): string {
  const dir = join(cacheDir(), "container");
  const tarball = join(dir, "bookworm-minbase.tar");
  if (existsSync(tarball)) return tarball;
  mkdirSync(dir, { recursive: true });
  const work = mkdtempSync(join(dir, "debootstrap-"));
  try {
    const tree = join(work, "rootfs");
    must("debootstrap --variant=minbase bookworm", run("debootstrap", ["--variant=minbase", "bookworm", tree, debianMirror()]));
    // As in the slim images: no package lists or downloaded packages (the Dockerfile runs apt-get update itself).
    must("tar of the bookworm tree", run("tar", ["-C", tree, "--exclude=./var/lib/apt/lists/*", "--exclude=./var/cache/apt/*", "-cf", join(work, "rootfs.tar"), "."]));
    renameSync(join(work, "rootfs.tar"), tarball);
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
  return tarball;
}

export interface Podman {
  dir: string;
  /** podman with the test's storage and configuration. */
  args(...args: string[]): string[];
  run(args: string[], input?: string): { status: number; stdout: string; stderr: string };
  env: Record<string, string | undefined>;
  /** The host path of a named volume's data. */
  volumePath(name: string): string;
  /** Remove the test's storage and everything in it. */
  remove(): void;
  /** How long each step took, in seconds, for the test's report. */
  timings: Record<string, number>;
}

function timed<T>(timings: Record<string, number>, step: string, fn: () => T): T {
  const started = performance.now();
  try {
    return fn();
  } finally {
    timings[step] = Math.round((performance.now() - started) / 100) / 10;
  }
}

/** Install the tools, make the base images, build the Dockerfile: the image IMAGE in the test's storage. */
export function buildImage(): Podman {
  const timings: Record<string, number> = {};
  if (process.platform !== "linux" || process.arch !== "x64") throw cannotRun(`this is ${process.platform}-${process.arch}, and the stand-in base images are made for linux-x64`);
  timed(timings, "install podman, runc, debootstrap", installTools);
  const tarball = timed(timings, "bookworm tree (debootstrap, cached)", baseTarball);

  // Beside the cache, not in /tmp: inside a CI container /tmp is itself an
  // overlay, which podman's overlay storage cannot sit on; the home folder
  // there is a bind mount.
  mkdirSync(join(cacheDir(), "container"), { recursive: true });
  const dir = mkdtempSync(join(cacheDir(), "container", "podman-"));
  const conf = join(dir, "containers.conf");
  // runc (crun fails in sandboxes like this one's), fixed ulimits, and cgroupfs, which needs no systemd.
  writeFileSync(conf, '[containers]\ndefault_ulimits = ["nofile=20000:20000", "nproc=32768:32768"]\n[engine]\nruntime = "runc"\ncgroup_manager = "cgroupfs"\n');
  const env = { ...process.env, CONTAINERS_CONF: conf };
  // The run root (state of running containers, no layers) in /tmp: podman wants its path under 50 characters.
  const runroot = mkdtempSync(join(tmpdir(), "sd-podman-"));
  const base = ["--root", join(dir, "storage"), "--runroot", runroot];
  const podman: Podman = {
    dir,
    env,
    timings,
    args: (...args) => [...base, ...args],
    run: (args, input) => run("podman", [...base, ...args], { env, input }),
    volumePath: (name) => must(`podman volume inspect ${name}`, podman.run(["volume", "inspect", "--format", "{{.Mountpoint}}", name])).trim(),
    remove: () => {
      podman.run(["system", "reset", "--force"]);
      rmSync(dir, { recursive: true, force: true });
      rmSync(runroot, { recursive: true, force: true });
    },
  };
  try {
    timed(timings, "base images (podman import)", () => {
      const imported = podman.run(["import", tarball, "docker.io/library/debian:12-slim"]);
      if (imported.status !== 0) throw cannotRun(`podman cannot import an image here: ${imported.stderr.trim().split("\n").at(-1)}`);
      const probe = podman.run(["run", "--rm", "--network", "none", "docker.io/library/debian:12-slim", "true"]);
      if (probe.status !== 0) throw cannotRun(`podman cannot run a container here: ${probe.stderr.trim().split("\n").at(-1)}`);
      // node:20-bookworm-slim's stand-in: this machine's node and npm in /usr/local, as the official image has them.
      const extra = join(dir, "node-extra");
      const node = realpathSync(must("which node", run("sh", ["-c", "command -v node"])).trim());
      const npmCli = realpathSync(must("which npm", run("sh", ["-c", "command -v npm"])).trim());
      const npmDir = dirname(dirname(npmCli));
      mkdirSync(join(extra, "usr/local/bin"), { recursive: true });
      mkdirSync(join(extra, "usr/local/lib/node_modules"), { recursive: true });
      copyFileSync(node, join(extra, "usr/local/bin/node"));
      cpSync(npmDir, join(extra, "usr/local/lib/node_modules/npm"), { recursive: true, dereference: false });
      symlinkSync("../lib/node_modules/npm/bin/npm-cli.js", join(extra, "usr/local/bin/npm"));
      // Node's own shared libraries that minbase lacks (the official image has them).
      const libs = must("ldd node", run("ldd", [node]));
      for (const m of libs.matchAll(/=>\s+(\S+libstdc\+\+\S*)/g)) {
        // Under the real folder (/usr/lib/…): a /lib folder in the copy would replace the image's /lib symlink.
        const target = join(extra, realpathSync(dirname(m[1]!)));
        mkdirSync(target, { recursive: true });
        copyFileSync(realpathSync(m[1]!), join(target, m[1]!.split("/").at(-1)!));
      }
      const caBundle = process.env.NODE_EXTRA_CA_CERTS && existsSync(process.env.NODE_EXTRA_CA_CERTS) ? process.env.NODE_EXTRA_CA_CERTS : null;
      let containerfile = "FROM docker.io/library/debian:12-slim\nCOPY . /\n";
      if (caBundle) {
        mkdirSync(join(extra, "etc/slivingdoc-test"), { recursive: true });
        copyFileSync(caBundle, join(extra, "etc/slivingdoc-test/ca.crt"));
        containerfile += "ENV NODE_EXTRA_CA_CERTS=/etc/slivingdoc-test/ca.crt\n";
      }
      writeFileSync(join(dir, "Containerfile.node"), containerfile);
      must("the node:20-bookworm-slim stand-in", podman.run(["build", "--network", "none", "-f", join(dir, "Containerfile.node"), "-t", "docker.io/library/node:20-bookworm-slim", extra]));
      rmSync(extra, { recursive: true, force: true });
    });
    timed(timings, "podman build of the Dockerfile", () => {
      // Caches this machine already has, mounted for the build only.
      const volumes: string[] = [];
      const npmCache = run("npm", ["config", "get", "cache"]).stdout.trim();
      if (npmCache && existsSync(npmCache)) volumes.push("-v", `${npmCache}:/root/.npm`);
      const bunRuntime = join(cacheDir(), "bun-runtime");
      mkdirSync(bunRuntime, { recursive: true });
      volumes.push("-v", `${bunRuntime}:/root/.cache/slivingdoc/bun-runtime`);
      must("podman build of the project's Dockerfile", podman.run(["build", "--network", "host", ...volumes, "-f", join(REPO, "Dockerfile"), "-t", IMAGE, REPO]));
    });
  } catch (e) {
    podman.remove();
    throw e;
  }
  return podman;
}
