/**
 * The page of `slivingdoc web` (docs/web.md): a read-only view of a
 * notebook's retained history. It learns the notebook's state from the
 * server's event stream (a `state` event on connect and on each new
 * generation), and reads everything else from the JSON API. Views are
 * addressed by the URL's fragment, so links, the back button and the
 * keyboard work as on any page.
 */
import "diff2html/bundles/css/diff2html.min.css";
import "uplot/dist/uPlot.min.css";
import "./app.css";
import { render } from "preact";
import { useEffect, useState } from "preact/hooks";
import { Agents } from "./agents.tsx";
import type { State } from "./api.ts";
import { Envelope } from "./common.tsx";
import { type FileTab, Notebook } from "./notebook.tsx";
import { Publication } from "./publication.tsx";
import { Timeline } from "./timeline.tsx";

type Route =
  | { view: "timeline" }
  | { view: "publication"; generation: number }
  | { view: "notebook"; generation: number | undefined; tab: FileTab; path: string | undefined }
  | { view: "agents" };

function routeOf(hash: string): Route {
  const [, view, gen, tab, ...rest] = hash.replace(/^#/, "").split("/");
  const generation = gen !== undefined && /^\d+$/.test(gen) ? Number(gen) : undefined;
  if (view === "publication" && generation !== undefined) return { view, generation };
  if (view === "notebook") {
    const t: FileTab = tab === "blame" || tab === "history" ? tab : "text";
    const path = rest.length > 0 ? decodeURIComponent(rest.join("/")) : undefined;
    return { view, generation, tab: t, path };
  }
  if (view === "agents") return { view };
  return { view: "timeline" };
}

function useRoute(): Route {
  const [hash, setHash] = useState(location.hash);
  useEffect(() => {
    const changed = () => setHash(location.hash);
    window.addEventListener("hashchange", changed);
    return () => window.removeEventListener("hashchange", changed);
  }, []);
  return routeOf(hash);
}

type Connection = "connecting" | "open" | "lost";

/** The notebook's state from `/events`; EventSource reconnects by itself after a lost connection. */
function useNotebookState(): { state: State | null; connection: Connection } {
  const [state, setState] = useState<State | null>(null);
  const [connection, setConnection] = useState<Connection>("connecting");
  useEffect(() => {
    const events = new EventSource("/events");
    events.addEventListener("state", (e) => {
      setState(JSON.parse((e as MessageEvent<string>).data) as State);
      setConnection("open");
    });
    events.addEventListener("error", () => setConnection("lost"));
    return () => events.close();
  }, []);
  return { state, connection };
}

function Header({ route, state, connection }: { route: Route; state: State | null; connection: Connection }) {
  const here = (view: Route["view"]) => (route.view === view ? "page" : undefined);
  return (
    <header>
      <h1>slivingdoc</h1>
      <nav aria-label="views">
        <a href="#/" aria-current={here("timeline")}>
          Timeline
        </a>
        <a href="#/notebook" aria-current={here("notebook")}>
          Notebook
        </a>
        <a href="#/agents" aria-current={here("agents")}>
          Agents
        </a>
      </nav>
      <p class="status" aria-live="polite">
        {state?.notebook ? `generation ${state.generation} · oldest retained ${state.oldestRetained}` : ""}
        {connection === "lost" ? " · connection to the server lost, reconnecting…" : ""}
      </p>
    </header>
  );
}

function View({ route, state }: { route: Route; state: State }) {
  switch (route.view) {
    case "publication":
      return <Publication generation={route.generation} />;
    case "notebook":
      return <Notebook generation={route.generation ?? state.generation} tab={route.tab} path={route.path} oldest={state.oldestRetained} latest={state.generation} />;
    case "agents":
      return <Agents generation={state.generation} />;
    default:
      return <Timeline generation={state.generation} />;
  }
}

function App() {
  const route = useRoute();
  const { state, connection } = useNotebookState();
  return (
    <>
      <Header route={route} state={state} connection={connection} />
      <main>
        {state?.error ? <Envelope envelope={state.error} title="The last read of the store failed; still listening for the next one." /> : null}
        {state === null ? <p class="loading">Connecting to the server…</p> : null}
        {state !== null && !state.notebook ? (
          <p class="empty">No notebook yet: nothing has been published to this store. Publications appear here as soon as an agent commits.</p>
        ) : null}
        {state?.notebook ? <View route={route} state={state} /> : null}
      </main>
    </>
  );
}

render(<App />, document.getElementById("app")!);
