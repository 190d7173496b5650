/**
 * The agents: each one's publications over time as a chart (uPlot, one lane
 * per agent, a point per publication), what files each touched, and where
 * their work crossed another agent's. uPlot draws on a canvas and sets its
 * elements' sizes through the CSSOM, which the page's CSP allows; it writes
 * the legend's agent names as text.
 */
import { useEffect, useRef } from "preact/hooks";
import uPlot from "uplot";
import { type AgentPublication, type Agents as AgentsData, getJson } from "./api.ts";
import { Agent, Failure, Loading, PathText, publicationHref, Time, useLoad } from "./common.tsx";

const COLORS = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf", "#ff7f0e"];

/** uPlot's aligned columns: the times (seconds), then per agent its lane where it published at that time, else null. */
function chartData(names: string[], pubs: AgentPublication[]): uPlot.AlignedData {
  const times = [...new Set(pubs.map((p) => Math.floor(Date.parse(p.time) / 1000)))].sort((a, b) => a - b);
  const at = new Map(times.map((t, i) => [t, i]));
  const lanes = names.map(() => new Array<number | null>(times.length).fill(null));
  const lane = new Map(names.map((n, i) => [n, i]));
  for (const p of pubs) lanes[lane.get(p.agent)!]![at.get(Math.floor(Date.parse(p.time) / 1000))!] = lane.get(p.agent)!;
  return [times, ...lanes];
}

function chartOptions(names: string[], width: number): uPlot.Options {
  return {
    width,
    height: 80 + 32 * names.length,
    scales: { x: { time: true }, y: { range: [-0.5, names.length - 0.5] } },
    axes: [{}, { splits: () => names.map((_, i) => i), values: (_u, splits) => splits.map((v) => names[v] ?? ""), size: 110 }],
    series: [
      { label: "time" },
      ...names.map((name, i) => ({
        label: name,
        stroke: COLORS[i % COLORS.length]!,
        paths: () => null,
        points: { show: true, size: 8, fill: COLORS[i % COLORS.length]! },
      })),
    ],
    // The lanes name the agents; a legend would repeat them, and crowds a phone.
    legend: { show: false },
    cursor: { drag: { x: true, y: false } },
  };
}

function Chart({ names, pubs }: { names: string[]; pubs: AgentPublication[] }) {
  const box = useRef<HTMLDivElement>(null);
  useEffect(() => {
    const el = box.current!;
    const plot = new uPlot(chartOptions(names, el.clientWidth), chartData(names, pubs), el);
    const resize = () => plot.setSize({ width: el.clientWidth, height: 80 + 32 * names.length });
    window.addEventListener("resize", resize);
    return () => {
      window.removeEventListener("resize", resize);
      plot.destroy();
    };
    // `pubs` is the loaded answer: a new chart only for a new answer.
  }, [pubs]);
  return <div class="chart" ref={box} role="img" aria-label={`publications over time of ${names.length} agents, one lane each`} />;
}

function Crossings({ pubs }: { pubs: AgentPublication[] }) {
  const rows = pubs.flatMap((p) => p.crossed.filter((c) => c.agent !== p.agent).map((c) => ({ p, c })));
  if (rows.length === 0) return <p>No publication crossed another agent's.</p>;
  const shown = rows.slice(0, 200);
  return (
    <>
      <ul class="crossings">
        {shown.map(({ p, c }) => (
          <li key={`${p.generation}/${c.generation}`}>
            <a href={publicationHref(p.generation)}>gen {p.generation}</a> (<Agent name={p.agent} />) crossed{" "}
            <a href={publicationHref(c.generation)}>gen {c.generation}</a> (<Agent name={c.agent} />)
          </li>
        ))}
      </ul>
      {rows.length > shown.length ? <p>and {rows.length - shown.length} older crossings.</p> : null}
    </>
  );
}

function Summaries({ data }: { data: AgentsData }) {
  return (
    <table class="agents">
      <caption>Each agent</caption>
      <thead>
        <tr>
          <th scope="col">agent</th>
          <th scope="col">publications</th>
          <th scope="col">first</th>
          <th scope="col">last</th>
          <th scope="col">files touched</th>
        </tr>
      </thead>
      <tbody>
        {data.agents.map((a) => (
          <tr key={a.agent}>
            <td>
              <Agent name={a.agent} />
            </td>
            <td class="num">{a.publications}</td>
            <td>
              <a href={publicationHref(a.first.generation)}>gen {a.first.generation}</a> <Time iso={a.first.time} />
            </td>
            <td>
              <a href={publicationHref(a.last.generation)}>gen {a.last.generation}</a> <Time iso={a.last.time} />
            </td>
            <td>
              <details>
                <summary>{a.files.length} {a.files.length === 1 ? "file" : "files"}</summary>
                <ul>
                  {a.files.map((f) => (
                    <li key={f}>
                      <PathText path={f} />
                    </li>
                  ))}
                </ul>
              </details>
              {a.changesUnknown.length > 0 ? <p>and {a.changesUnknown.length} publications whose changes are older than the retained history</p> : null}
            </td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

export function Agents({ generation }: { generation: number }) {
  const got = useLoad(() => getJson<AgentsData>("/api/agents"), [generation]);
  if (got.state === "loading") return <Loading what="the agents" />;
  if (got.state === "failed") return <Failure error={got.error} />;
  const data = got.value;
  const names = data.agents.map((a) => a.agent);
  return (
    <section aria-labelledby="agents-title">
      <h2 id="agents-title">Agents</h2>
      {names.length === 0 ? <p>No publication is retained.</p> : <Chart names={names} pubs={data.publications} />}
      <Summaries data={data} />
      <h3>Where their work crossed</h3>
      <Crossings pubs={data.publications} />
    </section>
  );
}
