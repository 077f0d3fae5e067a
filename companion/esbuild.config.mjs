// Builds the plugin (main.js, what Obsidian loads) and the routes module alone
// (build/routes.cjs, what the tests load without Obsidian).
import * as esbuild from "esbuild";

const common = {
  bundle: true,
  format: "cjs",
  target: "es2020",
  platform: "node",
  logLevel: "warning",
  external: ["obsidian", "electron"],
};

await esbuild.build({ ...common, entryPoints: ["src/main.ts"], outfile: "main.js" });
await esbuild.build({ ...common, entryPoints: ["src/routes.ts"], outfile: "build/routes.cjs" });
