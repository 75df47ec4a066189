// The viewer page of `marionette render`: draws a view document (the JSON in
// <script id="marionette-view">, written by clients/viewer/src/view_json.cpp) with three.js --
// the puppet's collision shapes, its strings coloured by tension (slack ones dashed and sagging),
// the rig points, the stage -- and plots its inputs, tensions and clearance against time under a
// timeline.  All physics comes from the document; this file only interpolates between samples
// and draws.
//
// URL parameters: ?at=T (seconds) starts there; ?still=1 lays the page out as one still image
// (no controls) for `marionette render --png`.
//
// For tests, window.marionetteViewer exposes: ready, duration, sampleCount, setTime(t), time(),
// puppetScreenBox() (the puppet's bounding rectangle in canvas pixels), strings() (each one's
// slack flag and colour as drawn), render().

import * as THREE from 'three';
import { OrbitControls } from 'three/examples/jsm/controls/OrbitControls.js';
import { Line2 } from 'three/examples/jsm/lines/Line2.js';
import { LineGeometry } from 'three/examples/jsm/lines/LineGeometry.js';
import { LineMaterial } from 'three/examples/jsm/lines/LineMaterial.js';

// Named points' markers and paths: vivid, to stand out against the stage's greys.
const POINT_COLORS = ['#e64980', '#7048e8', '#1c7ed6', '#0ca678', '#f76707', '#ae3ec9',
  '#1098ad', '#74b816', '#f59f00', '#d6336c', '#4263eb', '#37b24d'];
const SERIES_COLORS = ['#1f77b4', '#ff7f0e', '#2ca02c', '#d62728', '#9467bd', '#8c564b',
  '#e377c2', '#7f7f7f', '#bcbd22', '#17becf'];
const TENSION_STOPS = [[0, '#3b5bdb'], [0.33, '#2fb344'], [0.66, '#f59f00'], [1, '#e03131']];
const SLACK_COLOR = new THREE.Color('#868e96');
const SAG_POINTS = 17;  // vertices of a string's polyline (a slack string sags)
const SVG_NS = 'http://www.w3.org/2000/svg';

const params = new URLSearchParams(window.location.search);
const still = params.get('still') === '1';

function fail(message) {
  const box = document.getElementById('error');
  box.style.display = 'block';
  box.textContent = message;
  throw new Error(message);
}

const view = (() => {
  const node = document.getElementById('marionette-view');
  try {
    return JSON.parse(node.textContent);
  } catch (e) {
    return fail('the view data of this page does not parse: ' + e.message);
  }
})();
if (view.format !== 'marionette-view') fail('not a marionette view document');

const N = view.t.length;
const duration = N > 1 ? view.t[N - 1] : 0;

// ---- Sampling: linear between samples (poses: lerp + slerp) ----------------------------------

function sampleAt(t) {
  if (N <= 1) return { i: 0, j: 0, f: 0 };
  const x = Math.min(Math.max(t, 0), duration) * view.rate_hz;
  const i = Math.min(Math.floor(x), N - 2);
  return { i, j: i + 1, f: Math.min(Math.max(x - i, 0), 1) };
}
const lerp = (a, b, f) => a + (b - a) * f;
function lerpRow(rows, s, out) {
  const a = rows[s.i], b = rows[s.j];
  for (let k = 0; k < a.length; ++k) out[k] = lerp(a[k], b[k], s.f);
  return out;
}

// ---- three.js scene ------------------------------------------------------------------------

THREE.Object3D.DEFAULT_UP.set(0, 0, 1);  // stage coordinates: z up, the floor at z = 0
const stageDiv = document.getElementById('stage');
const renderer = new THREE.WebGLRenderer({ antialias: true, preserveDrawingBuffer: true });
renderer.setPixelRatio(still ? 1 : Math.min(window.devicePixelRatio || 1, 2));
renderer.shadowMap.enabled = true;
renderer.shadowMap.type = THREE.PCFShadowMap;
stageDiv.prepend(renderer.domElement);

