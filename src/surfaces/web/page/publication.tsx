/**
 * One publication: who, when, what it crossed, its files with their counts,
 * and its unified diff (the patch `slivingdoc show` writes), displayed by
 * diff2html. diff2html escapes every text it puts in its HTML (file names
 * and lines alike); test/e2e/web-browser.test.ts shows a payload in both
 * stays text. It is the only markup the page takes from a string.
 */
import { html as diffHtml } from "diff2html";
import { getJson, type LogEntry, type Show } from "./api.ts";
import { Agent, Crossings, Failure, fileHref, Loading, PathText, Stat, Time, useLoad } from "./common.tsx";

function Files({ entry }: { entry: LogEntry }) {
  if (entry.files === null) return <p>What it changed is older than the retained history: its parent is no longer stored.</p>;
  if (entry.files.length === 0) return <p>It changed no file.</p>;
  return (
    <table class="files">
      <caption>Files changed</caption>
      <thead>
        <tr>
          <th scope="col">path</th>
          <th scope="col">change</th>
          <th scope="col">lines</th>
        </tr>
      </thead>
      <tbody>
        {entry.files.map((f) => (
          <tr key={f.path}>
            <td>
              {f.status === "deleted" ? (
                <PathText path={f.path} />
              ) : (
                <a href={fileHref(entry.generation, f.path)}>
                  <PathText path={f.path} />
                </a>
              )}
            </td>
            <td>{f.status}</td>
            <td>
              <Stat insertions={f.insertions} deletions={f.deletions} />
            </td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

function Patch({ patch }: { patch: string | null }) {
  if (patch === null) return <p>The change itself is not known: its parent is older than the retained history.</p>;
  if (patch === "") return <p>The diff is empty.</p>;
  const markup = diffHtml(patch, { drawFileList: false, outputFormat: "line-by-line", matching: "none" });
  return <div class="diff" dangerouslySetInnerHTML={{ __html: markup }} />;
}

export function Publication({ generation }: { generation: number }) {
  const got = useLoad(() => getJson<Show>("/api/show", { generation }), [generation]);
  if (got.state === "loading") return <Loading what={`publication ${generation}`} />;
  if (got.state === "failed") return <Failure error={got.error} />;
  const { entry, patch } = got.value;
  return (
    <section aria-labelledby="publication-title" class="publication" data-generation={entry.generation}>
      <h2 id="publication-title">Publication {entry.generation}</h2>
      <dl class="facts">
        <dt>agent</dt>
        <dd>
          <Agent name={entry.agent} />
        </dd>
        <dt>time</dt>
        <dd>
          <Time iso={entry.time} />
        </dd>
        <dt>message</dt>
        <dd>
          <pre class="message">{entry.message}</pre>
        </dd>
        <dt>changed</dt>
        <dd>
          {entry.filesChanged} {entry.filesChanged === 1 ? "file" : "files"} <Stat insertions={entry.insertions} deletions={entry.deletions} />
        </dd>
        <dt>base</dt>
        <dd>{entry.base === null ? "not recorded" : `its agent had seen generation ${entry.base}`}</dd>
        {entry.crossed?.length || entry.crossedUnretained ? (
          <>
            <dt>crossings</dt>
            <dd>
              <Crossings entry={entry} />
            </dd>
          </>
        ) : null}
      </dl>
      <p>
        <a href={`#/notebook/${entry.generation}`}>The notebook at generation {entry.generation}</a>
      </p>
      <Files entry={entry} />
      <h3>Diff</h3>
      <Patch patch={patch} />
    </section>
  );
}
