/**
 * Small pieces every view uses. Every string an agent provided (names,
 * messages, paths, file text) goes through JSX text, which Preact writes as
 * a text node, never as markup; and inside <bdi>, so a bidi control in it
 * (U+202E) cannot reorder what is around it.
 */
import type { ComponentChildren } from "preact";
import { useEffect, useState } from "preact/hooks";
import { ApiError, type ErrorEnvelope, type LogEntry } from "./api.ts";

/** A moment in the viewer's zone, with its UTC form on hover. */
export function Time({ iso }: { iso: string | null }) {
  if (iso === null) return <span>—</span>;
  const d = new Date(iso);
  return (
    <time dateTime={iso} title={`${d.toISOString().replace("T", " ").replace(/\.\d+Z$/, "")} UTC`}>
      {d.toLocaleString()}
    </time>
  );
}

export function Agent({ name }: { name: string }) {
  return (
    <bdi class="agent" title={name}>
      {name}
    </bdi>
  );
}

export function PathText({ path }: { path: string }) {
  return <bdi class="path">{path}</bdi>;
}

export function publicationHref(generation: number): string {
  return `#/publication/${generation}`;
}

export function fileHref(generation: number, path: string, tab = "text"): string {
  return `#/notebook/${generation}/${tab}/${encodeURIComponent(path)}`;
}

/** "crossed gen 12 (planner), 13 (coder)": the publications merged in unseen by this one's agent. */
export function Crossings({ entry }: { entry: Pick<LogEntry, "crossed" | "crossedUnretained"> }) {
  const crossed = entry.crossed ?? [];
  if (crossed.length === 0 && entry.crossedUnretained === 0) return null;
  return (
    <span class="crossed">
      crossed gen{" "}
      {crossed.map((c, i) => (
        <span key={c.generation}>
          {i > 0 ? ", " : ""}
          <a href={publicationHref(c.generation)}>{c.generation}</a> (<Agent name={c.agent} />)
        </span>
      ))}
      {entry.crossedUnretained > 0 ? `${crossed.length > 0 ? ", and " : ""}${entry.crossedUnretained} older than the retained history` : ""}
    </span>
  );
}

export function Stat({ insertions, deletions }: { insertions: number; deletions: number }) {
  return (
    <span class="stat">
      <span class="ins">+{insertions}</span> <span class="del">−{deletions}</span>
    </span>
  );
}

/** An error envelope as the CLI words it: code and reason, what to do, and the message. */
export function Envelope({ envelope, title }: { envelope: ErrorEnvelope; title: string }) {
  return (
    <div class="envelope" role="alert">
      <strong>{title}</strong>
      <p>
        <code>{envelope.code}</code> · <code>{envelope.reason}</code> — what to do: <code>{envelope.action}</code>
      </p>
      <p class="message">{envelope.message}</p>
    </div>
  );
}

export function Failure({ error }: { error: unknown }) {
  if (error instanceof ApiError && error.envelope) return <Envelope envelope={error.envelope} title="The server refused this request" />;
  return (
    <div class="envelope" role="alert">
      <strong>This could not be loaded:</strong> {error instanceof Error ? error.message : String(error)}
    </div>
  );
}

export type Loaded<T> = { state: "loading" } | { state: "done"; value: T } | { state: "failed"; error: unknown };

/** Runs `load` whenever one of `deps` changes; a result that arrives after a newer request is dropped. */
export function useLoad<T>(load: () => Promise<T>, deps: unknown[]): Loaded<T> {
  const [got, setGot] = useState<Loaded<T>>({ state: "loading" });
  useEffect(() => {
    let live = true;
    setGot({ state: "loading" });
    load().then(
      (value) => live && setGot({ state: "done", value }),
      (error: unknown) => live && setGot({ state: "failed", error }),
    );
    return () => {
      live = false;
    };
    // The caller names what the load depends on.
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, deps);
  return got;
}

export function Loading({ what }: { what: string }) {
  return (
    <p class="loading" aria-live="polite">
      Loading {what}…
    </p>
  );
}

export function Section({ title, children }: { title: ComponentChildren; children: ComponentChildren }) {
  return (
    <section>
      <h2>{title}</h2>
      {children}
    </section>
  );
}
