/**
 * The operations on the store itself, for operators: gc, generation and
 * doctor. Each runner loads the engine or the store's examination when it
 * runs, not when this module loads.
 */
import { booleanField, countField, objectInput, optional } from "../../contract/input-schema.ts";
import { parseDuration } from "../duration.ts";
import { defineOperation, parseCount } from "./define.ts";
import { DEFAULT_COMMIT_RETRIES } from "../config.ts";

/** Requests of each kind doctor times: enough for a p50, and a p99 that is the slowest of 20. */
const DOCTOR_SAMPLES = 20;
const DOCTOR_MAX_SAMPLES = 1_000;

export const gcOperation = defineOperation({
  cli: {
    name: "gc",
    example: "slivingdoc gc --dry-run",
    summary: "Remove packs no manifest references, older than a grace period (maintenance)",
    usage: "gc [--grace DURATION] [--dry-run] [--delete-lost]",
    flags: {
      grace: { type: "string", description: "Keep unreferenced packs younger than this: 90s, 30m, 1h, 2d (default 1h)", valueHint: "DURATION" },
      "dry-run": { type: "boolean", description: "Report what would be removed; change nothing" },
      "delete-lost": {
        type: "boolean",
        description: "After the store went backwards and its checkouts were attached to it as it is: delete the packs of the generations it lost too",
      },
    },
    path: false,
    toInput: (flags) => ({
      ...(typeof flags.grace === "string" ? { graceMs: parseDuration("grace", flags.grace) } : {}),
      dryRun: flags["dry-run"] === true,
      ...(flags["delete-lost"] === true ? { deleteLost: true } : {}),
    }),
  },
  input: objectInput("gc", { graceMs: optional(countField()), dryRun: booleanField(), deleteLost: optional(booleanField()) }),
  async run(ctx, input) {
    const { collectGarbage, DEFAULT_GRACE_MS } = await import("../../engine/gc.ts");
    const deps = ctx.engine();
    const { privateRoot, storeId, memory } = deps;
    const report = await collectGarbage(
      { ...deps, local: { privateRoot, storeId, memory } },
      { graceMs: input.graceMs ?? DEFAULT_GRACE_MS, dryRun: input.dryRun, deleteLost: input.deleteLost === true },
    );
    // Counts, not keys: no S3 key appears in any output (a server's log has them if needed).
    return {
      generation: report.generation,
      referenced: report.referenced,
      deleted: report.deleted.length,
      young: report.young.length,
      onHead: report.onHead.length,
      checkoutBaselines: report.checkoutBaselines.length,
      proposals: report.proposals?.length ?? 0,
      dryRun: input.dryRun,
      ...(report.reason !== undefined ? { reason: report.reason } : {}),
    };
  },
});

export const generationOperation = defineOperation({
  cli: {
    name: "generation",
    example: "slivingdoc generation",
    writesNothing: true,
    summary: "Print the accepted generation of the notebook (reads the store only)",
    usage: "generation",
    flags: {},
    path: false,
    toInput: () => ({}),
  },
  input: objectInput("generation", {}),
  async run(ctx) {
    const { acceptedGeneration } = await import("../../engine/generation.ts");
    return { generation: await acceptedGeneration({ store: ctx.store }) };
  },
});

export const doctorOperation = defineOperation({
  cli: {
    name: "doctor",
    example: "slivingdoc doctor --samples 50 --deadline 2m",
    examinesStore: true,
    summary: "Examine the configured store: permissions, conditional writes, latency, write rate, clock skew, and the settings it calls for (operators)",
    usage: "doctor [--samples N]",
    flags: {
      samples: { type: "string", description: `Requests of each kind timed (default ${DOCTOR_SAMPLES}, at most ${DOCTOR_MAX_SAMPLES})`, valueHint: "N" },
    },
    path: false,
    toInput: (flags) => (typeof flags.samples === "string" ? { samples: parseCount("--samples", flags.samples, 1, `a whole number from 1 to ${DOCTOR_MAX_SAMPLES}`, DOCTOR_MAX_SAMPLES) } : {}),
  },
  input: objectInput("doctor", { samples: optional(countField()) }),
  async run(ctx, input) {
    const started = performance.now();
    const { examineStore } = await import("../../store/doctor.ts");
    const { judge } = await import("../doctor.ts");
    const { notebookFacts } = await import("../doctor-notebook.ts");
    const { SYSTEM_CLOCK } = await import("../system-clock.ts");
    const exam = await examineStore(ctx.store, { deadline: ctx.deadline, samples: input.samples ?? DOCTOR_SAMPLES, clock: SYSTEM_CLOCK });
    const notebook = await notebookFacts(ctx.store);
    return judge(exam, { commitRetries: ctx.commitRetries ?? DEFAULT_COMMIT_RETRIES, deadlineMs: ctx.deadline.ms }, performance.now() - started, notebook);
  },
});
