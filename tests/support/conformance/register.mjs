// Loaded with `node --import` before the suite: the suite imports fs.globSync, which
// Node has from 22 on; Debian's Node is 20. hooks.mjs hands the suite an fs that has it.
import { register } from "node:module";

register("./hooks.mjs", import.meta.url);
