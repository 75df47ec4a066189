// SPDX-License-Identifier: BSD-3-Clause
// End-to-end test of `marionette render` in a real browser (Debian's headless Chromium, driven
// by playwright-core from clients/viewer/web/node_modules; no browser download).
//
//   node tests/viewer_browser_test.mjs BUILD_BIN_DIR WEB_DIR WORK_DIR
//
// Plans a real motion (PuppetCopter's left hand over the table's edge), renders it, opens the
// page from disk with the network off, and checks: no console errors and no request leaves the
// page; the 3-D canvas is not blank; scrubbing to two times changes the pixels where the puppet
// is; the tension plot has one series per string; play, orbit and the path toggle change what
// is drawn; the minimum-clearance button goes to the marked moment; a plan compared with another
// (`--compare`) is drawn as a ghost that can be seen; a performance (examples/wave.yaml) shows its
// targets as markers where its plan file says and plots the tracking error.  Then `--png`.
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join, resolve } from 'node:path';
import { inflateSync } from 'node:zlib';
import assert from 'node:assert/strict';

const [binDir, webDir, workDir] = process.argv.slice(2).map((p) => resolve(p));
const srcDir = resolve(webDir, '..', '..', '..');  // the repository (WEB_DIR is clients/viewer/web)
if (!workDir) {
  console.error('usage: node viewer_browser_test.mjs BUILD_BIN_DIR WEB_DIR WORK_DIR');
  process.exit(2);
}
const require = createRequire(join(webDir, 'package.json'));
const { chromium } = require('playwright-core');
const marionette = join(binDir, 'marionette');
const browserPath = process.env.MARIONETTE_CHROMIUM || '/usr/bin/chromium';

rmSync(workDir, { recursive: true, force: true });
mkdirSync(workDir, { recursive: true });
const run = (...args) => execFileSync(marionette, args, { cwd: workDir, encoding: 'utf8',
  stdio: ['ignore', 'pipe', 'pipe'] });

// ---- PNG decoding (8-bit RGB/RGBA, not interlaced: what Chromium writes) ---------------------

function decodePng(buffer) {
  assert.equal(buffer.subarray(1, 4).toString('latin1'), 'PNG', 'not a PNG');
  let offset = 8, width = 0, height = 0, channels = 0;
  const idat = [];
  while (offset < buffer.length) {
    const length = buffer.readUInt32BE(offset);
    const type = buffer.subarray(offset + 4, offset + 8).toString('latin1');
    const data = buffer.subarray(offset + 8, offset + 8 + length);
    if (type === 'IHDR') {
      width = data.readUInt32BE(0);
      height = data.readUInt32BE(4);
      assert.equal(data[8], 8, 'bit depth');
      assert.equal(data[12], 0, 'interlaced');
      channels = { 2: 3, 6: 4 }[data[9]];
      assert.ok(channels, `colour type ${data[9]}`);
    } else if (type === 'IDAT') {
      idat.push(data);
    }
    offset += 12 + length;
  }
  const raw = inflateSync(Buffer.concat(idat));
  const stride = width * channels;
  const pixels = Buffer.alloc(height * stride);
  for (let y = 0; y < height; ++y) {
    const filter = raw[y * (stride + 1)];
    const line = raw.subarray(y * (stride + 1) + 1, (y + 1) * (stride + 1));
    for (let x = 0; x < stride; ++x) {
      const a = x >= channels ? pixels[y * stride + x - channels] : 0;
      const b = y > 0 ? pixels[(y - 1) * stride + x] : 0;
      const c = x >= channels && y > 0 ? pixels[(y - 1) * stride + x - channels] : 0;
      let v = line[x];
      if (filter === 1) v += a;
      else if (filter === 2) v += b;
      else if (filter === 3) v += (a + b) >> 1;
      else if (filter === 4) {
        const p = a + b - c, pa = Math.abs(p - a), pb = Math.abs(p - b), pc = Math.abs(p - c);
        v += pa <= pb && pa <= pc ? a : pb <= pc ? b : c;
      }
      pixels[y * stride + x] = v & 255;
    }
  }
  return { width, height, channels, pixels };
}

