// SPDX-License-Identifier: BSD-3-Clause
// Bundles src/viewer.js with three.js into one classic script for the page `marionette render`
// writes, next to the page's shell (clients/viewer/src/view_json.cpp inlines both).
// Run by CMake: node build.mjs OUT_DIR  (writes OUT_DIR/viewer.js and OUT_DIR/page.html)
import { build } from 'esbuild';
import { copyFileSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const outDir = process.argv[2];
if (!outDir) {
  console.error('usage: node build.mjs OUT_DIR');
  process.exit(2);
}
const here = dirname(fileURLToPath(import.meta.url));
const out = join(outDir, 'viewer.js');
mkdirSync(outDir, { recursive: true });
await build({
  entryPoints: [join(here, 'src', 'viewer.js')],
  bundle: true,
  minify: true,
  format: 'iife',
  target: 'es2020',
  legalComments: 'eof',  // three.js's MIT notice stays in the page
  outfile: out,
  logLevel: 'warning',
});
// The script is inlined in <script>: no "</script" may appear in it.
const js = readFileSync(out, 'utf8').replace(/<\/script/gi, '<\\/script');
writeFileSync(out, js);
copyFileSync(join(here, 'src', 'page.html'), join(outDir, 'page.html'));
