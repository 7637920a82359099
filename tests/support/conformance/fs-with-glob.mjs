// node:fs with the one globSync use the suite makes (`**/NAME` under a directory, for
// its results summary); Node 22's own globSync is used where there is one.
import fs from "node:fs";
import path from "node:path";

export * from "node:fs";
export default fs;

function walk(cwd, name) {
  const found = [];
  const visit = (dir) => {
    for (const entry of fs.readdirSync(path.join(cwd, dir), { withFileTypes: true })) {
      const rel = path.join(dir, entry.name);
      if (entry.isDirectory()) visit(rel);
      else if (entry.name === name) found.push(rel);
    }
  };
  visit("");
  return found;
}

export function globSync(pattern, options = {}) {
  if (typeof fs.globSync === "function") return fs.globSync(pattern, options);
  if (!pattern.startsWith("**/")) throw new Error(`globSync shim: unsupported ${pattern}`);
  return walk(options.cwd || process.cwd(), pattern.slice(3));
}