const scene = new THREE.Scene();
scene.background = new THREE.Color('#e9edf1');
const camera = new THREE.PerspectiveCamera(40, 1, 0.01, 200);
camera.up.set(0, 0, 1);
const controls = new OrbitControls(camera, renderer.domElement);
controls.enableDamping = false;

scene.add(new THREE.HemisphereLight('#ffffff', '#8a8f96', 1.6));
const sun = new THREE.DirectionalLight('#ffffff', 1.8);
sun.castShadow = true;
sun.shadow.mapSize.set(2048, 2048);
scene.add(sun, sun.target);

const quat = (p) => new THREE.Quaternion(p[3], p[4], p[5], p[6]);
const vec = (p, o = 0) => new THREE.Vector3(p[o], p[o + 1], p[o + 2]);

function shapeGeometry(shape) {
  let g;
  switch (shape.type) {
    case 'sphere': g = new THREE.SphereGeometry(shape.radius, 32, 16); break;
    case 'box': g = new THREE.BoxGeometry(shape.size[0], shape.size[1], shape.size[2]); break;
    case 'capsule':  // three.js capsules and cylinders lie along y; FCL's along z
      g = new THREE.CapsuleGeometry(shape.radius, shape.length, 8, 24).rotateX(Math.PI / 2);
      break;
    case 'cylinder':
      g = new THREE.CylinderGeometry(shape.radius, shape.radius, shape.length, 32)
        .rotateX(Math.PI / 2);
      break;
    case 'mesh': {
      g = new THREE.BufferGeometry();
      g.setAttribute('position', new THREE.Float32BufferAttribute(shape.vertices, 3));
      g.setIndex(shape.triangles);
      g = g.toNonIndexed();  // flat faces: furniture and props read better faceted
      g.computeVertexNormals();
      break;
    }
    default: return null;
  }
  return g;
}

function placed(object, pose) {
  object.position.copy(vec(pose));
  object.quaternion.copy(quat(pose));
  return object;
}

// The stage: obstacles, floor grid, bounds.
for (const ob of view.obstacles) {
  const color = new THREE.Color(ob.color[0], ob.color[1], ob.color[2]);
  if (ob.shape.type === 'plane') {
    const n = vec(ob.shape.normal).normalize();
    const size = view.floor_size_m;
    const mesh = new THREE.Mesh(new THREE.PlaneGeometry(size, size),
      new THREE.MeshStandardMaterial({ color, roughness: 0.95, side: THREE.DoubleSide }));
    mesh.quaternion.setFromUnitVectors(new THREE.Vector3(0, 0, 1), n);
    mesh.position.copy(n.multiplyScalar(ob.shape.offset)).add(vec(view.floor_center_m));
    mesh.receiveShadow = true;
    mesh.name = 'obstacle:' + ob.name;
    scene.add(mesh);
    continue;
  }
  const geometry = shapeGeometry(ob.shape);
  const mesh = placed(new THREE.Mesh(geometry, new THREE.MeshStandardMaterial({
    color, roughness: 0.8, metalness: 0.0 })), ob.pose);
  mesh.castShadow = mesh.receiveShadow = true;
  mesh.name = 'obstacle:' + ob.name;
  scene.add(mesh);
}
{
  const grid = new THREE.GridHelper(view.floor_size_m, Math.round(view.floor_size_m / 0.1),
    '#9aa5b1', '#c9d0d7');
  grid.rotateX(Math.PI / 2);  // GridHelper lies in x-z
  grid.position.copy(vec(view.floor_center_m)).setZ(0.0005);
  grid.material.transparent = true;
  grid.material.opacity = 0.55;
  scene.add(grid);
}
if (view.bounds) {
  const box = new THREE.Box3(vec(view.bounds.min), vec(view.bounds.max));
  scene.add(new THREE.Box3Helper(box, new THREE.Color('#5c7cfa')));
}

// The puppet: one group per frame carrying geometry.
const linkMaterial = new THREE.MeshStandardMaterial({ color: '#d9a066', roughness: 0.6 });
const frameGroups = view.frames.map((name) => {
  const g = new THREE.Group();
  g.name = 'frame:' + name;
  scene.add(g);
  return g;
});
const puppetMeshes = [];
for (const link of view.links) {
  const geometry = shapeGeometry(link.shape);
  if (!geometry) continue;
  const mesh = placed(new THREE.Mesh(geometry, linkMaterial), link.pose);
  mesh.castShadow = true;
  mesh.name = 'link:' + link.name;
  frameGroups[link.frame].add(mesh);
  puppetMeshes.push(mesh);
}