// Variance of the luminance over an image or a rectangle of it.
function lumaStats(img, box = { x: 0, y: 0, width: img.width, height: img.height }) {
  let n = 0, sum = 0, sum2 = 0;
  for (let y = box.y; y < box.y + box.height; ++y)
    for (let x = box.x; x < box.x + box.width; ++x) {
      const o = (y * img.width + x) * img.channels;
      const l = 0.299 * img.pixels[o] + 0.587 * img.pixels[o + 1] + 0.114 * img.pixels[o + 2];
      ++n; sum += l; sum2 += l * l;
    }
  const mean = sum / n;
  return { mean, variance: sum2 / n - mean * mean };
}

// Share of the pixels in `box` whose colour differs by more than 24 (of 255) in some channel.
function changedShare(a, b, box) {
  let changed = 0;
  for (let y = box.y; y < box.y + box.height; ++y)
    for (let x = box.x; x < box.x + box.width; ++x) {
      const o = (y * a.width + x) * a.channels;
      for (let c = 0; c < 3; ++c)
        if (Math.abs(a.pixels[o + c] - b.pixels[o + c]) > 24) { ++changed; break; }
    }
  return changed / (box.width * box.height);
}

// The text of each plot that overlaps another of its texts or leaves its plot, as messages.
async function crowdedPlotLabels(page) {
  return page.evaluate(() => {
    const bad = [];
    for (const svg of document.querySelectorAll('.plot svg')) {
      const frame = svg.getBoundingClientRect();
      const texts = [...svg.querySelectorAll('text')].map((t) => ({ text: t.textContent,
        r: t.getBoundingClientRect() }));
      const id = svg.parentElement.id;
      for (const { text, r } of texts)
        if (r.left < frame.left - 0.5 || r.right > frame.right + 0.5 ||
            r.top < frame.top - 0.5 || r.bottom > frame.bottom + 0.5)
          bad.push(`${id}: '${text}' outside its plot`);
      for (let i = 0; i < texts.length; ++i)
        for (let j = i + 1; j < texts.length; ++j) {
          const a = texts[i].r, b = texts[j].r;
          if (a.left < b.right && b.left < a.right && a.top < b.bottom && b.top < a.bottom)
            bad.push(`${id}: '${texts[i].text}' on '${texts[j].text}'`);
        }
    }
    return bad;
  });
}

const normalized = (v) => { const n = Math.hypot(...v); return v.map((x) => x / n); };
const FRONT = normalized([0, -1, 0.25]), SIDE = normalized([1, 0, 0.25]);

function union(a, b) {
  const x = Math.min(a.x, b.x), y = Math.min(a.y, b.y);
  return { x, y, width: Math.max(a.x + a.width, b.x + b.width) - x,
    height: Math.max(a.y + a.height, b.y + b.height) - y };
}

// ---- The plan and its page ------------------------------------------------------------------

run('plan', '--model', 'puppetcopter', '--scene', 'table', '--planner', 'rrt', '--goal',
  'point:hand_l=0.05,0.24,0.40;radius=0.04', '--seed', '1', '--time-limit', '30', '--out',
  'plan.json', '--quiet');
const plan = JSON.parse(readFileSync(join(workDir, 'plan.json'), 'utf8'));
run('render', 'plan.json', '--out', 'plan.html');
const models = JSON.parse(run('models', '--json'));
const puppet = models.find((m) => m.name === 'puppetcopter');
assert.ok(puppet.strings.length >= 2, 'puppetcopter has strings');

const browser = await chromium.launch({
  executablePath: browserPath,
  headless: true,
  args: ['--no-sandbox', '--disable-gpu', '--enable-unsafe-swiftshader', '--use-angle=swiftshader',
    '--disable-background-networking', '--disable-component-update', '--disable-sync',
    '--no-first-run', '--disable-quic'],
});
let failures = 0;
const check = async (name, body) => {
  try {
    await body();
    console.log(`ok   ${name}`);
  } catch (e) {
    ++failures;
    console.log(`FAIL ${name}\n     ${e.stack || e}`);
  }
};

