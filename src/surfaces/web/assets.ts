/** A placeholder until the page's own assets.ts: the page that loads /assets/app.js. */
export async function webAssets(): Promise<Map<string, { body: Uint8Array | string; type: string }>> {
  const html = '<!doctype html><html><head><meta charset="utf-8"><title>slivingdoc</title><link rel="stylesheet" href="/assets/app.css"><script type="module" src="/assets/app.js"></script></head><body></body></html>\n';
  return new Map([
    ["/", { body: html, type: "text/html; charset=utf-8" }],
    ["/assets/app.js", { body: "", type: "text/javascript; charset=utf-8" }],
    ["/assets/app.css", { body: "", type: "text/css; charset=utf-8" }],
  ]);
}