// Strings as fat lines (solid when taut, dashed and sagging when slack), rig points as spheres.
const resolution = new THREE.Vector2(1, 1);
const strings = view.strings.map((s) => {
  const geometry = new LineGeometry();
  geometry.setPositions(new Float32Array(SAG_POINTS * 3));
  const material = new LineMaterial({ color: 0xffffff, linewidth: 2.5, dashSize: 0.012,
    gapSize: 0.008, resolution });
  const line = new Line2(geometry, material);
  line.name = 'string:' + s.name;
  line.frustumCulled = false;
  scene.add(line);
  const rigPoint = new THREE.Mesh(new THREE.SphereGeometry(0.009, 16, 8),
    new THREE.MeshStandardMaterial({ color: '#495057' }));
  rigPoint.name = 'rig-point:' + s.name;
  scene.add(rigPoint);
  return { line, geometry, material, rigPoint, positions: new Float32Array(SAG_POINTS * 3) };
});

// Named points: a marker each, and their paths over the whole motion (toggled).
const pointObjects = view.points.map((p, k) => {
  const color = new THREE.Color(POINT_COLORS[k % POINT_COLORS.length]);
  const marker = new THREE.Mesh(new THREE.SphereGeometry(0.008, 16, 8),
    new THREE.MeshBasicMaterial({ color }));
  marker.visible = false;
  scene.add(marker);
  let path = null;
  if (N > 1) {
    const geometry = new LineGeometry();
    geometry.setPositions(p.path.flat());
    path = new Line2(geometry, new LineMaterial({ color, linewidth: 3, resolution }));
    path.name = 'path:' + p.name;
    path.visible = false;
    scene.add(path);
  }
  return { name: p.name, marker, path, color };
});
for (const target of view.targets) {
  const sphere = new THREE.Mesh(new THREE.SphereGeometry(target.radius, 24, 16),
    new THREE.MeshBasicMaterial({ color: '#2fb344', transparent: true, opacity: 0.25,
      depthWrite: false }));
  sphere.position.copy(vec(target.position));
  sphere.name = 'target:' + target.name;
  scene.add(sphere);
}

// ---- Posing at time t ----------------------------------------------------------------------

// The colour scale ends at the 95th percentile of the loaded samples: a plan's brief jerks
// would otherwise leave every steady tension at the blue end.  Above it is red.
const tensionMax = (() => {
  const loaded = view.tensions.samples.flat().filter((x) => x > 0).sort((a, b) => a - b);
  return loaded.length ? Math.max(loaded[Math.floor(0.95 * (loaded.length - 1))], 1e-6) : 1;
})();
const stopColors = TENSION_STOPS.map(([x, c]) => [x, new THREE.Color(c)]);
function tensionColor(tension, out) {
  const x = Math.min(Math.max(tension / tensionMax, 0), 1);
  for (let k = 1; k < stopColors.length; ++k) {
    if (x <= stopColors[k][0]) {
      const [x0, c0] = stopColors[k - 1], [x1, c1] = stopColors[k];
      return out.copy(c0).lerp(c1, (x - x0) / (x1 - x0));
    }
  }
  return out.copy(stopColors[stopColors.length - 1][1]);
}

const qa = new THREE.Quaternion(), qb = new THREE.Quaternion();
const endsNow = new Float64Array(view.strings.length * 6);
const lengthsNow = new Float64Array(view.strings.length);
const tensionsNow = new Float64Array(view.strings.length);
const pointNow = new Float64Array(3);
let currentTime = 0;

