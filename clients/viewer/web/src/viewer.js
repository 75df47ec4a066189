// SPDX-License-Identifier: BSD-3-Clause
// The viewer page of `marionette render`: draws a view document (the JSON in
// <script id="marionette-view">, written by clients/viewer/src/view_json.cpp) with three.js --
// the puppet's collision shapes, its strings coloured by tension (slack ones dashed and sagging),
// the rig points, the stage -- and plots its inputs, tensions and clearance against time under a
// timeline.  A document with a "compare" motion (`render A.json --compare B.json`) shows that
// plan's puppet too, as a translucent ghost in the same view, dashed in the plots; the timeline
// spans the longer motion and the shorter holds its end.  All physics comes from the document;
// this page only interpolates between samples and draws.
//
// Files: motion.js (sampling a motion), puppet.js (a puppet posed from one), plots.js (the SVG
// plots), shapes.js (shapes and poses as three.js objects).
//
// URL parameters: ?at=T (seconds) starts there; ?still=1 lays the page out as one still image
// (no controls) for `marionette render --png`.
//
// For tests, window.marionetteViewer exposes: ready, duration, sampleCount, setTime(t), time(),
// puppetScreenBox() (the puppet's bounding rectangle in canvas pixels), strings() (each one's
// slack flag and colour as drawn), render(); and with a compared plan, compareName,
// ghostScreenBox(), ghostStrings() (the same for the ghost, with its opacity), setGhostVisible(on);
// performanceTargets() (each performance target's marker now: name, visible, position).

import * as THREE from 'three';
import { OrbitControls } from 'three/examples/jsm/controls/OrbitControls.js';
import { MotionTrack } from './motion.js';
import { Plots } from './plots.js';
import { Puppet } from './puppet.js';
import { placed, shapeGeometry, vec } from './shapes.js';

// Named points' markers and paths: vivid, to stand out against the stage's greys.
const POINT_COLORS = ['#e64980', '#7048e8', '#1c7ed6', '#0ca678', '#f76707', '#ae3ec9',
  '#1098ad', '#74b816', '#f59f00', '#d6336c', '#4263eb', '#37b24d'];
// The points of reach clouds, in order: hues far apart, so that each point's cloud reads as its
// own (its marker and its name in "paths of" take the same colour).
const CLOUD_COLORS = ['#e8590c', '#1971c2', '#2f9e44', '#9c36b5', '#c92a2a', '#0c8599',
  '#f08c00', '#5c940d'];
const SERIES_COLORS = ['#1f77b4', '#ff7f0e', '#2ca02c', '#d62728', '#9467bd', '#8c564b',
  '#e377c2', '#7f7f7f', '#bcbd22', '#17becf'];
const TENSION_STOPS = [[0, '#3b5bdb'], [0.33, '#2fb344'], [0.66, '#f59f00'], [1, '#e03131']];
const LINK_COLOR = '#d9a066';
const GHOST_COLOR = '#4f7fd1';  // the compared plan's puppet, translucent
const GHOST_OPACITY = 0.35;

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

// The motion shown and, when comparing, the one drawn as a ghost.
const tracks = [new MotionTrack(view)];
if (view.compare) tracks.push(new MotionTrack(view.compare));
const main = tracks[0];
const duration = Math.max(...tracks.map((t) => t.duration));
const playable = duration > 0;

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

// The stage: obstacles, floor grid, bounds.
const solids = [];  // the obstacles other than planes: cut away where they hide the puppet
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
  solids.push(mesh);
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
// Goal regions (a compared plan's only where they differ from the shown one's).
{
  const drawn = new Set();
  for (const track of tracks)
    for (const target of track.doc.targets) {
      const key = JSON.stringify(target);
      if (drawn.has(key)) continue;
      drawn.add(key);
      const sphere = new THREE.Mesh(new THREE.SphereGeometry(target.radius, 24, 16),
        new THREE.MeshBasicMaterial({ color: '#2fb344', transparent: true, opacity: 0.25,
          depthWrite: false }));
      sphere.position.copy(vec(target.position));
      sphere.name = 'target:' + target.name;
      scene.add(sphere);
    }
}

