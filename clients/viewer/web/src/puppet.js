// SPDX-License-Identifier: BSD-3-Clause
// A puppet in the three.js scene, posed from one motion of the view document: its links as their
// collision shapes, its strings as lines coloured by tension (slack ones grey, dashed and
// sagging), its rig points, its named points' markers and paths.  A ghost (style.opacity < 1)
// is the same puppet drawn translucent, casting no shadow, its paths dashed: the plan compared
// with the one shown (`marionette render A.json --compare B.json`).

import * as THREE from 'three';
import { Line2 } from 'three/examples/jsm/lines/Line2.js';
import { LineGeometry } from 'three/examples/jsm/lines/LineGeometry.js';
import { LineMaterial } from 'three/examples/jsm/lines/LineMaterial.js';
import { lerp, lerpRow } from './motion.js';
import { placed, shapeGeometry, vec } from './shapes.js';

export const SLACK_COLOR = new THREE.Color('#868e96');
const SAG_POINTS = 17;  // vertices of a string's polyline (a slack string sags)
const TARGET_COLOR = '#2fb344';  // a performance target whose point has no colour of its own
const CONTACT_COLOR = '#e8590c';  // a contact's normal force
const qa = new THREE.Quaternion(), qb = new THREE.Quaternion();  // scratch

export class Puppet {
  // view: the document (frames, links, strings); track: a MotionTrack of this puppet's motion;
  // style: { opacity, linkColor, resolution (the canvas size, for fat lines), pointColor(name,
  // index) ('#rrggbb'), tensionColor(tension, outColor) }.
  constructor(scene, view, track, style) {
    this.track = track;
    this.ghost = style.opacity < 1;
    this.tensionColor = style.tensionColor;
    const ghostly = (material) => {
      if (this.ghost)
        Object.assign(material, { transparent: true, opacity: style.opacity, depthWrite: false });
      return material;
    };
    const tag = this.ghost ? 'ghost-' : '';

    // One group per frame carrying geometry.
    const linkMaterial = ghostly(new THREE.MeshStandardMaterial({ color: style.linkColor,
      roughness: 0.6 }));
    this.frameGroups = view.frames.map((name) => {
      const g = new THREE.Group();
      g.name = tag + 'frame:' + name;
      scene.add(g);
      return g;
    });
    this.meshes = [];
    for (const link of view.links) {
      const geometry = shapeGeometry(link.shape);
      if (!geometry) continue;
      const mesh = placed(new THREE.Mesh(geometry, linkMaterial), link.pose);
      mesh.castShadow = !this.ghost;
      mesh.name = tag + 'link:' + link.name;
      this.frameGroups[link.frame].add(mesh);
      this.meshes.push(mesh);
    }

    // Strings as fat lines (solid when taut, dashed and sagging when slack), rig points as
    // spheres.
    const rigMaterial = ghostly(new THREE.MeshStandardMaterial({ color: '#495057' }));
    this.strings = view.strings.map((s) => {
      const geometry = new LineGeometry();
      geometry.setPositions(new Float32Array(SAG_POINTS * 3));
      const material = ghostly(new LineMaterial({ color: 0xffffff, linewidth: 2.5,
        dashSize: 0.012, gapSize: 0.008, resolution: style.resolution }));
      const line = new Line2(geometry, material);
      line.name = tag + 'string:' + s.name;
      line.frustumCulled = false;
      scene.add(line);
      const rigPoint = new THREE.Mesh(new THREE.SphereGeometry(0.009, 16, 8), rigMaterial);
      rigPoint.name = tag + 'rig-point:' + s.name;
      scene.add(rigPoint);
      return { name: s.name, line, geometry, material, rigPoint, slack: false,
        positions: new Float32Array(SAG_POINTS * 3) };
    });

    // Named points: a marker each, and their paths over the whole motion (shown on request).
    const motion = track.doc;
    this.points = motion.points.map((p, k) => {
      const color = new THREE.Color(style.pointColor(p.name, k));
      const marker = new THREE.Mesh(new THREE.SphereGeometry(0.008, 16, 8),
        ghostly(new THREE.MeshBasicMaterial({ color })));
      marker.visible = false;
      scene.add(marker);
      let path = null;
      if (track.N > 1) {
        const geometry = new LineGeometry();
        geometry.setPositions(p.path.flat());
        path = new Line2(geometry, ghostly(new LineMaterial({ color, linewidth: 3,
          dashed: this.ghost, dashSize: 0.02, gapSize: 0.012, resolution: style.resolution })));
        path.computeLineDistances();
        path.name = tag + 'path:' + p.name;
        path.visible = false;
        scene.add(path);
      }
      return { name: p.name, marker, path, color };
    });

    this.visible = true;
    this.pathsOn = this.points.map(() => false);
    // A performance's targets: a wire sphere in each target point's colour where that point
    // should be now (hidden where it has none, and in the hold after the performance).
    const perf = motion.performance || { names: [], samples: [] };
    this.targets = perf.names.map((name, k) => {
      const point = this.points.find((po) => po.name === name);
      const marker = new THREE.Mesh(new THREE.SphereGeometry(0.016, 12, 8),
        new THREE.MeshBasicMaterial({ color: point ? point.color : TARGET_COLOR, wireframe: true,
          transparent: true, opacity: 0.7 * style.opacity, depthWrite: false }));
      marker.name = tag + 'performance-target:' + name;
      marker.visible = false;
      scene.add(marker);
      return { name, column: 3 * k, marker };
    });

    // The contacts that bore load: an arrow at each one's point of contact, along the direction
    // its normal force pushes, as long as the force (the motion's largest 12 cm), hidden while it
    // does not touch.
    const contacts = motion.contacts || { names: [], normal: [], at: [] };
    const largest = contacts.normal.reduce((m, row) => row.reduce((a, f) => Math.max(a, f), m),
      1e-9);
    this.contactScale_m = 0.12 / largest;
    this.contacts = contacts.names.map((name, k) => {
      const arrow = new THREE.ArrowHelper(new THREE.Vector3(0, 0, 1), new THREE.Vector3(), 0.05,
        CONTACT_COLOR, 0.012, 0.008);
      arrow.name = tag + 'contact:' + name;
      arrow.visible = false;
      for (const part of [arrow.line, arrow.cone]) ghostly(part.material);
      scene.add(arrow);
      return { name, column: k, arrow };
    });

    const nStrings = view.strings.length;
    this.now = { ends: new Float64Array(nStrings * 6), lengths: new Float64Array(nStrings),
      tensions: new Float64Array(nStrings) };
  }

