/**
 * The one table `npm run bench` prints: a row per scenario and store, with
 * the median, the comparison's median measured in the same run, their
 * ratio, the bar and whether it is met — then the stage profile of every
 * row that misses its bar (from the server's completion log records).
 */

/** team counts conflicts per 100 accepted commits; race the S3 requests per accepted commit. */
export type Unit = "ms" | "MB" | "commits/s" | "conflicts/100 commits" | "requests/commit";

export interface Row {
  scenario: string;
  store: string;
  /** What was measured, in a few words. */
  what: string;
  median: number;
  unit: Unit;
  /** What it is compared with, in a few words ("" for an absolute bar). */
  comparison: string;
  comparisonMedian: number | null;
  comparisonUnit?: Unit;
  /** median / comparison (race: throughput / conditional-write rate; team: conflict rate with / without attributes). */
  ratio: number | null;
  bar: string;
  /** null: informational row (a reference point, no bar). */
  met: boolean | null;
  samples: number;
  /** The raw measurements behind the medians (JSON output only). */
  values?: number[];
  comparisonValues?: number[];
  note?: string;
  /** Median milliseconds per engine stage, from the completion log records. */
  profile?: Record<string, number>;
  /** The same for the comparison, when it is a slivingdoc call too (long-history). */
  comparisonProfile?: Record<string, number>;
}

function fmt(value: number | null, unit?: string): string {
  if (value === null || Number.isNaN(value)) return "—";
  const digits = value >= 100 ? 0 : value >= 10 ? 1 : 2;
  return `${value.toFixed(digits)}${unit ? ` ${unit}` : ""}`;
}

export function ratioText(r: Row): string {
  return r.ratio === null ? "—" : `${r.ratio.toFixed(2)}×`;
}

/** The table as Markdown, so docs/performance.md can quote it verbatim. */
export function renderTable(rows: Row[]): string {
  const header = ["scenario", "store", "measured", "median", "comparison", "comparison median", "ratio", "bar", "met?"];
  const lines = [`| ${header.join(" | ")} |`, `|${header.map(() => "---").join("|")}|`];
  for (const r of rows) {
    const met = r.met === null ? "info" : r.met ? "yes" : "**no**";
    const what = r.note ? `${r.what} (${r.note})` : r.what;
    lines.push(
      `| ${[
        r.scenario,
        r.store,
        `${what}, n=${r.samples}`,
        fmt(r.median, r.unit),
        r.comparison || "—",
        fmt(r.comparisonMedian, r.comparisonUnit ?? r.unit),
        ratioText(r),
        r.bar,
        met,
      ].join(" | ")} |`,
    );
  }
  return lines.join("\n");
}

/** Where the time of each row that missed its bar went, stage by stage. */
export function renderProfiles(rows: Row[]): string {
  const out: string[] = [];
  for (const r of rows) {
    if (r.met !== false || !r.profile) continue;
    const stages = Object.entries(r.profile)
      .map(([k, v]) => `${k} ${v}`)
      .join(", ");
    out.push(`- ${r.scenario} ${r.store} (${fmt(r.median, r.unit)}): ${stages}`);
    if (r.comparisonProfile) {
      const theirs = Object.entries(r.comparisonProfile)
        .map(([k, v]) => `${k} ${v}`)
        .join(", ");
      out.push(`  - its comparison (${fmt(r.comparisonMedian, r.comparisonUnit ?? r.unit)}): ${theirs}`);
    }
  }
  return out.length === 0 ? "" : `Stage medians (ms) of the rows that miss their bar:\n${out.join("\n")}`;
}