function poseAt(t) {
  currentTime = Math.min(Math.max(t, 0), duration);
  const s = sampleAt(currentTime);
  const a = view.frame_poses[s.i], b = view.frame_poses[s.j];
  frameGroups.forEach((g, k) => {
    const o = 7 * k;
    g.position.set(lerp(a[o], b[o], s.f), lerp(a[o + 1], b[o + 1], s.f),
      lerp(a[o + 2], b[o + 2], s.f));
    qa.set(a[o + 3], a[o + 4], a[o + 5], a[o + 6]);
    qb.set(b[o + 3], b[o + 4], b[o + 5], b[o + 6]);
    g.quaternion.slerpQuaternions(qa, qb, s.f);
  });
  lerpRow(view.string_ends, s, endsNow);
  lerpRow(view.string_lengths, s, lengthsNow);
  lerpRow(view.tensions.samples, s, tensionsNow);
  strings.forEach((st, k) => {
    const A = vec(endsNow, 6 * k), E = vec(endsNow, 6 * k + 3);
    const chord = A.distanceTo(E);
    // Slack: the ends are nearer than the string is long (1 mm), or it carries no tension.
    const slack = chord < lengthsNow[k] - 1e-3 || tensionsNow[k] <= 0;
    // A slack string hangs: a parabola whose arc length is about the string's length
    // (s ~ c + 8 d^2 / (3 c) for a sag d small beside the chord c).
    const extra = Math.max(lengthsNow[k] - chord, 0);
    const sag = slack ? Math.min(Math.sqrt(3 * chord * extra / 8), 0.5 * lengthsNow[k]) : 0;
    for (let i = 0; i < SAG_POINTS; ++i) {
      const u = i / (SAG_POINTS - 1);
      const p = A.clone().lerp(E, u);
      p.z -= 4 * sag * u * (1 - u);
      st.positions.set([p.x, p.y, p.z], 3 * i);
    }
    st.geometry.setPositions(st.positions);
    st.line.computeLineDistances();
    st.material.dashed = slack;
    st.slack = slack;
    if (slack) st.material.color.copy(SLACK_COLOR); else tensionColor(tensionsNow[k], st.material.color);
    st.rigPoint.position.copy(E);
  });
  pointObjects.forEach((po, k) => {
    const p = view.points[k].path;
    for (let c = 0; c < 3; ++c) pointNow[c] = lerp(p[s.i][c], p[s.j][c], s.f);
    po.marker.position.set(pointNow[0], pointNow[1], pointNow[2]);
  });
}

// ---- Camera ---------------------------------------------------------------------------------

// Everything that moves, over the whole motion: link frames, string ends, named points, goals.
const motionPoints = (() => {
  const pts = [];
  for (const row of view.frame_poses)
    for (let k = 0; k < view.frames.length; ++k) pts.push(vec(row, 7 * k));
  for (const row of view.string_ends)
    for (let k = 0; k < 2 * view.strings.length; ++k) pts.push(vec(row, 3 * k));
  for (const p of view.points) for (const x of p.path) pts.push(vec(x));
  for (const target of view.targets) pts.push(vec(target.position));
  return pts;
})();
const homeBox = new THREE.Box3().setFromPoints(motionPoints).expandByScalar(0.05);
function resetCamera() {
  const center = homeBox.getCenter(new THREE.Vector3());
  const radius = Math.max(homeBox.getSize(new THREE.Vector3()).length() / 2, 0.15);
  const direction = new THREE.Vector3(...view.camera_direction).normalize();
  // The nearest distance along `direction` at which every moving point is in view: a point at
  // offset o from the centre, at depth d - o.b, needs |o.r| <= (d - o.b) tan(h/2) across and
  // |o.u| <= (d - o.b) tan(v/2) up.
  const right = new THREE.Vector3().crossVectors(camera.up, direction).normalize();
  const up = new THREE.Vector3().crossVectors(direction, right);
  const tanV = Math.tan(THREE.MathUtils.degToRad(camera.fov / 2)), tanH = tanV * camera.aspect;
  let distance = 0;
  for (const point of motionPoints) {
    const o = point.clone().sub(center);
    const depth = o.dot(direction);
    distance = Math.max(distance, Math.abs(o.dot(right)) / tanH + depth,
      Math.abs(o.dot(up)) / tanV + depth);
  }
  distance = distance * 1.15 + 0.1;  // links reach beyond their frames' origins
  camera.position.copy(center).addScaledVector(direction, distance);
  camera.near = distance / 100;
  camera.far = distance * 60;
  camera.updateProjectionMatrix();
  controls.target.copy(center);
  controls.update();
  // The sun stands above the motion so shadows show where the puppet is over the floor or table.
  sun.position.copy(center).add(new THREE.Vector3(0.3, -0.2, 1).multiplyScalar(4 * radius + 1));
  sun.target.position.copy(center);
  const cam = sun.shadow.camera;
  const reach = 2.5 * radius + 0.5;
  cam.left = cam.bottom = -reach; cam.right = cam.top = reach;
  cam.near = 0.1; cam.far = 10 * radius + 10;
  cam.updateProjectionMatrix();
}

