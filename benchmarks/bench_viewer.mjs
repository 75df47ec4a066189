// SPDX-License-Identifier: BSD-3-Clause
// How fast a `marionette render` page is in headless Chromium (software WebGL on a machine
// without a GPU): from opening the file to the first picture, and per frame while scrubbing.
//
//   node benchmarks/bench_viewer.mjs PAGE.html [WIDTHxHEIGHT] [FRAMES]
//
// Needs Chromium (/usr/bin/chromium or $MARIONETTE_CHROMIUM) and clients/viewer/web's
// node_modules (scripts/install-deps.sh).  Not part of the tests.
import { createRequire } from 'node:module';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const [page, size = '1280x720', framesText = '100'] = process.argv.slice(2);
if (!page) {
  console.error('usage: node bench_viewer.mjs PAGE.html [WIDTHxHEIGHT] [FRAMES]');
  process.exit(2);
}
const [width, height] = size.split('x').map(Number);
const frames = Number(framesText);
const here = dirname(fileURLToPath(import.meta.url));
const require = createRequire(join(here, '..', 'clients', 'viewer', 'web', 'package.json'));
const { chromium } = require('playwright-core');

const browser = await chromium.launch({
  executablePath: process.env.MARIONETTE_CHROMIUM || '/usr/bin/chromium',
  args: ['--no-sandbox', '--disable-gpu', '--enable-unsafe-swiftshader', '--use-angle=swiftshader',
    '--disable-background-networking', '--disable-component-update', '--disable-sync'],
});
const median = (v) => [...v].sort((a, b) => a - b)[Math.floor(v.length / 2)];
try {
  const loads = [];
  let tab;
  for (let i = 0; i < 5; ++i) {
    tab = await browser.newPage({ viewport: { width, height } });
    const t0 = Date.now();
    await tab.goto('file://' + resolve(page));
    await tab.waitForFunction(() => window.marionetteViewer && window.marionetteViewer.ready);
    loads.push(Date.now() - t0);
    if (i < 4) await tab.close();
  }
  // Per frame: pose at a new time and draw, timed inside the page (gl.finish-free: the
  // readPixels of one pixel waits for the frame).
  const perFrame = await tab.evaluate((n) => {
    const v = window.marionetteViewer;
    const canvas = document.querySelector('#stage canvas');
    const gl = canvas.getContext('webgl2');
    const pixel = new Uint8Array(4);
    const times = [];
    for (let i = 0; i < n; ++i) {
      const t0 = performance.now();
      v.setTime((i / n) * v.duration);
      gl.readPixels(0, 0, 1, 1, gl.RGBA, gl.UNSIGNED_BYTE, pixel);
      times.push(performance.now() - t0);
    }
    return times;
  }, frames);
  const canvasSize = await tab.evaluate(() => {
    const c = document.querySelector('#stage canvas');
    return `${c.width}x${c.height}`;
  });
  console.log(`page ${page}, viewport ${size}, canvas ${canvasSize}`);
  console.log(`open to first picture: median ${median(loads)} ms (5 loads: ${loads.join(', ')})`);
  console.log(`scrub frame (pose + draw): median ${median(perFrame).toFixed(1)} ms, ` +
    `max ${Math.max(...perFrame).toFixed(1)} ms over ${frames} frames`);
} finally {
  await browser.close();
}
