#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Makes the furniture meshes of the built-in `living-room` scene (environments/scenes/meshes/).

A doll's-house living room at marionette scale (about 1:3 -- a sofa 0.3 m high for a 0.55 m
puppet), cluttered in the spirit of the living room of Esteves, Arechavaleta & Laumond, ICMA 2005 (19,077 polygons there).  The meshes
are built from smooth primitives -- rounded boxes (superellipsoids), lathed (turned) profiles,
lumpy spheres -- so that they have the thousands of triangles a scanned or modelled scene would,
and are written in the three formats the scene loader must read: binary STL, OBJ and binary PLY.

Deterministic: running it again writes identical files.  Run from anywhere:
    python3 environments/tools/make_living_room_meshes.py
Each mesh's local frame: origin on the floor under the piece's centre, x towards its front,
z up; metres.  The scene file (living-room.yaml) places them.
"""

import math
import os
import random
import struct

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "..", "scenes", "meshes")


class Mesh:
    def __init__(self):
        self.v = []  # (x, y, z)
        self.f = []  # (i, j, k), counter-clockwise seen from outside

    def add(self, other):
        base = len(self.v)
        self.v += other.v
        self.f += [(a + base, b + base, c + base) for a, b, c in other.f]
        return self

    def moved(self, dx=0.0, dy=0.0, dz=0.0):
        self.v = [(x + dx, y + dy, z + dz) for x, y, z in self.v]
        return self


def spow(x, e):
    return math.copysign(abs(x) ** e, x)


def rounded_box(sx, sy, sz, nu=32, nv=16, e=0.25):
    """A superellipsoid filling the box sx * sy * sz (full sides), centred on the origin: a box
    with rounded edges; 2 * nu * (nv - 1) triangles."""
    a, b, c = sx / 2, sy / 2, sz / 2
    m = Mesh()
    m.v.append((0.0, 0.0, -c))  # south pole
    for j in range(1, nv):
        lat = -math.pi / 2 + math.pi * j / nv
        for i in range(nu):
            lon = -math.pi + 2 * math.pi * i / nu
            cl = spow(math.cos(lat), e)
            m.v.append((a * cl * spow(math.cos(lon), e), b * cl * spow(math.sin(lon), e),
                        c * spow(math.sin(lat), e)))
    m.v.append((0.0, 0.0, c))  # north pole
    top = len(m.v) - 1

    def ring(j, i):
        return 1 + (j - 1) * nu + (i % nu)

    for i in range(nu):
        m.f.append((0, ring(1, i + 1), ring(1, i)))
        m.f.append((top, ring(nv - 1, i), ring(nv - 1, i + 1)))
    for j in range(1, nv - 1):
        for i in range(nu):
            a0, a1 = ring(j, i), ring(j, i + 1)
            b0, b1 = ring(j + 1, i), ring(j + 1, i + 1)
            m.f += [(a0, a1, b1), (a0, b1, b0)]
    return m


def lathe(profile, segments=32):
    """A solid of revolution about z from a profile [(radius, z), ...] running bottom to top;
    closed by caps where the end radii are > 0."""
    m = Mesh()
    n = len(profile)
    for r, z in profile:
        for i in range(segments):
            t = 2 * math.pi * i / segments
            m.v.append((r * math.cos(t), r * math.sin(t), z))

    def idx(k, i):
        return k * segments + (i % segments)

    for k in range(n - 1):
        for i in range(segments):
            a0, a1 = idx(k, i), idx(k, i + 1)
            b0, b1 = idx(k + 1, i), idx(k + 1, i + 1)
            m.f += [(a0, a1, b1), (a0, b1, b0)]
    for k, up in ((0, False), (n - 1, True)):
        if profile[k][0] <= 0:
            continue
        centre = len(m.v)
        m.v.append((0.0, 0.0, profile[k][1]))
        for i in range(segments):
            a, b = idx(k, i), idx(k, i + 1)
            m.f.append((centre, a, b) if up else (centre, b, a))
    return m


def box(sx, sy, sz):
    """A plain box (12 triangles), centred on the origin."""
    x, y, z = sx / 2, sy / 2, sz / 2
    m = Mesh()
    m.v = [(-x, -y, -z), (x, -y, -z), (x, y, -z), (-x, y, -z),
           (-x, -y, z), (x, -y, z), (x, y, z), (-x, y, z)]
    m.f = [(0, 2, 1), (0, 3, 2), (4, 5, 6), (4, 6, 7), (0, 1, 5), (0, 5, 4),
           (1, 2, 6), (1, 6, 5), (2, 3, 7), (2, 7, 6), (3, 0, 4), (3, 4, 7)]
    return m


def lumpy_sphere(radius, level, rng, roughness=0.12):
    """An icosphere subdivided `level` times (20 * 4**level triangles), its radius jittered: a
    bush of leaves."""
    t = (1 + math.sqrt(5)) / 2
    verts = [(-1, t, 0), (1, t, 0), (-1, -t, 0), (1, -t, 0), (0, -1, t), (0, 1, t),
             (0, -1, -t), (0, 1, -t), (t, 0, -1), (t, 0, 1), (-t, 0, -1), (-t, 0, 1)]
    faces = [(0, 11, 5), (0, 5, 1), (0, 1, 7), (0, 7, 10), (0, 10, 11), (1, 5, 9), (5, 11, 4),
             (11, 10, 2), (10, 7, 6), (7, 1, 8), (3, 9, 4), (3, 4, 2), (3, 2, 6), (3, 6, 8),
             (3, 8, 9), (4, 9, 5), (2, 4, 11), (6, 2, 10), (8, 6, 7), (9, 8, 1)]
    verts = [tuple(c / math.sqrt(sum(x * x for x in v)) for c in v) for v in verts]
    for _ in range(level):
        cache = {}

        def mid(a, b):
            key = (min(a, b), max(a, b))
            if key not in cache:
                p = [(verts[a][k] + verts[b][k]) / 2 for k in range(3)]
                norm = math.sqrt(sum(x * x for x in p))
                verts.append(tuple(x / norm for x in p))
                cache[key] = len(verts) - 1
            return cache[key]

        new = []
        for a, b, c in faces:
            ab, bc, ca = mid(a, b), mid(b, c), mid(c, a)
            new += [(a, ab, ca), (b, bc, ab), (c, ca, bc), (ab, bc, ca)]
        faces = new
    m = Mesh()
    for v in verts:
        s = radius * (1 + roughness * (rng.random() - 0.5))
        m.v.append(tuple(s * x for x in v))
    m.f = faces
    return m


def turned_leg(height, r_max, segments=24):
    """A turned table or chair leg: a bead, a taper and a foot."""
    prof = []
    rings = 18
    for k in range(rings + 1):
        s = k / rings
        r = r_max * (0.55 + 0.25 * math.cos(2 * math.pi * s) ** 2 + 0.2 * (1 - s))
        prof.append((r, s * height))
    return lathe(prof, segments)


# ---- The furniture ------------------------------------------------------------------------

def sofa():
    """A three-seat sofa, 0.75 m wide (y), 0.32 m deep, 0.30 m high; its front faces +x."""
    m = Mesh()
    m.add(rounded_box(0.30, 0.72, 0.10, 32, 12).moved(0.0, 0.0, 0.09))          # base
    for y in (-0.22, 0.0, 0.22):                                                # seat cushions
        m.add(rounded_box(0.22, 0.21, 0.06, 24, 10).moved(0.03, y, 0.165))
    for y in (-0.18, 0.18):                                                     # back cushions
        m.add(rounded_box(0.08, 0.34, 0.17, 24, 12).moved(-0.11, y, 0.215))
    for y in (-0.345, 0.345):                                                   # armrests
        m.add(rounded_box(0.30, 0.06, 0.17, 24, 12).moved(0.0, y, 0.12))
    for x in (-0.12, 0.12):                                                     # feet
        for y in (-0.33, 0.33):
            m.add(lathe([(0.012, 0.0), (0.015, 0.02), (0.018, 0.04)], 20).moved(x, y, 0.0))
    return m


def armchair():
    """An armchair, 0.32 m wide, 0.30 m deep, 0.30 m high; its front faces +x."""
    m = Mesh()
    m.add(rounded_box(0.28, 0.28, 0.09, 24, 10).moved(0.0, 0.0, 0.085))
    m.add(rounded_box(0.20, 0.20, 0.05, 20, 10).moved(0.03, 0.0, 0.15))
    m.add(rounded_box(0.07, 0.28, 0.18, 20, 12).moved(-0.11, 0.0, 0.21))
    for y in (-0.14, 0.14):
        m.add(rounded_box(0.28, 0.05, 0.15, 20, 12).moved(0.0, y, 0.12))
    for x in (-0.11, 0.11):
        for y in (-0.12, 0.12):
            m.add(turned_leg(0.04, 0.012, 16).moved(x, y, 0.0))
    return m


def coffee_table():
    """A low table, top 0.40 x 0.24 m at 0.16 m, on four turned legs."""
    m = Mesh()
    m.add(rounded_box(0.40, 0.24, 0.02, 48, 10, e=0.15).moved(0.0, 0.0, 0.17))
    m.add(rounded_box(0.34, 0.18, 0.012, 24, 8, e=0.2).moved(0.0, 0.0, 0.05))  # lower shelf
    for x in (-0.17, 0.17):
        for y in (-0.09, 0.09):
            m.add(turned_leg(0.16, 0.014, 24).moved(x, y, 0.0))
    return m


def floor_lamp():
    """A standard lamp 0.90 m high: a domed base, a pole and a conical shade."""
    m = Mesh()
    base = [(0.09, 0.0), (0.09, 0.01), (0.08, 0.02), (0.05, 0.03), (0.02, 0.035), (0.012, 0.04)]
    m.add(lathe(base, 48))
    m.add(lathe([(0.008, 0.04), (0.008, 0.74)], 24))
    shade = []
    for k in range(13):
        s = k / 12
        shade.append((0.13 - 0.06 * s, 0.70 + 0.20 * s))
    m.add(lathe(shade, 64))
    return m


def bookshelf(rng):
    """A bookcase 0.60 m wide (y), 0.16 m deep, 0.70 m high, with four shelves of books."""
    m = Mesh()
    width, depth, height, board = 0.60, 0.16, 0.70, 0.015
    for y in (-width / 2 + board / 2, width / 2 - board / 2):
        m.add(box(depth, board, height).moved(0.0, y, height / 2))
    m.add(box(0.01, width, height).moved(-depth / 2 + 0.005, 0.0, height / 2))  # back
    shelf_z = [0.0, 0.17, 0.34, 0.51, height - board]
    for z in shelf_z:
        m.add(box(depth, width - 2 * board, board).moved(0.0, 0.0, z + board / 2))
    for z in shelf_z[:-1]:
        y = -width / 2 + board
        while True:
            w = rng.uniform(0.012, 0.03)
            if y + w > width / 2 - board - 0.002:
                break
            h = rng.uniform(0.09, 0.14)
            d = rng.uniform(0.09, 0.13)
            m.add(box(d, w * 0.95, h).moved(-depth / 2 + 0.01 + d / 2, y + w / 2,
                                            z + board + h / 2))
            y += w
    return m


def potted_plant(rng):
    """A pot 0.16 m high and a leafy bush on top, 0.55 m high in all."""
    m = Mesh()
    pot = [(0.06, 0.0), (0.065, 0.02), (0.075, 0.12), (0.085, 0.15), (0.085, 0.16),
           (0.075, 0.16)]
    m.add(lathe(pot, 48))
    m.add(lumpy_sphere(0.14, 3, rng).moved(0.0, 0.0, 0.30))
    m.add(lumpy_sphere(0.10, 3, rng).moved(0.04, 0.03, 0.44))
    return m


# ---- Writers --------------------------------------------------------------------------------

def normal(a, b, c):
    u = [b[k] - a[k] for k in range(3)]
    v = [c[k] - a[k] for k in range(3)]
    n = (u[1] * v[2] - u[2] * v[1], u[2] * v[0] - u[0] * v[2], u[0] * v[1] - u[1] * v[0])
    length = math.sqrt(sum(x * x for x in n)) or 1.0
    return tuple(x / length for x in n)


def write_stl(mesh, path):
    with open(path, "wb") as out:
        out.write(b"marionette living-room mesh (environments/tools)".ljust(80, b" "))
        out.write(struct.pack("<I", len(mesh.f)))
        for f in mesh.f:
            a, b, c = (mesh.v[i] for i in f)
            out.write(struct.pack("<12fH", *normal(a, b, c), *a, *b, *c, 0))


def write_obj(mesh, path):
    with open(path, "w") as out:
        out.write("# marionette living-room mesh (environments/tools/make_living_room_meshes.py)\n")
        for v in mesh.v:
            out.write("v %.5f %.5f %.5f\n" % v)
        for a, b, c in mesh.f:
            out.write("f %d %d %d\n" % (a + 1, b + 1, c + 1))


def write_ply(mesh, path):
    header = ("ply\nformat binary_little_endian 1.0\n"
              "comment marionette living-room mesh (environments/tools)\n"
              "element vertex %d\nproperty float x\nproperty float y\nproperty float z\n"
              "element face %d\nproperty list uchar int vertex_indices\nend_header\n"
              % (len(mesh.v), len(mesh.f)))
    with open(path, "wb") as out:
        out.write(header.encode("ascii"))
        for v in mesh.v:
            out.write(struct.pack("<3f", *v))
        for f in mesh.f:
            out.write(struct.pack("<B3i", 3, *f))


def main():
    os.makedirs(OUT, exist_ok=True)
    rng = random.Random(1)
    pieces = [
        ("sofa.stl", sofa(), write_stl),
        ("armchair.obj", armchair(), write_obj),
        ("coffee_table.ply", coffee_table(), write_ply),
        ("floor_lamp.stl", floor_lamp(), write_stl),
        ("bookshelf.obj", bookshelf(rng), write_obj),
        ("potted_plant.ply", potted_plant(rng), write_ply),
    ]
    total = 0
    for name, mesh, write in pieces:
        write(mesh, os.path.join(OUT, name))
        total += len(mesh.f)
        print("%-18s %6d triangles" % (name, len(mesh.f)))
    print("%-18s %6d triangles" % ("total", total))


if __name__ == "__main__":
    main()