function resize() {
  const w = Math.max(stageDiv.clientWidth, 1), h = Math.max(stageDiv.clientHeight, 1);
  renderer.setSize(w, h, false);
  camera.aspect = w / h;
  camera.updateProjectionMatrix();
  resolution.set(w, h);
}

function render() {
  renderer.render(scene, camera);
}

// The puppet's bounding rectangle on the canvas (pixels, origin top-left), for tests.
function puppetScreenBox() {
  const box = new THREE.Box3();
  for (const m of puppetMeshes) { m.updateMatrixWorld(true); box.expandByObject(m); }
  const w = renderer.domElement.width, h = renderer.domElement.height;
  let x0 = Infinity, y0 = Infinity, x1 = -Infinity, y1 = -Infinity;
  for (let c = 0; c < 8; ++c) {
    const p = new THREE.Vector3(c & 1 ? box.max.x : box.min.x, c & 2 ? box.max.y : box.min.y,
      c & 4 ? box.max.z : box.min.z).project(camera);
    const x = (p.x + 1) / 2 * w, y = (1 - p.y) / 2 * h;
    x0 = Math.min(x0, x); y0 = Math.min(y0, y); x1 = Math.max(x1, x); y1 = Math.max(y1, y);
  }
  const clamp = (v, hi) => Math.round(Math.min(Math.max(v, 0), hi));
  return { x: clamp(x0, w), y: clamp(y0, h), width: clamp(x1, w) - clamp(x0, w),
    height: clamp(y1, h) - clamp(y0, h), canvasWidth: w, canvasHeight: h };
}

// ---- Header, legend, overlay ------------------------------------------------------------------

function text(tag, content, cls) {
  const e = document.createElement(tag);
  e.textContent = content;
  if (cls) e.className = cls;
  return e;
}
document.getElementById('title').textContent = view.title;
{
  const info = document.getElementById('info');
  for (const [key, value, bad] of view.info) {
    const span = document.createElement('span');
    span.append(key + ' ', text('b', value, bad ? 'bad' : ''));
    info.append(span);
  }
  const legend = document.getElementById('legend');
  legend.append(text('div', 'string tension'), Object.assign(document.createElement('div'),
    { className: 'bar' }));
  const row = document.createElement('div');
  row.className = 'row';
  row.append(text('span', '0 N'), text('span', '≥ ' + tensionMax.toFixed(2) + ' N'));
  legend.append(row, text('div', '- - - slack'));
}
const overlay = document.getElementById('overlay');

// ---- Plots (SVG) ------------------------------------------------------------------------------

function niceTicks(lo, hi, count) {
  const span = hi - lo || 1;
  const raw = span / count, mag = Math.pow(10, Math.floor(Math.log10(raw)));
  const step = [1, 2, 5, 10].map((m) => m * mag).find((s) => s >= raw) || 10 * mag;
  const ticks = [];
  for (let v = Math.ceil(lo / step) * step; v <= hi + 1e-9 * span; v += step) ticks.push(v);
  return ticks;
}
const fmt = (v) => Math.abs(v) >= 100 ? v.toFixed(0) : Math.abs(v) >= 1 ? v.toPrecision(3) :
  v === 0 ? '0' : v.toPrecision(2);
function svgEl(tag, attrs, parent) {
  const e = document.createElementNS(SVG_NS, tag);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
  if (parent) parent.append(e);
  return e;
}

