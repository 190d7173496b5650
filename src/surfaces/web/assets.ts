/**
 * The files of `slivingdoc web`'s page, keyed by URL path, for the server
 * (docs/web.md). The page is browser code under page/, bundled by Bun into
 * one script and one style sheet. A built binary carries that bundle,
 * made at build time (build/binary-options.ts defines SLIVINGDOC_WEB_ASSETS):
 * nothing is fetched or built at run time. Run from source, it is bundled
 * on the first call, once per process. Only `web` imports this module, so
 * no other command pays for the page.
 */
import { join } from "node:path";

declare const SLIVINGDOC_WEB_ASSETS: string | undefined;

export interface WebAsset {
  body: Uint8Array | string;
  type: string;
}

/** The bundled page: its script and style sheet, by file name. */
export interface PageBundle {
  "app.js": string;
  "app.css": string;
}

/** No inline script or style: the CSP allows only files from this origin. */
export const PAGE_HTML = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>slivingdoc</title>
<link rel="icon" href="data:,">
<link rel="stylesheet" href="/assets/app.css">
<script type="module" src="/assets/app.js"></script>
</head>
<body>
<div id="app"></div>
<noscript>This page needs JavaScript: slivingdoc log, show, blame and agents give the same from the command line.</noscript>
</body>
</html>
`;

/** Bundles page/main.tsx for the browser (minified, one ES module and its CSS). */
export async function bundlePage(): Promise<PageBundle> {
  const result = await Bun.build({
    entrypoints: [join(import.meta.dir, "page", "main.tsx")],
    target: "browser",
    format: "esm",
    minify: true,
    define: { "process.env.NODE_ENV": '"production"' },
  });
  if (!result.success) throw new AggregateError(result.logs, "bundling the web page failed");
  const js = result.outputs.find((o) => o.path.endsWith(".js"));
  const css = result.outputs.find((o) => o.path.endsWith(".css"));
  if (!js || !css) throw new Error("bundling the web page made no script or no style sheet");
  return { "app.js": await js.text(), "app.css": await css.text() };
}

let assets: Promise<Map<string, WebAsset>> | undefined;

export function webAssets(): Promise<Map<string, WebAsset>> {
  return (assets ??= load());
}

async function load(): Promise<Map<string, WebAsset>> {
  const page: PageBundle = typeof SLIVINGDOC_WEB_ASSETS === "string" ? JSON.parse(SLIVINGDOC_WEB_ASSETS) : await bundlePage();
  return new Map<string, WebAsset>([
    ["/", { body: PAGE_HTML, type: "text/html; charset=utf-8" }],
    ["/assets/app.js", { body: page["app.js"], type: "text/javascript; charset=utf-8" }],
    ["/assets/app.css", { body: page["app.css"], type: "text/css; charset=utf-8" }],
  ]);
}