try {
  const context = await browser.newContext({ viewport: { width: 1100, height: 900 },
    deviceScaleFactor: 1, offline: true });
  const outside = [];
  // Nothing may leave the page: every request but the file itself (and data:/blob:) is refused
  // and recorded.
  await context.route('**/*', (route) => {
    const url = route.request().url();
    if (url.startsWith('file:') || url.startsWith('data:') || url.startsWith('blob:'))
      return route.continue();
    outside.push(url);
    return route.abort();
  });
  const page = await context.newPage();
  const consoleErrors = [];
  page.on('console', (msg) => { if (msg.type() === 'error') consoleErrors.push(msg.text()); });
  page.on('pageerror', (err) => consoleErrors.push(String(err)));
  page.on('request', (req) => {
    const url = req.url();
    if (!url.startsWith('file:') && !url.startsWith('data:') && !url.startsWith('blob:'))
      outside.push(url);
  });
  await page.goto('file://' + join(workDir, 'plan.html'));
  await page.waitForFunction(() => window.marionetteViewer && window.marionetteViewer.ready,
    null, { timeout: 30000 });
  const canvas = page.locator('#stage canvas');
  const shot = async () => decodePng(await canvas.screenshot());
  const box = () => page.evaluate(() => window.marionetteViewer.puppetScreenBox());
  // Scrubbing as a user does: the timeline's range input.
  const scrubTo = async (t) => {
    await page.locator('#timeline').fill(String(t));
    await page.evaluate(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r))));
  };

  await check('the page loads with no console errors', async () => {
    assert.deepEqual(consoleErrors, []);
    assert.equal(await page.title(), `puppetcopter in table: ${plan.goal}`);
    const duration = await page.evaluate(() => window.marionetteViewer.duration);
    assert.ok(Math.abs(duration - plan.inputs.duration_s) < 1e-9, `duration ${duration}`);
  });

  await check('the canvas is not blank', async () => {
    const img = await shot();
    assert.ok(img.width > 500 && img.height > 300, `canvas ${img.width}x${img.height}`);
    const { variance } = lumaStats(img);
    assert.ok(variance > 100, `luminance variance ${variance.toFixed(1)}`);
  });

  await check('scrubbing to two times changes the pixels where the puppet is', async () => {
    await scrubTo(0);
    const a = await shot(), boxA = await box();
    await scrubTo(plan.inputs.duration_s);
    const b = await shot(), boxB = await box();
    assert.equal(await page.locator('#time').textContent(),
      `${plan.inputs.duration_s.toFixed(2)} / ${plan.inputs.duration_s.toFixed(2)} s`);
    const region = union(boxA, boxB);
    assert.ok(region.width > 20 && region.height > 20, `puppet box ${JSON.stringify(region)}`);
    const inside = changedShare(a, b, region);
    assert.ok(inside > 0.03, `only ${(100 * inside).toFixed(2)}% of the puppet's pixels changed`);
    // The puppet, not the camera, moved: the corner of the view away from it stays put.
    const corner = { x: 0, y: a.height - 60, width: 60, height: 60 };
    assert.ok(changedShare(a, b, corner) < 0.01, 'the stage moved');
  });

  await check('the tension plot has one series per string', async () => {
    const names = await page.locator('#plot-tensions path.series')
      .evaluateAll((paths) => paths.map((p) => p.getAttribute('data-series')));
    assert.deepEqual(names, puppet.strings);
    const inputs = await page.locator('#plot-inputs path.series').count();
    assert.equal(inputs, puppet.kinematic.length);
    assert.equal(await page.locator('#plot-clearance path.series').count(), 2);
  });

  await check('strings are drawn slack exactly when the plan says they carry nothing', async () => {
    const tensions = plan.predicted.tensions_N;
    let slackSeen = 0, tautSeen = 0;
    for (const k of [0, 20, 40, 60, 80, 100, tensions.length - 1]) {
      await page.evaluate((t) => window.marionetteViewer.setTime(t), k / plan.inputs.rate_hz);
      const drawn = await page.evaluate(() => window.marionetteViewer.strings());
      assert.deepEqual(drawn.map((d) => d.name), puppet.strings);
      drawn.forEach((d, s) => {
        const T = tensions[k][s];
        if (T > 0.05) { assert.equal(d.slack, false, `${d.name} pulls ${T} N at ${k}`); ++tautSeen; }
        if (T === 0) { assert.equal(d.slack, true, `${d.name} carries nothing at ${k}`); ++slackSeen; }
        assert.equal(d.slack, d.color === '#868e96', `${d.name}: grey if and only if slack`);
      });
    }
    assert.ok(slackSeen > 0 && tautSeen > 0, `slack ${slackSeen}, taut ${tautSeen}`);
  });

  await check('the plot cursors follow the timeline', async () => {
    const cursorX = () => page.locator('#plot-tensions line.cursor').getAttribute('x1').then(Number);
    await scrubTo(0);
    const x0 = await cursorX();
    await scrubTo(plan.inputs.duration_s / 2);
    const x1 = await cursorX();
    await scrubTo(plan.inputs.duration_s);
    const x2 = await cursorX();
    assert.ok(x0 < x1 && x1 < x2, `cursor at ${x0}, ${x1}, ${x2}`);
    assert.ok(Math.abs((x1 - x0) - (x2 - x1)) < 1.5, 'cursor not linear in time');
  });

  await check('the minimum clearance is marked and can be jumped to', async () => {
    const label = await page.locator('#plot-clearance text.min-label').first().textContent();
    const cm = (100 * plan.min_clearance_m).toFixed(1);
    assert.ok(label.startsWith(`min ${cm} cm at `), `label "${label}" (plan: ${cm} cm)`);
    await page.locator('#min-clearance').click();
    const t = await page.evaluate(() => window.marionetteViewer.time());
    const k = Math.round(t * plan.inputs.rate_hz);
    const c = plan.predicted.clearance_m;
    assert.ok(Math.abs(c[k] - plan.min_clearance_m) < 1e-9, `clearance ${c[k]} at ${t} s`);
    assert.ok(label.endsWith(`at ${t.toFixed(2)} s`), label);
  });

  await check('play advances time; pause stops it', async () => {
    await scrubTo(0);
    await page.locator('#speed').selectOption('0.25');
    const started = Date.now();
    await page.locator('#play').click();
    await page.waitForTimeout(600);
    await page.locator('#play').click();
    const elapsed = (Date.now() - started) / 1000;
    const t1 = await page.evaluate(() => window.marionetteViewer.time());
    // At x0.25 the motion's clock runs at a quarter of the wall clock (at most: software
    // rendering may drop frames, never add time).
    assert.ok(t1 > 0.02 && t1 <= 0.25 * elapsed + 0.03,
      `t = ${t1.toFixed(3)} s after ${elapsed.toFixed(3)} s of wall time at x0.25`);
    await page.waitForTimeout(200);
    assert.equal(await page.evaluate(() => window.marionetteViewer.time()), t1);
    assert.equal(await page.locator('#play').textContent(), 'Play');
  });

  await check('the arrow keys step one sample', async () => {
    await scrubTo(0.5);
    await page.keyboard.press('ArrowRight');
    await page.keyboard.press('ArrowRight');
    await page.keyboard.press('ArrowLeft');
    const t = await page.evaluate(() => window.marionetteViewer.time());
    assert.ok(Math.abs(t - (0.5 + 1 / plan.inputs.rate_hz)) < 1e-9, `t = ${t}`);
  });

  await check('orbiting the camera changes the view', async () => {
    await scrubTo(0);
    const before = await shot();
    const r = await canvas.boundingBox();
    await page.mouse.move(r.x + r.width / 2, r.y + r.height / 2);
    await page.mouse.down();
    await page.mouse.move(r.x + r.width / 2 + 150, r.y + r.height / 2 + 20, { steps: 8 });
    await page.mouse.up();
    await page.evaluate(() => new Promise((res) => requestAnimationFrame(() => requestAnimationFrame(res))));
    const after = await shot();
    const all = { x: 0, y: 0, width: after.width, height: after.height };
    assert.ok(changedShare(before, after, all) > 0.05, 'orbit did not change the view');
    await page.locator('#reset-camera').click();
    const reset = await shot();
    assert.ok(changedShare(before, reset, all) < 0.005, 'reset view is not the first view');
  });

  await check('the path toggle shows and hides the traced points', async () => {
    assert.ok(await page.locator('#paths').isChecked(), 'a point goal traces its point');
    const on = await shot();
    await page.locator('#paths').uncheck();
    await page.evaluate(() => new Promise((res) => requestAnimationFrame(() => requestAnimationFrame(res))));
    const off = await shot();
    const all = { x: 0, y: 0, width: on.width, height: on.height };
    const share = changedShare(on, off, all);
    // (the optimized plan's smooth hand path covers ~0.05 % of the page; a still page, 0)
    assert.ok(share > 0.0002, `hiding the path changed ${(100 * share).toFixed(3)}% of pixels`);
  });

  await check('no request left the page and no error was logged', async () => {
    assert.deepEqual(outside, []);
    assert.deepEqual(consoleErrors, []);
  });
  // Meshes, a rest pose (one sample: nothing to play), and the same rules.
  await check('the puppet fills the view by default; --fit motion and --camera change it', async () => {
    // The puppet's links over the motion, framed: its box spans most of the canvas's height (or
    // width), where framing everything that moves (strings up to the rig) leaves it smaller.
    const framed = async (...flags) => {
      run('render', 'plan.json', ...flags, '--out', 'framed.html');
      await page.goto('file://' + join(workDir, 'framed.html'));
      await page.waitForFunction(() => window.marionetteViewer && window.marionetteViewer.ready);
      const c = await canvas.boundingBox();
      const b = await page.evaluate(() => window.marionetteViewer.puppetScreenBox());
      const direction = await page.evaluate(() => window.marionetteViewer.cameraDirection());
      return { fill: Math.max(b.height / c.height, b.width / c.width), direction };
    };
    const puppetFit = await framed();
    const motionFit = await framed('--fit', 'motion');
    assert.ok(puppetFit.fill > 0.6, `the puppet fills ${puppetFit.fill.toFixed(2)} of the view`);
    assert.ok(puppetFit.fill > 1.3 * motionFit.fill,
      `puppet fit ${puppetFit.fill.toFixed(2)}, motion fit ${motionFit.fill.toFixed(2)}`);
    // The camera looks from where it is told (unit direction from the target to the camera): by
    // default from the audience (front, -y, a little above), `side` from the audience's right.
    for (const [flags, want] of [[[], FRONT], [['--camera', 'front'], FRONT],
      [['--camera', 'side'], SIDE], [['--camera', '0,-3,4'], [0, -0.6, 0.8]]]) {
      const { direction } = await framed(...flags);
      for (let i = 0; i < 3; ++i)
        assert.ok(Math.abs(direction[i] - want[i]) < 1e-6, `${flags}: ${direction}`);
    }
    const top = await framed('--camera', 'top');
    assert.ok(top.direction[2] > 0.999, `--camera top: ${top.direction}`);
    assert.deepEqual(consoleErrors, []);
  });

  await check('a reach page draws its clouds, one colour per point, as many dots as found',
    async () => {
      const points = ['hand_r', 'foot_l', 'head_top'];
      run('reach', '--model', 'puppetcopter', '--point', points.join(','), '--poses', '30',
        '--swings', '3', '--out', 'reach.html', '--json', 'reach.json');
      const reach = JSON.parse(readFileSync(join(workDir, 'reach.json'), 'utf8'));
      consoleErrors.length = 0;
      await page.goto('file://' + join(workDir, 'reach.html'));
      await page.waitForFunction(() => window.marionetteViewer && window.marionetteViewer.ready);
      assert.deepEqual(consoleErrors, []);
      const clouds = await page.evaluate(() => window.marionetteViewer.clouds());
      assert.deepEqual(clouds.map(({ name, point, count }) => ({ name, point, count })),
        points.flatMap((p) => [
          { name: p + ' held', point: p, count: reach.points[p].held.points_m.length },
          { name: p + ' swung', point: p, count: reach.points[p].swung.points_m.length }]));
      // A point's two clouds share its colour, the points' colours differ, and its name in the
      // legend and in "paths of" wears it.
      const colours = points.map((p) => clouds.filter((c) => c.point === p).map((c) => c.color));
      for (const [held, swung] of colours) assert.equal(held, swung);
      assert.equal(new Set(colours.map(([c]) => c)).size, points.length, `${colours}`);
      const legend = await page.locator('#legend label.cloud').evaluateAll((labels) =>
        labels.map((l) => [l.dataset.point, getComputedStyle(l.querySelector('i'))
          .backgroundColor, l.textContent]));
      const rgb = (hex) => `rgb(${[1, 3, 5].map((i) => parseInt(hex.slice(i, i + 2), 16))
        .join(', ')})`;
      assert.deepEqual(legend.map(([p, c]) => [p, c]),
        points.map((p, k) => [p, rgb(colours[k][0])]));
      assert.ok(legend[0][2].includes(`held (${clouds[0].count})`), legend[0][2]);
      const pathLabels = await page.locator('#points label').evaluateAll((labels) =>
        Object.fromEntries(labels.map((l) => [l.textContent.trim(), getComputedStyle(l).color])));
      points.forEach((p, k) => assert.equal(pathLabels[p], rgb(colours[k][0]), p));
      // Its box hides a point's clouds.
      await page.locator('#legend label.cloud input').first().uncheck();
      const shown = (await page.evaluate(() => window.marionetteViewer.clouds()))
        .map((c) => c.visible);
      assert.deepEqual(shown, [false, false, true, true, true, true]);
    });

  await check('a rest pose among the living room\'s meshes draws with no error', async () => {
    run('render', '--model', 'puppetcopter', '--scene', 'living-room', '--out', 'room.html');
    consoleErrors.length = 0;
    await page.goto('file://' + join(workDir, 'room.html'));
    await page.waitForFunction(() => window.marionetteViewer && window.marionetteViewer.ready);
    assert.deepEqual(consoleErrors, []);
    assert.equal(await page.evaluate(() => window.marionetteViewer.sampleCount), 1);
    assert.ok(await page.locator('#play').isDisabled());
    const { variance } = lumaStats(await shot());
    assert.ok(variance > 100, `luminance variance ${variance.toFixed(1)}`);
    assert.deepEqual(outside, []);
  });
  // Two plans compared: a raw planar-arm plan and its optimized version, the second a ghost.
  await check('a compared plan is a translucent ghost, dashed in the plots, named in the header',
    async () => {
      run('plan', '--model', 'planar-arm', '--goal', 'q:theta1=-0.2', '--seed', '1', '--out',
        'raw.json', '--quiet');
      run('optimize', 'raw.json', '--out', 'better.json', '--quiet');
      run('render', 'raw.json', '--compare', 'better.json', '--out', 'cmp.html');
      const [raw, better] = ['raw.json', 'better.json'].map((f) =>
        JSON.parse(readFileSync(join(workDir, f), 'utf8')));
      consoleErrors.length = 0;
      await page.goto('file://' + join(workDir, 'cmp.html'));
      await page.waitForFunction(() => window.marionetteViewer && window.marionetteViewer.ready);
      assert.deepEqual(consoleErrors, []);
      const viewer = await page.evaluate(() => ({ duration: window.marionetteViewer.duration,
        name: window.marionetteViewer.compareName, opacity: window.marionetteViewer.ghostOpacity }));
      assert.equal(viewer.name, 'better.json');
      assert.ok(Math.abs(viewer.duration - Math.max(raw.inputs.duration_s,
        better.inputs.duration_s)) < 1e-9, `duration ${viewer.duration}`);
      // The ghost's strings are drawn at its opacity, coloured like the shown plan's.
      const ghostStrings = await page.evaluate(() => window.marionetteViewer.ghostStrings());
      assert.equal(ghostStrings.length, 1);
      assert.equal(ghostStrings[0].opacity, viewer.opacity);
      assert.ok(viewer.opacity > 0.2 && viewer.opacity < 0.5, `opacity ${viewer.opacity}`);
      // Each plot: the shown plan's series solid, the compared plan's dashed; the legend names
      // both files.
      const series = await page.locator('#plot-tensions path.series').evaluateAll((paths) =>
        paths.map((p) => [p.getAttribute('data-plan'), p.getAttribute('stroke-dasharray')]));
      assert.deepEqual(series, [['raw.json', null], ['better.json', '5 3']]);
      const legend = await page.locator('#plot-tensions .legend').textContent();
      assert.ok(legend.includes('raw.json') && legend.includes('better.json'), legend);
      // The header: one row per plan with its own quality figures.
      const rows = await page.locator('#comparison tr').evaluateAll((trs) =>
        trs.map((tr) => [...tr.cells].map((c) => c.textContent)));
      const column = rows[0].indexOf('string catches');
      assert.ok(column > 0, `header ${rows[0]}`);
      assert.deepEqual(rows.slice(1).map((r) => [r[0], r[column]]),
        [['raw.json', String(raw.quality.string_catches)],
          ['better.json (ghost)', String(better.quality.string_catches)]]);
      // The ghost is seen: hiding it changes the pixels where it is.
      await page.evaluate((t) => window.marionetteViewer.setTime(t), raw.inputs.duration_s / 2);
      const region = await page.evaluate(() => window.marionetteViewer.ghostScreenBox());
      assert.ok(region.width > 10 && region.height > 10, `ghost box ${JSON.stringify(region)}`);
      const shown = await shot();
      await page.evaluate(() => window.marionetteViewer.setGhostVisible(false));
      const hidden = await shot();
      const share = changedShare(shown, hidden, region);
      assert.ok(share > 0.02, `hiding the ghost changed ${(100 * share).toFixed(2)}% of its box`);
      assert.deepEqual(outside, []);
    });
  await context.close();

  // ---- A performance -------------------------------------------------------------------------

  // A page of workDir opened in a fresh offline context, ready and with no error, given to body.
  const onPage = async (file, body) => {
    const context = await browser.newContext({ viewport: { width: 1100, height: 900 },
      deviceScaleFactor: 1, offline: true });
    try {
      const page = await context.newPage();
      const errors = [];
      page.on('pageerror', (err) => errors.push(String(err)));
      await page.goto('file://' + join(workDir, file));
      await page.waitForFunction(() => window.marionetteViewer && window.marionetteViewer.ready,
        null, { timeout: 30000 });
      assert.deepEqual(errors, []);
      await body(page);
    } finally {
      await context.close();
    }
  };
  await check('a performance shows its targets as markers and plots the tracking error', async () => {
    // Exit 0 or 4 (exact or approximate: the kinematic step alone may swing into itself).
    const p = spawnSync(marionette, ['perform', '--model', 'puppetcopter', '--scene',
      'living-room', '--keyframes', join(srcDir, 'examples', 'wave.yaml'), '--kinematic-only',
      '--out', 'wave.json', '--quiet'], { cwd: workDir, encoding: 'utf8' });
    assert.ok(p.status === 0 || p.status === 4, `perform exited ${p.status}: ${p.stderr}`);
    const wave = JSON.parse(readFileSync(join(workDir, 'wave.json'), 'utf8'));
    run('render', 'wave.json', '--out', 'wave.html');
    await onPage('wave.html', async (page) => {
      // From the audience the sideboard stands before the puppet: it is drawn cut away.
      const cut = await page.evaluate(() => window.marionetteViewer.cutAway());
      assert.ok(cut.length >= 1, 'nothing between the camera and the puppet is cut away');
      assert.equal(await page.locator('#plot-tracking path.series').count(), 1);
      // At 2 s the marker is where the plan's target is; during the hold after the end, hidden.
      const i = Math.round(2.0 * wave.inputs.rate_hz);
      await page.evaluate(() => window.marionetteViewer.setTime(2.0));
      const [target] = await page.evaluate(() => window.marionetteViewer.performanceTargets());
      assert.equal(target.name, 'hand_r');
      assert.ok(target.visible, 'the target marker is hidden at 2 s');
      target.position.forEach((x, k) => assert.ok(Math.abs(x - wave.targets.samples[i][k]) < 1e-6,
        `marker ${target.position} vs target ${wave.targets.samples[i].slice(0, 3)}`));
    });
  });
  await check('a plan that sets a mass down draws the floor\'s force on it and plots it',
    async () => {
      // The suspended mass over a floor raised to 10 cm, set down on it at x = 0.3 m.
      writeFileSync(join(workDir, 'raised.yaml'), 'name: raised-floor\nobstacles:\n' +
        '  - {name: floor, plane: {normal: [0, 0, 1], offset: 0.1}}\n');
      run('plan', '--model', 'suspended-mass', '--scene', 'raised.yaml', '--planner', 'kpiece',
        '--seed', '2', '--goal', 'point:mass=0.3,0,0.12;radius=0.01;at-rest',
        '--max-propagations', '400000',
        '--raw', '--out', 'down.json', '--quiet');
      const down = JSON.parse(readFileSync(join(workDir, 'down.json'), 'utf8'));
      assert.deepEqual(down.predicted.contact_names, ['floor/mass_0']);
      run('render', 'down.json', '--scene', 'raised.yaml', '--out', 'down.html');
      await onPage('down.html', async (page) => {
        assert.equal(await page.locator('#plot-contacts path.series').count(), 1);
        await page.evaluate(() => window.marionetteViewer.setTime(0));
        assert.deepEqual(await page.evaluate(() => window.marionetteViewer.contacts()), []);
        const end = down.inputs.duration_s;
        await page.evaluate((t) => window.marionetteViewer.setTime(t), end);
        const [arrow] = await page.evaluate(() => window.marionetteViewer.contacts());
        assert.equal(arrow.name, 'floor/mass_0');
        // On the floor under the mass, at rest where it was set down; the largest force's length.
        assert.ok(Math.abs(arrow.at[2] - 0.1) < 1e-3, `at ${arrow.at}`);
        assert.ok(Math.abs(arrow.at[0] - 0.3) < 0.011, `at ${arrow.at}`);
        assert.ok(arrow.length > 0.02 && arrow.length <= 0.12 + 1e-9, `length ${arrow.length}`);
      });
    });
  // ---- What a designer reads: the view, its messages and the plots, at 900 px and in stills ----

  await check('at 900 px and in stills the puppet fills the view, messages stand beside it and ' +
    'no plot label overlaps another', async () => {
    // A plan whose outcome has shortfalls to list: the raw search (no optimizer) of the quick
    // start's goal, into the table.
    const raw = spawnSync(marionette, ['plan', '--model', 'puppetcopter', '--scene', 'table',
      '--planner', 'rrt', '--goal', 'point:hand_l=0.05,0.24,0.40;radius=0.04', '--seed', '1',
      '--raw', '--out', 'search.json', '--quiet'], { cwd: workDir, encoding: 'utf8' });
    assert.ok(raw.status === 0 || raw.status === 4, `plan exited ${raw.status}: ${raw.stderr}`);
    const pages = [['plan.html', 900, 900, ''], ['wave.html', 900, 900, ''],
      ['search.html', 1000, 800, ''], ['plan.html', 1280, 720, '?still=1'],
      ['wave.html', 1280, 720, '?still=1'], ['search.html', 640, 360, '?still=1']];
    run('render', 'search.json', '--out', 'search.html');
    for (const [file, width, height, query] of pages) {
      const context = await browser.newContext({ viewport: { width, height }, deviceScaleFactor: 1,
        offline: true });
      try {
        const page = await context.newPage();
        await page.goto('file://' + join(workDir, file) + query);
        await page.waitForFunction(() => window.marionetteViewer && window.marionetteViewer.ready);
        await page.evaluate(() => new Promise((r) => requestAnimationFrame(() =>
          requestAnimationFrame(r))));
        const where = `${file}${query} at ${width}x${height}`;
        const c = await page.locator('#stage canvas').boundingBox();
        const b = await page.evaluate(() => window.marionetteViewer.puppetScreenBox());
        const fill = Math.max(b.height / c.height, b.width / c.width);
        assert.ok(fill >= 0.6, `${where}: the puppet fills ${fill.toFixed(2)} of the view`);
        // Nothing but the one-line readout lies over the view; the header holds no message.
        for (const id of ['#side', '#messages', '#legend', 'header']) {
          const r = await page.locator(id).boundingBox();
          if (!r || !r.width || !r.height) continue;
          assert.ok(r.x >= c.x + c.width - 0.5 || r.y >= c.y + c.height - 0.5 ||
            r.y + r.height <= c.y + 0.5, `${where}: ${id} ${JSON.stringify(r)} over the view ` +
            JSON.stringify(c));
        }
        assert.equal(await page.locator('header .bad').count(), 0,
          `${where}: a message in the header`);
        assert.deepEqual(await crowdedPlotLabels(page), [], where);
        if (file === 'search.html' && !query) {
          const items = await page.locator('#messages li').allTextContents();
          const search = JSON.parse(readFileSync(join(workDir, 'search.json'), 'utf8'));
          if (search.outcome !== 'exact')
            assert.ok(items.length >= 1, `${where}: no message beside the view`);
        }
      } finally {
        await context.close();
      }
    }
  });
} finally {
  await browser.close();
}