const plots = [];
// series: [{name, values (N), color}]; markers: [{index, label}]
function addPlot(id, title, unit, series, markers = []) {
  const div = document.createElement('div');
  div.className = 'plot';
  div.id = 'plot-' + id;
  const h2 = text('h2', title + ' ');
  h2.append(text('small', unit + (duration > 0 ? ' against time (s)' : '')));
  const svg = svgEl('svg', { role: 'img', 'aria-label': title });
  const legend = document.createElement('div');
  legend.className = 'legend';
  for (const s of series) {
    const item = document.createElement('span');
    const swatch = document.createElement('i');
    swatch.style.background = s.color;
    item.append(swatch, s.name);
    legend.append(item);
  }
  div.append(h2, svg, legend);
  document.getElementById('plots').append(div);
  const plot = { id, svg, series, markers, cursor: null, x: null };
  plots.push(plot);
  const seek = (ev) => {
    if (!plot.x || N <= 1) return;
    const r = svg.getBoundingClientRect();
    setTime(plot.x.invert(ev.clientX - r.left));
  };
  svg.addEventListener('pointerdown', (ev) => { svg.setPointerCapture(ev.pointerId); seek(ev); });
  svg.addEventListener('pointermove', (ev) => { if (ev.buttons & 1) seek(ev); });
  return plot;
}

function drawPlot(plot) {
  const svg = plot.svg;
  while (svg.firstChild) svg.firstChild.remove();
  const W = Math.max(svg.clientWidth, 50), H = Math.max(svg.clientHeight, 40);
  svg.setAttribute('viewBox', `0 0 ${W} ${H}`);
  const m = { l: 42, r: 16, t: 6, b: 18 };
  let lo = Infinity, hi = -Infinity;
  for (const s of plot.series)
    for (const v of s.values) if (Number.isFinite(v)) { lo = Math.min(lo, v); hi = Math.max(hi, v); }
  if (!Number.isFinite(lo)) { lo = 0; hi = 1; }
  if (plot.id !== 'inputs') lo = Math.min(lo, 0);
  if (hi - lo < 1e-9) { hi += 0.5; lo -= 0.5; }
  const pad = 0.05 * (hi - lo);
  lo -= plot.id === 'inputs' ? pad : 0; hi += pad;
  const t1 = Math.max(duration, 1e-9);
  const X = (t) => m.l + (W - m.l - m.r) * t / t1;
  X.invert = (px) => (px - m.l) / (W - m.l - m.r) * t1;
  const Y = (v) => H - m.b - (H - m.t - m.b) * (v - lo) / (hi - lo);
  plot.x = X;
  for (const v of niceTicks(lo, hi, 4)) {
    svgEl('line', { class: 'grid', x1: m.l, x2: W - m.r, y1: Y(v), y2: Y(v) }, svg);
    svgEl('text', { x: m.l - 4, y: Y(v) + 3, 'text-anchor': 'end' }, svg).textContent = fmt(v);
  }
  if (duration > 0) {  // a rest pose has no time axis
    for (const t of niceTicks(0, t1, 8))
      svgEl('text', { x: X(t), y: H - 5, 'text-anchor': 'middle' }, svg).textContent = fmt(t);
  }
  if (view.collision && view.collision.first_index >= 0) {
    const x0 = X(view.t[view.collision.first_index]);
    svgEl('rect', { class: 'collision', x: x0, y: m.t, width: Math.max(W - m.r - x0, 1),
      height: H - m.t - m.b }, svg);
  }
  svgEl('path', { class: 'axis', d: `M${m.l},${m.t}V${H - m.b}H${W - m.r}` }, svg);
  for (const s of plot.series) {
    let d = '';
    s.values.forEach((v, i) => {
      if (Number.isFinite(v)) d += (d ? 'L' : 'M') + X(view.t[i]).toFixed(1) + ',' + Y(v).toFixed(1);
    });
    if (N === 1 && d) d += 'H' + (W - m.r);
    svgEl('path', { class: 'series', d, stroke: s.color, 'data-series': s.name }, svg);
  }
  for (const mk of plot.markers) {
    const x = X(view.t[mk.index]), y = Y(mk.value);
    svgEl('circle', { class: 'min-marker', cx: x, cy: y, r: 3.5 }, svg);
    const label = svgEl('text', { class: 'min-label', x: x + (x > W / 2 ? -6 : 6), y: y - 6,
      'text-anchor': x > W / 2 ? 'end' : 'start' }, svg);
    label.textContent = mk.label;
  }
  plot.cursor = svgEl('line', { class: 'cursor', y1: m.t, y2: H - m.b }, svg);
  placeCursor(plot);
}
function placeCursor(plot) {
  if (!plot.cursor) return;
  const x = plot.x(currentTime);
  plot.cursor.setAttribute('x1', x);
  plot.cursor.setAttribute('x2', x);
}

