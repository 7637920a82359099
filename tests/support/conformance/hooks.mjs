// A module-load hook: the suite's own bundle imports "fs" from fs-with-glob.mjs instead
// (every other module, and every other import, is left as it is).
const shim = new URL("./fs-with-glob.mjs", import.meta.url).href;

export async function load(url, context, nextLoad) {
  const loaded = await nextLoad(url, context);
  if (!url.endsWith("/@modelcontextprotocol/conformance/dist/index.js")) return loaded;
  const source = String(loaded.source).replace('}from"fs";', `}from${JSON.stringify(shim)};`);
  return { ...loaded, source };
}