  poseAt(t) {
    this.time = t;
    const motion = this.track.doc;
    const s = this.track.sampleAt(t);
    const a = motion.frame_poses[s.i], b = motion.frame_poses[s.j];
    this.frameGroups.forEach((g, k) => {
      const o = 7 * k;
      g.position.set(lerp(a[o], b[o], s.f), lerp(a[o + 1], b[o + 1], s.f),
        lerp(a[o + 2], b[o + 2], s.f));
      qa.set(a[o + 3], a[o + 4], a[o + 5], a[o + 6]);
      qb.set(b[o + 3], b[o + 4], b[o + 5], b[o + 6]);
      g.quaternion.slerpQuaternions(qa, qb, s.f);
    });
    const { ends, lengths, tensions } = this.now;
    lerpRow(motion.string_ends, s, ends);
    lerpRow(motion.string_lengths, s, lengths);
    lerpRow(motion.tensions.samples, s, tensions);
    this.strings.forEach((st, k) => {
      const A = vec(ends, 6 * k), E = vec(ends, 6 * k + 3);
      const chord = A.distanceTo(E);
      // Slack: the ends are nearer than the string is long (1 mm), or it carries no tension.
      const slack = chord < lengths[k] - 1e-3 || tensions[k] <= 0;
      // A slack string hangs: a parabola whose arc length is about the string's length
      // (s ~ c + 8 d^2 / (3 c) for a sag d small beside the chord c).
      const extra = Math.max(lengths[k] - chord, 0);
      const sag = slack ? Math.min(Math.sqrt(3 * chord * extra / 8), 0.5 * lengths[k]) : 0;
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
      if (slack) st.material.color.copy(SLACK_COLOR);
      else this.tensionColor(tensions[k], st.material.color);
      st.rigPoint.position.copy(E);
    });
    this.points.forEach((po, k) => {
      const p = motion.points[k].path;
      po.marker.position.set(lerp(p[s.i][0], p[s.j][0], s.f), lerp(p[s.i][1], p[s.j][1], s.f),
        lerp(p[s.i][2], p[s.j][2], s.f));
    });
    if (this.contacts.length) {
      const i = this.track.nearest(t), force = motion.contacts.normal[i], at = motion.contacts.at[i];
      for (const c of this.contacts) {
        const f = force[c.column];
        c.arrow.visible = this.visible !== false && f > 0;
        if (!c.arrow.visible) continue;
        c.arrow.position.copy(vec(at, 6 * c.column));
        c.arrow.setDirection(vec(at, 6 * c.column + 3));
        c.arrow.setLength(Math.max(0.02, f * this.contactScale_m), 0.012, 0.008);
      }
    }
    const row = this.targets.length ? motion.performance.samples[this.track.nearest(t)] : null;
    for (const target of this.targets) {
      const x = row ? row[target.column] : null;
      target.marker.visible = this.visible !== false && x !== null && x !== undefined;
      if (target.marker.visible)
        target.marker.position.set(x, row[target.column + 1], row[target.column + 2]);
    }
  }