const column = (rows, k) => rows.map((r) => r[k]);
addPlot('inputs', 'rig inputs', view.inputs.names.length ? '(' + [...new Set(view.inputs.units)]
  .join(', ') + ')' : '', view.inputs.names.map((name, k) => ({ name: name + ' [' +
  view.inputs.units[k] + ']', values: column(view.inputs.samples, k),
  color: SERIES_COLORS[k % SERIES_COLORS.length] })));
addPlot('tensions', 'string tensions', '(N)', view.tensions.names.map((name, k) => ({ name,
  values: column(view.tensions.samples, k), color: SERIES_COLORS[k % SERIES_COLORS.length] })));
if (view.clearance) {
  const c = view.clearance;
  const markers = [];
  if (c.min_index >= 0)
    markers.push({ index: c.min_index, value: c.samples[c.min_index],
      label: 'min ' + (100 * c.samples[c.min_index]).toFixed(1) + ' cm at ' +
        view.t[c.min_index].toFixed(2) + ' s' });
  if (c.stage_min_index >= 0 && c.stage_min_index !== c.min_index)
    markers.push({ index: c.stage_min_index, value: c.stage_samples[c.stage_min_index],
      label: 'stage min ' + (100 * c.stage_samples[c.stage_min_index]).toFixed(1) + ' cm' });
  addPlot('clearance', 'clearance', '(m)', [
    { name: 'nearest pair (self included)', values: c.samples, color: '#d62728' },
    { name: 'to the stage', values: c.stage_samples, color: '#1f77b4' }], markers);
}

// ---- Timeline and playback -----------------------------------------------------------------

const timeline = document.getElementById('timeline');
const timeLabel = document.getElementById('time');
const playButton = document.getElementById('play');
const speedSelect = document.getElementById('speed');
const loopBox = document.getElementById('loop');
timeline.max = String(Math.max(duration, 1e-9));
timeline.disabled = N <= 1;
playButton.disabled = N <= 1;
{
  const marks = document.getElementById('timeline-marks');
  const mark = (t, color, title) => {
    const i = document.createElement('i');
    i.style.left = (100 * t / Math.max(duration, 1e-9)) + '%';
    i.style.background = color;
    i.title = title;
    marks.append(i);
  };
  if (view.clearance && view.clearance.min_index >= 0)
    mark(view.t[view.clearance.min_index], '#e03131', 'minimum clearance');
  if (view.collision && view.collision.first_index >= 0)
    mark(view.t[view.collision.first_index], '#000', 'first collision');
  if (view.goal_index >= 0) mark(view.t[view.goal_index], '#2fb344', 'goal reached');
}
const minButton = document.getElementById('min-clearance');
minButton.disabled = !(view.clearance && view.clearance.min_index >= 0);
minButton.addEventListener('click', () => { pause(); setTime(view.t[view.clearance.min_index]); });

function updateOverlay() {
  const s = sampleAt(currentTime);
  const k = s.f < 0.5 ? s.i : s.j;
  let line = `t = ${currentTime.toFixed(2)} s`;
  if (view.clearance) {
    const cm = (v) => (v === null ? '–' : (100 * v).toFixed(1) + ' cm');
    line += ` · clearance to the stage ${cm(view.clearance.stage_samples[k])}`;
    line += `, to anything ${cm(view.clearance.samples[k])}`;
  }
  overlay.textContent = line;
  timeLabel.textContent = `${currentTime.toFixed(2)} / ${duration.toFixed(2)} s`;
}