// The colour scale of string tension ends at the 95th percentile of the loaded samples (of both
// plans when comparing): a plan's brief jerks would otherwise leave every steady tension at the
// blue end.  Above it is red.
const tensionMax = (() => {
  const loaded = tracks.flatMap((t) => t.doc.tensions.samples.flat()).filter((x) => x > 0)
    .sort((a, b) => a - b);
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

// The puppets: the plan shown, solid; the compared one, a ghost.  A point with a reach cloud
// takes its cloud's colour.
const cloudPointNames = [...new Set((view.clouds || []).map((c) => c.point))];
const pointColor = (name, k) => {
  const c = cloudPointNames.indexOf(name);
  return c >= 0 ? CLOUD_COLORS[c % CLOUD_COLORS.length] : POINT_COLORS[k % POINT_COLORS.length];
};
const resolution = new THREE.Vector2(1, 1);
const puppets = tracks.map((track, k) => new Puppet(scene, view, track, {
  opacity: k ? GHOST_OPACITY : 1, linkColor: k ? GHOST_COLOR : LINK_COLOR, resolution,
  pointColor, tensionColor }));
const puppet = puppets[0];
const ghost = puppets[1] || null;

let currentTime = 0;
function poseAt(t) {
  currentTime = Math.min(Math.max(t, 0), duration);
  puppets.forEach((p) => p.poseAt(currentTime));
}

// ---- Camera ---------------------------------------------------------------------------------

// What the camera frames (view.fit): the puppets' links over the whole motion, everything that
// moves (strings to the rig, traced points, targets too), or that and the stage's bounds.
function framedPoints() {
  if (view.fit === 'puppet') {
    const corners = puppets.flatMap((p) => boxCorners(p.linkBoxOver(duration)));
    if (corners.length) return corners.concat(cloudPoints);
  }
  const points = [...allMovingPoints];
  if (view.fit === 'stage' && view.bounds)
    points.push(...boxCorners(new THREE.Box3(vec(view.bounds.min), vec(view.bounds.max))));
  return points;
}
function boxCorners(box) {
  if (box.isEmpty()) return [];
  return [0, 1, 2, 3, 4, 5, 6, 7].map((c) => new THREE.Vector3(c & 1 ? box.max.x : box.min.x,
    c & 2 ? box.max.y : box.min.y, c & 4 ? box.max.z : box.min.z));
}
// Point clouds (`marionette reach`): one colour per point (its marker's); where it is held, large
// solid dots; where it swings to, small faint ones.
const cloudPoints = [];
const clouds = (view.clouds || []).map((c) => {
  const positions = new Float32Array(c.points.flat());
  const geometry = new THREE.BufferGeometry();
  geometry.setAttribute('position', new THREE.BufferAttribute(positions, 3));
  const color = CLOUD_COLORS[cloudPointNames.indexOf(c.point) % CLOUD_COLORS.length];
  const dots = new THREE.Points(geometry, new THREE.PointsMaterial({ color,
    size: c.faint ? 2 : 6, sizeAttenuation: false, transparent: c.faint,
    opacity: c.faint ? 0.25 : 1, depthWrite: !c.faint }));
  dots.name = 'cloud:' + c.name;
  scene.add(dots);
  for (const p of c.points) cloudPoints.push(vec(p));
  return { name: c.name, point: c.point, faint: c.faint, count: c.points.length, color, dots };
});
const allMovingPoints = puppets.flatMap((p) => p.movingPoints()).concat(cloudPoints);
const motionPoints = framedPoints();
const homeBox = new THREE.Box3().setFromPoints(motionPoints)
  .expandByScalar(view.fit === 'puppet' ? 0.01 : 0.05);
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
  // Links reach beyond their frames' origins (the puppet's fit is of the links themselves).
  distance = view.fit === 'puppet' ? distance * 1.05 : distance * 1.15 + 0.1;
  // Never inside what moves (looking down, the rig is between the camera and the puppet).
  for (const point of allMovingPoints)
    distance = Math.max(distance, point.clone().sub(center).dot(direction) + 0.25);
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
  cutAwayOccluders();
}

// An obstacle between the camera and the middle of what is framed (the sideboard in front of
// the living room's puppet, seen from the audience) is drawn translucent, as a cutaway.
const CUTAWAY_OPACITY = 0.18;
const raycaster = new THREE.Raycaster();
function cutAwayOccluders() {
  const center = homeBox.getCenter(new THREE.Vector3());
  const quarter = homeBox.getSize(new THREE.Vector3()).z / 4;
  const hiding = new Set();
  for (const dz of [-quarter, 0, quarter]) {
    const target = center.clone().setZ(center.z + dz);
    const toward = target.clone().sub(camera.position);
    raycaster.set(camera.position, toward.clone().normalize());
    raycaster.far = toward.length();
    for (const hit of raycaster.intersectObjects(solids, false)) hiding.add(hit.object);
  }
  for (const mesh of solids) {
    const cut = hiding.has(mesh);
    Object.assign(mesh.material, { transparent: cut, opacity: cut ? CUTAWAY_OPACITY : 1,
      depthWrite: !cut });
    mesh.userData.cutAway = cut;
  }
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

// ---- Header, legend, overlay ------------------------------------------------------------------

function text(tag, content, cls) {
  const e = document.createElement(tag);
  e.textContent = content;
  if (cls) e.className = cls;
  return e;
}
function swatch(plan) {
  const i = document.createElement('i');
  i.className = 'swatch' + (plan ? ' ghost' : '');
  i.style.background = plan ? GHOST_COLOR : LINK_COLOR;
  return i;
}

// Two plans side by side: one row each (its file name, then its facts and quality figures in
// the order they first appear); their problems are listed beside the view.
function comparisonTable() {
  const facts = tracks.map((t) => new Map([...t.doc.info.filter(([, , bad]) => !bad),
    ...t.doc.quality].map(([key, value]) => [key, value])));
  const keys = [...new Set(facts.flatMap((f) => [...f.keys()]))];
  const table = document.createElement('table');
  table.id = 'comparison';
  const head = table.insertRow();
  for (const key of ['plan', ...keys]) head.append(text('th', key));
  tracks.forEach((t, k) => {
    const row = table.insertRow();
    const name = text('td', '', 'plan');
    name.append(swatch(k), t.name + (k ? ' (ghost)' : ''));
    row.append(name);
    for (const key of keys) row.append(text('td', facts[k].has(key) ? facts[k].get(key) : '–'));
  });
  return table;
}

// A message of several shortfalls ("a; b (c; d); e") as its items, split where no parenthesis
// is open.
function shortfalls(message) {
  const items = [];
  let depth = 0, start = 0;
  for (let i = 0; i < message.length; ++i) {
    const c = message[i];
    if (c === '(') ++depth;
    else if (c === ')') depth = Math.max(depth - 1, 0);
    else if (c === ';' && depth === 0) {
      items.push(message.slice(start, i).trim());
      start = i + 1;
    }
  }
  items.push(message.slice(start).trim());
  return items.filter((x) => x);
}

document.getElementById('title').textContent = view.title;
{
  const info = document.getElementById('info');
  const fact = (key, value, bad) => {
    const span = document.createElement('span');
    span.append(key + ' ', text('b', value, bad ? 'bad' : ''));
    info.append(span);
  };
  for (const [key, value] of view.setting) fact(key, value, false);
  if (ghost) document.querySelector('header').append(comparisonTable());
  else for (const [key, value, bad] of view.info) if (!bad) fact(key, value, false);

  // What falls short, beside the view: each plan's problems (the outcome's message and the
  // like) as a list of their shortfalls.
  const messages = document.getElementById('messages');
  tracks.forEach((t, k) => {
    const problems = t.doc.info.filter(([, , bad]) => bad);
    if (!problems.length) return;
    if (!messages.childElementCount) messages.append(text('h3', 'what falls short'));
    if (ghost) {
      const name = text('div', '', 'plan');
      name.append(swatch(k), t.name);
      messages.append(name);
    }
    const list = document.createElement('ul');
    const items = problems.flatMap(([, value]) => shortfalls(value));
    // A still has room for the first two beside its plots.
    const shown = still && items.length > 2 ? 2 : items.length;
    for (const item of items.slice(0, shown)) list.append(text('li', item));
    if (shown < items.length) list.append(text('li', `and ${items.length - shown} more`, 'more'));
    messages.append(list);
  });

  const legend = document.getElementById('legend');
  legend.append(text('h3', 'string tension'), Object.assign(document.createElement('div'),
    { className: 'bar' }));
  const row = document.createElement('div');
  row.className = 'row';
  row.append(text('span', '0 N'), text('span', '≥ ' + tensionMax.toFixed(2) + ' N'));
  legend.append(row, text('div', '- - - slack'));
  if (ghost)
    tracks.forEach((t, k) => {
      const line = text('div', '', 'plan');
      line.append(swatch(k), t.name + (k ? ' (ghost)' : ''));
      legend.append(line);
    });
  // Reach clouds: one line per point in its colour, a box to show or hide its clouds.
  if (clouds.length) legend.append(text('h3', 'where each point can be'));
  for (const point of cloudPointNames) {
    const own = clouds.filter((c) => c.point === point);
    const label = document.createElement('label');
    label.className = 'cloud';
    const box = document.createElement('input');
    box.type = 'checkbox';
    box.checked = true;
    box.addEventListener('change', () => {
      own.forEach((c) => { c.dots.visible = box.checked; });
      requestRender();
    });
    const dot = document.createElement('i');
    dot.style.background = own[0].color;
    label.append(box, dot, point + ': ' + own.map((c) => (c.faint ? 'swung to' : 'held') +
      ' (' + c.count + ')').join(', '));
    label.dataset.point = point;
    legend.append(label);
  }
  if (clouds.length)
    legend.append(text('div', 'large dots: held still; small faint dots: swung to'));
}
const overlay = document.getElementById('overlay');

// ---- Plots ----------------------------------------------------------------------------------

const plots = new Plots(document.getElementById('plots'), { duration,
  plans: tracks.map((t) => t.name), seek: (t) => setTime(t), now: () => currentTime });
// Each plan's series, the shown plan's first: make(doc) -> [{name, values, color}].
const perPlan = (make) => tracks.flatMap((track, plan) =>
  make(track.doc).map((s) => ({ ...s, plan, t: track.doc.t })));
const column = (rows, k) => rows.map((r) => r[k]);
const seriesColor = (k) => SERIES_COLORS[k % SERIES_COLORS.length];
const collisions = tracks.filter((t) => t.doc.collision.first_index >= 0)
  .map((t) => ({ t: t.doc.t[t.doc.collision.first_index], plan: tracks.indexOf(t) }));
plots.add('inputs', 'rig inputs', view.inputs.names.length ? '(' + [...new Set(view.inputs.units)]
  .join(', ') + ')' : '', perPlan((doc) => doc.inputs.names.map((name, k) => ({
  name: name + ' [' + doc.inputs.units[k] + ']', values: column(doc.inputs.samples, k),
  color: seriesColor(k) }))), { collisions, includeZero: false });
plots.add('tensions', 'string tensions', '(N)', perPlan((doc) => doc.tensions.names.map(
  (name, k) => ({ name, values: column(doc.tensions.samples, k), color: seriesColor(k) }))),
{ collisions });
if (tracks.some((t) => t.doc.contacts && t.doc.contacts.names.length)) {
  // What touched (the floor under a foot, a forearm on the body): each pair's normal force.
  plots.add('contacts', 'contact normal forces', '(N)', perPlan((doc) => doc.contacts.names.map(
    (name, k) => ({ name, values: column(doc.contacts.normal, k), color: seriesColor(k) }))),
  { collisions });
}
if (puppets.some((p) => p.targets.length)) {
  // A performance: each target point's distance to its target (the ghost markers in the view).
  plots.add('tracking', 'tracking error', '(m)', puppets.flatMap((p, plan) =>
    p.trackingErrors().map((e, k) => ({ name: e.name, values: e.values, plan, t: p.track.doc.t,
      color: seriesColor(k) }))), { collisions });
}
if (view.clearance) {
  // The minima of each plan; the compared plan's go unlabelled where they are the shown plan's.
  const markers = [];
  tracks.forEach((track, plan) => {
    const c = track.doc.clearance, t = track.doc.t;
    const mark = (k, value, label) => {
      const same = markers.some((m) => m.t === t[k] && m.value === value);
      markers.push({ t: t[k], value, plan,
        label: plan ? (same ? '' : track.name + ': ' + label) : label });
    };
    if (c.min_index >= 0)
      mark(c.min_index, c.samples[c.min_index], 'min ' +
        (100 * c.samples[c.min_index]).toFixed(1) + ' cm at ' + t[c.min_index].toFixed(2) + ' s');
    if (c.stage_min_index >= 0 && c.stage_min_index !== c.min_index)
      mark(c.stage_min_index, c.stage_samples[c.stage_min_index], 'stage min ' +
        (100 * c.stage_samples[c.stage_min_index]).toFixed(1) + ' cm');
  });
  plots.add('clearance', 'clearance', '(m)', perPlan((doc) => [
    { name: 'nearest pair (self included)', values: doc.clearance.samples, color: '#d62728' },
    { name: 'to the stage', values: doc.clearance.stage_samples, color: '#1f77b4' }]),
  { markers, collisions });
}

// ---- Timeline and playback -----------------------------------------------------------------

const timeline = document.getElementById('timeline');
const timeLabel = document.getElementById('time');
const playButton = document.getElementById('play');
const speedSelect = document.getElementById('speed');
const loopBox = document.getElementById('loop');
timeline.max = String(Math.max(duration, 1e-9));
timeline.disabled = !playable;
playButton.disabled = !playable;
{
  const marks = document.getElementById('timeline-marks');
  const mark = (t, color, title, plan) => {
    const i = document.createElement('i');
    i.style.left = (100 * t / Math.max(duration, 1e-9)) + '%';
    i.style.background = color;
    i.title = (plan ? tracks[plan].name + ': ' : '') + title;
    if (plan) i.className = 'ghost';
    marks.append(i);
  };
  tracks.forEach((track, plan) => {
    const doc = track.doc;
    if (doc.clearance && doc.clearance.min_index >= 0)
      mark(doc.t[doc.clearance.min_index], '#e03131', 'minimum clearance', plan);
    if (doc.collision.first_index >= 0)
      mark(doc.t[doc.collision.first_index], '#000', 'first collision', plan);
    if (doc.goal_index >= 0) mark(doc.t[doc.goal_index], '#2fb344', 'goal reached', plan);
  });
}
const minButton = document.getElementById('min-clearance');
minButton.disabled = !(view.clearance && view.clearance.min_index >= 0);
minButton.addEventListener('click', () => { pause(); setTime(view.t[view.clearance.min_index]); });

function updateOverlay() {
  let line = `t = ${currentTime.toFixed(2)} s`;
  if (view.clearance) {
    const cm = (v) => (v === null ? '–' : (100 * v).toFixed(1) + ' cm');
    tracks.forEach((track, plan) => {
      const c = track.doc.clearance, k = track.nearest(currentTime);
      line += plan ? ` · ${track.name}: ${cm(c.stage_samples[k])}, ${cm(c.samples[k])}`
        : ` · clearance to the stage ${cm(c.stage_samples[k])}, to anything ${cm(c.samples[k])}`;
    });
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
  plots.placeCursors();
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
  if (!playable) return;
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
// Space plays / pauses; the arrow keys step one sample (of the shown plan) back or forward.
window.addEventListener('keydown', (ev) => {
  if (ev.target.tagName === 'SELECT' || (ev.target.tagName === 'INPUT' && ev.target.type !== 'range'))
    return;
  if (ev.code === 'Space') {
    ev.preventDefault();
    playing ? pause() : play();
  } else if ((ev.code === 'ArrowLeft' || ev.code === 'ArrowRight') && playable) {
    ev.preventDefault();
    pause();
    const k = Math.round(currentTime * main.rate) + (ev.code === 'ArrowRight' ? 1 : -1);
    setTime(Math.min(Math.max(k, 0) / main.rate, duration));
  }
});
document.getElementById('reset-camera').addEventListener('click', () => { resetCamera(); render(); });
controls.addEventListener('change', () => { cutAwayOccluders(); requestRender(); });

// Paths of named points (of both plans when comparing).
const pathsBox = document.getElementById('paths');
const pointsSpan = document.getElementById('points');
const pointChecks = puppet.points.map((po) => {
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
  const on = pointChecks.map((box) => pathsBox.checked && box.checked);
  puppets.forEach((p) => p.showPaths(on));
  requestRender();
}
pathsBox.checked = view.highlight_points.length > 0;
pathsBox.disabled = puppet.points.length === 0;
pathsBox.addEventListener('change', showPaths);

// The ghost can be hidden.
const ghostBox = document.getElementById('ghost');
if (ghost) {
  document.getElementById('ghost-toggle').hidden = false;
  document.getElementById('ghost-name').textContent = ghost.track.name;
  ghostBox.addEventListener('change', () => { ghost.setVisible(ghostBox.checked); requestRender(); });
}

// ---- Start ----------------------------------------------------------------------------------

if (still) document.body.classList.add('still');
resize();
resetCamera();
plots.drawAll();
if (still) {
  // A small still keeps the plots that have room to be read: the contact forces and the inputs
  // go first, the tracking error (a performance's) last.
  const MIN_PLOT_PX = 60;
  const shown = () => [...document.querySelectorAll('.plot')]
    .filter((p) => p.style.display !== 'none');
  for (const id of ['contacts', 'inputs', 'tensions', 'clearance']) {
    if (shown().length <= 1 ||
        shown().every((p) => p.querySelector('svg').clientHeight >= MIN_PLOT_PX))
      break;
    const plot = document.getElementById('plot-' + id);
    if (plot) plot.style.display = 'none';
  }
  plots.drawAll();
}
showPaths();
const startAt = params.has('at') ? Number(params.get('at')) : view.default_time;
setTime(Number.isFinite(startAt) ? startAt : 0);
render();  // synchronously, so that a screenshot taken at load sees the finished picture
window.addEventListener('resize', () => { resize(); plots.drawAll(); render(); });

window.marionetteViewer = {
  ready: true,
  duration,
  sampleCount: main.N,
  setTime: (t) => { setTime(t); render(); },
  time: () => currentTime,
  puppetScreenBox: () => puppet.screenBox(camera, renderer.domElement),
  // The point clouds drawn: [{name, point, count, color ('#rrggbb'), visible}].
  clouds: () => clouds.map(({ name, point, count, color, dots }) => ({ name, point, count, color,
    visible: dots.visible })),
  // From the point looked at toward the camera, unit length.
  cameraDirection: () => camera.position.clone().sub(controls.target).normalize().toArray(),
  // The obstacles drawn translucent because they stand between the camera and the puppet.
  cutAway: () => solids.filter((m) => m.userData.cutAway).map((m) => m.name),
  // Each string as drawn now: slack (dashed, grey) or taut, and its colour ('#rrggbb').
  strings: () => puppet.drawnStrings().map(({ name, slack, color }) => ({ name, slack, color })),
  // The contact arrows shown now: [{name, at (the point of contact), length (m)}].
  contacts: () => puppet.drawnContacts(),
  performanceTargets: () => puppet.targets.map(({ name, marker }) => ({ name,
    visible: marker.visible, position: marker.position.toArray() })),
  render,
  compareName: ghost ? ghost.track.name : null,
  ghostScreenBox: () => (ghost ? ghost.screenBox(camera, renderer.domElement) : null),
  ghostStrings: () => (ghost ? ghost.drawnStrings() : []),
  ghostOpacity: ghost ? GHOST_OPACITY : null,
  setGhostVisible: (on) => { if (ghost) { ghostBox.checked = on; ghost.setVisible(on); render(); } },
};