  // Each target point's distance to its target per sample (m; null where it has none).
  trackingErrors() {
    const motion = this.track.doc;
    return this.targets.map((target) => {
      const path = (motion.points.find((p) => p.name === target.name) || { path: [] }).path;
      return { name: target.name, values: path.map((x, i) => {
        const row = motion.performance.samples[i];
        if (!row || row[target.column] === null) return null;
        return Math.hypot(x[0] - row[target.column], x[1] - row[target.column + 1],
          x[2] - row[target.column + 2]);
      }) };
    });
  }

  // on[k]: whether named point k's marker and path show (while the puppet does).
  showPaths(on) {
    this.pathsOn = on;
    this.points.forEach((po, k) => {
      const shown = on[k] && this.visible;
      if (po.path) po.path.visible = shown;
      po.marker.visible = shown;
    });
  }

  setVisible(on) {
    this.visible = on;
    for (const g of this.frameGroups) g.visible = on;
    for (const st of this.strings) st.line.visible = st.rigPoint.visible = on;
    this.showPaths(this.pathsOn);
    if (this.time !== undefined) this.poseAt(this.time);  // the targets' markers follow
  }

  // Everything that moves over the whole motion: link frames, string ends, named points, goals.
  // The links' bounding box over the motion: posed at 40 times from 0 to duration_s (then back
  // where they were).
  linkBoxOver(duration_s) {
    const box = new THREE.Box3(), back = this.time;
    for (let i = 0; i <= 40; ++i) {
      this.poseAt(duration_s * i / 40);
      for (const g of this.frameGroups) {
        g.updateMatrixWorld(true);
        if (g.children.length) box.expandByObject(g);
      }
    }
    if (back !== undefined) this.poseAt(back);
    return box;
  }

  movingPoints() {
    const motion = this.track.doc, pts = [];
    for (const row of motion.frame_poses)
      for (let k = 0; k < this.frameGroups.length; ++k) pts.push(vec(row, 7 * k));
    for (const row of motion.string_ends)
      for (let k = 0; k < 2 * this.strings.length; ++k) pts.push(vec(row, 3 * k));
    for (const p of motion.points) for (const x of p.path) pts.push(vec(x));
    for (const target of motion.targets) pts.push(vec(target.position));
    for (const row of (motion.performance || { samples: [] }).samples)
      for (let k = 0; k + 2 < row.length; k += 3) if (row[k] !== null) pts.push(vec(row, k));
    return pts;
  }

  // The links' bounding rectangle on the canvas (pixels, origin top-left), for tests.
  screenBox(camera, canvas) {
    const box = new THREE.Box3();
    for (const m of this.meshes) { m.updateMatrixWorld(true); box.expandByObject(m); }
    const w = canvas.width, h = canvas.height;
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

  // The contact arrows shown now: each pair's name, its point of contact and its length (m).
  drawnContacts() {
    return this.contacts.filter((c) => c.arrow.visible).map((c) => ({ name: c.name,
      at: c.arrow.position.toArray(), length: c.arrow.cone.position.y }));
  }

  // Each string as drawn now: slack (dashed, grey) or taut, its colour ('#rrggbb'), its opacity.
  drawnStrings() {
    return this.strings.map((st) => ({ name: st.name, slack: st.slack,
      color: '#' + st.material.color.getHexString(), opacity: st.material.opacity }));
  }
}
