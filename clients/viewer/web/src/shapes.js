// SPDX-License-Identifier: BSD-3-Clause
// Shapes of the view document (links and obstacles: sphere, box, capsule, cylinder, mesh) as
// three.js geometry, and poses (position, then quaternion x, y, z, w) as object placements.

import * as THREE from 'three';

export const vec = (p, o = 0) => new THREE.Vector3(p[o], p[o + 1], p[o + 2]);
export const quat = (p) => new THREE.Quaternion(p[3], p[4], p[5], p[6]);

// null for a shape the page does not draw (a plane is drawn as the floor).
export function shapeGeometry(shape) {
  switch (shape.type) {
    case 'sphere': return new THREE.SphereGeometry(shape.radius, 32, 16);
    case 'box': return new THREE.BoxGeometry(shape.size[0], shape.size[1], shape.size[2]);
    case 'capsule':  // three.js capsules and cylinders lie along y; FCL's along z
      return new THREE.CapsuleGeometry(shape.radius, shape.length, 8, 24).rotateX(Math.PI / 2);
    case 'cylinder':
      return new THREE.CylinderGeometry(shape.radius, shape.radius, shape.length, 32)
        .rotateX(Math.PI / 2);
    case 'mesh': {
      let g = new THREE.BufferGeometry();
      g.setAttribute('position', new THREE.Float32BufferAttribute(shape.vertices, 3));
      g.setIndex(shape.triangles);
      g = g.toNonIndexed();  // flat faces: furniture and props read better faceted
      g.computeVertexNormals();
      return g;
    }
    default: return null;
  }
}

export function placed(object, pose) {
  object.position.copy(vec(pose));
  object.quaternion.copy(quat(pose));
  return object;
}
