/**
 * The timeline: every retained publication, newest first, filtered by
 * agent, path and time. The filters apply when the form is submitted, so a
 * half-typed path does not send a request per key.
 */
import { useState } from "preact/hooks";
import { Entries, type Query } from "./entries.tsx";

interface Filters {
  agent: string;
  path: string;
  /** A datetime-local value, in the viewer's zone. */
  since: string;
}

const NONE: Filters = { agent: "", path: "", since: "" };

function queryOf(f: Filters): Query {
  const since = f.since === "" ? undefined : new Date(f.since);
  return {
    agent: f.agent.trim() || undefined,
    path: f.path.trim() || undefined,
    since: since && !Number.isNaN(since.getTime()) ? since.toISOString() : undefined,
  };
}

function FilterForm({ applied, apply }: { applied: Filters; apply: (f: Filters) => void }) {
  const [draft, setDraft] = useState<Filters>(applied);
  const field = (name: keyof Filters) => (e: Event) => setDraft({ ...draft, [name]: (e.currentTarget as HTMLInputElement).value });
  return (
    <form
      class="filters"
      role="search"
      onSubmit={(e) => {
        e.preventDefault();
        apply(draft);
      }}
    >
      <label>
        Agent <input name="agent" type="text" value={draft.agent} onInput={field("agent")} autocomplete="off" />
      </label>
      <label>
        Path <input name="path" type="text" value={draft.path} onInput={field("path")} autocomplete="off" placeholder="file or directory" />
      </label>
      <label>
        Since <input name="since" type="datetime-local" value={draft.since} onInput={field("since")} />
      </label>
      <button type="submit">Filter</button>
      <button
        type="button"
        onClick={() => {
          setDraft(NONE);
          apply(NONE);
        }}
      >
        Clear
      </button>
    </form>
  );
}

export function Timeline({ generation }: { generation: number }) {
  const [filters, setFilters] = useState<Filters>(NONE);
  const filtered = filters.agent !== "" || filters.path !== "" || filters.since !== "";
  return (
    <section aria-labelledby="timeline-title">
      <h2 id="timeline-title">Timeline</h2>
      <FilterForm applied={filters} apply={setFilters} />
      <Entries
        endpoint="/api/log"
        query={queryOf(filters)}
        generation={generation}
        empty={filtered ? "No retained publication matches these filters." : "No publication is retained."}
      />
    </section>
  );
}
