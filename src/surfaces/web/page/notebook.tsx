/**
 * The notebook at any retained generation: its file tree, and one file's
 * text, its blame (each line with the publication and agent that last wrote
 * it; a line older than the retained history says so) and its own history.
 */
import { useState } from "preact/hooks";
import { type BlameResult, type FileText, getJson, type Tree } from "./api.ts";
import { Agent, Failure, fileHref, Loading, PathText, publicationHref, Time, useLoad } from "./common.tsx";
import { Entries } from "./entries.tsx";

export type FileTab = "text" | "blame" | "history";

interface Dir {
  dirs: Map<string, Dir>;
  files: Array<{ name: string; path: string; size: number }>;
}

function treeOf(files: Tree["files"]): Dir {
  const root: Dir = { dirs: new Map(), files: [] };
  for (const f of files) {
    const parts = f.path.split("/");
    let dir = root;
    for (const part of parts.slice(0, -1)) {
      let sub = dir.dirs.get(part);
      if (!sub) dir.dirs.set(part, (sub = { dirs: new Map(), files: [] }));
      dir = sub;
    }
    dir.files.push({ name: parts[parts.length - 1]!, path: f.path, size: f.size });
  }
  return root;
}

function DirList({ dir, generation, tab, open }: { dir: Dir; generation: number; tab: FileTab; open: string | undefined }) {
  return (
    <ul>
      {[...dir.dirs].map(([name, sub]) => (
        <li key={`d/${name}`}>
          <details open>
            <summary>
              <PathText path={`${name}/`} />
            </summary>
            <DirList dir={sub} generation={generation} tab={tab} open={open} />
          </details>
        </li>
      ))}
      {dir.files.map((f) => (
        <li key={f.path}>
          <a href={fileHref(generation, f.path, tab)} aria-current={f.path === open ? "page" : undefined}>
            <PathText path={f.name} />
          </a>
        </li>
      ))}
    </ul>
  );
}

function FileTree({ generation, tab, open }: { generation: number; tab: FileTab; open: string | undefined }) {
  const got = useLoad(() => getJson<Tree>("/api/tree", { generation }), [generation]);
  if (got.state === "loading") return <Loading what="the file tree" />;
  if (got.state === "failed") return <Failure error={got.error} />;
  if (got.value.files.length === 0) return <p>No file at this generation.</p>;
  return (
    <nav class="tree" aria-label={`files at generation ${generation}`}>
      <DirList dir={treeOf(got.value.files)} generation={generation} tab={tab} open={open} />
    </nav>
  );
}

function TextView({ generation, path }: { generation: number; path: string }) {
  const got = useLoad(() => getJson<FileText>("/api/file", { generation, path }), [generation, path]);
  if (got.state === "loading") return <Loading what="the file" />;
  if (got.state === "failed") return <Failure error={got.error} />;
  if (got.value.text === null) return <p>Not UTF-8 text ({got.value.size} bytes): not shown.</p>;
  return <pre class="file-text">{got.value.text}</pre>;
}

function BlameView({ generation, path }: { generation: number; path: string }) {
  const got = useLoad(() => getJson<BlameResult>("/api/blame", { generation, path }), [generation, path]);
  if (got.state === "loading") return <Loading what="the blame" />;
  if (got.state === "failed") return <Failure error={got.error} />;
  const { lines, oldestRetained } = got.value;
  return (
    <table class="blame">
      <caption>Who last wrote each line</caption>
      <thead>
        <tr>
          <th scope="col">gen</th>
          <th scope="col">agent</th>
          <th scope="col">time</th>
          <th scope="col">line</th>
          <th scope="col">text</th>
        </tr>
      </thead>
      <tbody>
        {lines.map((l) => (
          <tr key={l.line} data-line={l.line}>
            {l.generation === null ? (
              <td colSpan={3} class="unretained">
                older than the retained history (before gen {oldestRetained})
              </td>
            ) : (
              <>
                <td>
                  <a href={publicationHref(l.generation)}>{l.generation}</a>
                </td>
                <td class="blame-agent">
                  <Agent name={l.agent ?? ""} />
                </td>
                <td>
                  <Time iso={l.time} />
                </td>
              </>
            )}
            <td class="num">{l.line}</td>
            <td>
              <pre class="line">{l.text}</pre>
            </td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

function FileView({ generation, path, tab, latest }: { generation: number; path: string; tab: FileTab; latest: number }) {
  const tabs: FileTab[] = ["text", "blame", "history"];
  return (
    <section class="file" aria-labelledby="file-title">
      <h3 id="file-title">
        <PathText path={path} /> at generation {generation}
      </h3>
      <nav class="tabs" aria-label="views of the file">
        {tabs.map((t) => (
          <a key={t} href={fileHref(generation, path, t)} aria-current={t === tab ? "page" : undefined}>
            {t}
          </a>
        ))}
      </nav>
      {tab === "text" ? <TextView generation={generation} path={path} /> : null}
      {tab === "blame" ? <BlameView generation={generation} path={path} /> : null}
      {tab === "history" ? <Entries endpoint="/api/history" query={{ path }} generation={latest} empty="No retained publication changed this file." /> : null}
    </section>
  );
}

function GenerationPicker({ generation, oldest, latest }: { generation: number; oldest: number; latest: number }) {
  const [value, setValue] = useState(String(generation));
  return (
    <form
      class="picker"
      onSubmit={(e) => {
        e.preventDefault();
        location.hash = `#/notebook/${value}`;
      }}
    >
      <label>
        Generation{" "}
        <input type="number" min={oldest} max={latest} value={value} onInput={(e) => setValue((e.currentTarget as HTMLInputElement).value)} />
      </label>
      <button type="submit">Show</button> <span>retained: {oldest}–{latest}</span>
    </form>
  );
}

export function Notebook(props: { generation: number; path: string | undefined; tab: FileTab; oldest: number; latest: number }) {
  const { generation, path, tab, oldest, latest } = props;
  return (
    <section aria-labelledby="notebook-title" class="notebook">
      <h2 id="notebook-title">Notebook at generation {generation}</h2>
      <GenerationPicker key={generation} generation={generation} oldest={oldest} latest={latest} />
      <div class="split">
        <FileTree generation={generation} tab={tab} open={path} />
        {path === undefined ? <p>Choose a file.</p> : <FileView generation={generation} path={path} tab={tab} latest={latest} />}
      </div>
    </section>
  );
}
