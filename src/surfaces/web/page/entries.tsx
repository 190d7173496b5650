/**
 * A list of publications, newest first, paged: the timeline and a file's own
 * history. The first page is loaded when the filters change; "Older" loads
 * the page the server's `next` names (never the whole history at once); and
 * when the notebook's generation moves on, the publications newer than the
 * newest shown are added at the top, without a reload.
 */
import { useEffect, useRef, useState } from "preact/hooks";
import { getJson, type LogEntry, type LogPage } from "./api.ts";
import { Agent, Crossings, Failure, publicationHref, Stat, Time } from "./common.tsx";

const PAGE = 50;
/** Enough to catch up after a burst of publications between two polls. */
const CATCH_UP = 200;

export type Query = Record<string, string | number | undefined>;

function merged(shown: LogEntry[], more: LogEntry[]): LogEntry[] {
  const byGeneration = new Map<number, LogEntry>();
  for (const e of [...shown, ...more]) byGeneration.set(e.generation, e);
  return [...byGeneration.values()].sort((a, b) => b.generation - a.generation);
}

export function EntryItem({ entry }: { entry: LogEntry }) {
  const subject = entry.message.split("\n")[0] ?? "";
  return (
    <li class="entry" data-generation={entry.generation}>
      <div class="head">
        <a class="gen" href={publicationHref(entry.generation)}>
          gen {entry.generation}
        </a>
        <Time iso={entry.time} />
        <Agent name={entry.agent} />
      </div>
      <div class="msg">
        <bdi>{subject}</bdi>
      </div>
      <div class="meta">
        {entry.files === null ? (
          <span>what it changed is older than the retained history</span>
        ) : (
          <span>
            {entry.filesChanged} {entry.filesChanged === 1 ? "file" : "files"} <Stat insertions={entry.insertions} deletions={entry.deletions} />
          </span>
        )}
        <Crossings entry={entry} />
      </div>
    </li>
  );
}

interface Listing {
  entries: LogEntry[];
  next: number | null;
  busy: boolean;
  error: unknown;
}

/** The paged list for `endpoint` with `query`, kept up to date with `generation`. */
export function Entries({ endpoint, query, generation, empty }: { endpoint: string; query: Query; generation: number; empty: string }) {
  const [list, setList] = useState<Listing>({ entries: [], next: null, busy: true, error: null });
  const key = JSON.stringify(query);
  const asked = useRef(key);
  asked.current = key;

  const fetchPage = async (extra: Query, apply: (page: LogPage, l: Listing) => Listing) => {
    setList((l) => ({ ...l, busy: true }));
    try {
      const page = await getJson<LogPage>(endpoint, { ...query, ...extra });
      if (asked.current === key) setList((l) => ({ ...apply(page, l), busy: false, error: null }));
    } catch (error) {
      if (asked.current === key) setList((l) => ({ ...l, busy: false, error }));
    }
  };

  useEffect(() => {
    setList({ entries: [], next: null, busy: true, error: null });
    void fetchPage({ limit: PAGE }, (page) => ({ entries: page.entries, next: page.next, busy: false, error: null }));
  }, [endpoint, key]);

  useEffect(() => {
    const newest = list.entries[0]?.generation ?? 0;
    if (generation > newest && !list.busy) {
      void fetchPage({ limit: CATCH_UP }, (page, l) => ({ ...l, entries: merged(l.entries, page.entries.filter((e) => e.generation > newest)) }));
    }
    // Re-checked when a load ends: a generation seen while one was under way is caught up after it.
  }, [generation, list.busy, key]);

  const older = () => void fetchPage({ limit: PAGE, before: list.next ?? undefined }, (page, l) => ({ ...l, entries: merged(l.entries, page.entries), next: page.next }));

  return (
    <div class="entries">
      {list.error ? <Failure error={list.error} /> : null}
      {list.entries.length === 0 && !list.busy && !list.error ? <p>{empty}</p> : null}
      <ol class="entry-list" aria-label="publications, newest first">
        {list.entries.map((e) => (
          <EntryItem key={e.generation} entry={e} />
        ))}
      </ol>
      <p class="paging" aria-live="polite">
        {list.busy ? <span class="loading">Loading…</span> : null}
        {list.next !== null && !list.busy ? (
          <button type="button" class="older" onClick={older}>
            Older publications
          </button>
        ) : null}
        {list.next === null && !list.busy && list.entries.length > 0 ? <span class="end">The oldest retained publication is shown.</span> : null}
      </p>
    </div>
  );
}