let pendingFrame = 0;
function requestRender() {
  if (!pendingFrame) pendingFrame = requestAnimationFrame(() => { pendingFrame = 0; render(); });
}
function setTime(t) {
  poseAt(t);
  timeline.value = String(currentTime);
  plots.forEach(placeCursor);
  updateOverlay();
  requestRender();
}

let playing = false, lastClock = 0;
function tick(now) {
  if (!playing) return;
  const dt = (now - lastClock) / 1000 * Number(speedSelect.value);
  lastClock = now;
  let t = currentTime + dt;
  if (t >= duration) {
    if (loopBox.checked) t = duration > 0 ? t % duration : 0;
    else { t = duration; pause(); }
  }
  setTime(t);
  if (playing) requestAnimationFrame(tick);
}
function play() {
  if (N <= 1) return;
  if (currentTime >= duration) setTime(0);
  playing = true;
  playButton.textContent = 'Pause';
  lastClock = performance.now();
  requestAnimationFrame(tick);
}
function pause() {
  playing = false;
  playButton.textContent = 'Play';
}
playButton.addEventListener('click', () => (playing ? pause() : play()));
timeline.addEventListener('input', () => { pause(); setTime(Number(timeline.value)); });
// Space plays / pauses; the arrow keys step one sample back or forward.
window.addEventListener('keydown', (ev) => {
  if (ev.target.tagName === 'SELECT' || (ev.target.tagName === 'INPUT' && ev.target.type !== 'range'))
    return;
  if (ev.code === 'Space') {
    ev.preventDefault();
    playing ? pause() : play();
  } else if ((ev.code === 'ArrowLeft' || ev.code === 'ArrowRight') && N > 1) {
    ev.preventDefault();
    pause();
    const k = Math.round(currentTime * view.rate_hz) + (ev.code === 'ArrowRight' ? 1 : -1);
    setTime(Math.min(Math.max(k, 0), N - 1) / view.rate_hz);
  }
});
document.getElementById('reset-camera').addEventListener('click', () => { resetCamera(); render(); });
controls.addEventListener('change', requestRender);

// Paths of named points.
const pathsBox = document.getElementById('paths');
const pointsSpan = document.getElementById('points');
const pointChecks = pointObjects.map((po) => {
  const label = document.createElement('label');
  const box = document.createElement('input');
  box.type = 'checkbox';
  box.checked = view.highlight_points.includes(po.name);
  box.addEventListener('change', showPaths);
  label.append(box, ' ' + po.name);
  label.style.color = '#' + po.color.getHexString();
  pointsSpan.append(label);
  return box;
});
function showPaths() {
  pointObjects.forEach((po, k) => {
    const on = pathsBox.checked && pointChecks[k].checked;
    if (po.path) po.path.visible = on;
    po.marker.visible = on;
  });
  requestRender();
}
pathsBox.checked = view.highlight_points.length > 0;
pathsBox.disabled = pointObjects.length === 0;
pathsBox.addEventListener('change', showPaths);

// ---- Start ----------------------------------------------------------------------------------

if (still) document.body.classList.add('still');
resize();
resetCamera();
plots.forEach(drawPlot);
showPaths();
const startAt = params.has('at') ? Number(params.get('at')) : view.default_time;
setTime(Number.isFinite(startAt) ? startAt : 0);
render();  // synchronously, so that a screenshot taken at load sees the finished picture
window.addEventListener('resize', () => { resize(); plots.forEach(drawPlot); render(); });

window.marionetteViewer = {
  ready: true,
  duration,
  sampleCount: N,
  setTime: (t) => { setTime(t); render(); },
  time: () => currentTime,
  puppetScreenBox,
  // Each string as drawn now: slack (dashed, grey) or taut, and its colour ('#rrggbb').
  strings: () => strings.map((st, k) => ({ name: view.strings[k].name, slack: st.slack,
    color: '#' + st.material.color.getHexString() })),
  render,
};