// ---- --png --------------------------------------------------------------------------------

await check('--png makes a still of the requested size that is not blank', async () => {
  run('render', 'plan.json', '--png', 'still.png', '--size', '640x360', '--at', '1.0');
  const img = decodePng(readFileSync(join(workDir, 'still.png')));
  assert.equal(img.width, 640);
  assert.equal(img.height, 360);
  const { variance } = lumaStats(img);
  assert.ok(variance > 100, `luminance variance ${variance.toFixed(1)}`);
  // The still at another time differs (the same page, posed elsewhere).
  run('render', 'plan.json', '--png', 'still2.png', '--size', '640x360', '--at', '0');
  const other = decodePng(readFileSync(join(workDir, 'still2.png')));
  const all = { x: 0, y: 0, width: 640, height: 360 };
  assert.ok(changedShare(img, other, all) > 0.002, 'stills at 0 s and 1 s are the same');
});

// (That the ghost is seen is checked on the page above; here, that the still is the compared page.)
await check('--png works with --compare', async () => {
  const still = (name, ...compare) => {
    run('render', 'raw.json', ...compare, '--png', name, '--size', '640x360', '--at', '0.7');
    return decodePng(readFileSync(join(workDir, name)));
  };
  const alone = still('raw.png'), both = still('cmp.png', '--compare', 'better.json');
  assert.equal(both.width, 640);
  assert.equal(both.height, 360);
  const all = { x: 0, y: 0, width: 640, height: 360 };
  assert.ok(changedShare(alone, both, all) > 0.002, 'the still with --compare is the plain one');
});

if (failures) {
  console.log(`${failures} check(s) failed`);
  process.exit(1);
}
console.log('all browser checks passed');
