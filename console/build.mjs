// `make console`: console/src → server/blitz/console/ (index.html, console.js,
// console.css, icon.svg, console.js.LEGAL.txt), which `blitz serve` serves at `/`.
//
// Reproducible: pinned esbuild (package-lock.json), no timestamps, no source maps, no
// absolute paths; the same sources give the same bytes, and a test rebuilds the bundle
// and fails when the committed one differs.

import { copyFileSync, mkdirSync, readdirSync, rmSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import * as esbuild from "esbuild";

const here = dirname(fileURLToPath(import.meta.url));
const out = join(here, "..", "server", "blitz", "console");

rmSync(out, { recursive: true, force: true });
mkdirSync(out, { recursive: true });
await esbuild.build({
  absWorkingDir: here,
  entryPoints: { console: "src/main.tsx" },
  outdir: out,
  bundle: true,
  format: "iife",
  platform: "browser",
  target: ["es2022", "chrome111", "firefox111", "safari16.4"],
  minify: true,
  sourcemap: false,
  legalComments: "external",
  charset: "utf8",
  jsx: "automatic",
  jsxImportSource: "preact",
  // blitz-client is compiled from its TypeScript source, not from a dist/ build.
  conditions: ["source"],
  logLevel: "warning",
});
for (const name of readdirSync(join(here, "static"))) {
  copyFileSync(join(here, "static", name), join(out, name));
}
