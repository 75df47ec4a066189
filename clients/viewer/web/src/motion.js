// SPDX-License-Identifier: BSD-3-Clause
// One motion of the view document -- its top level, or its "compare" member (both written by
// clients/viewer/src/motion_json.cpp) -- sampled at any time: linearly between samples, held at
// the first before it and at the last after it (the shorter of two compared motions holds its
// end while the longer plays on).

export const lerp = (a, b, f) => a + (b - a) * f;

// out[k] = rows[s.i][k] .. rows[s.j][k] at s.f
export function lerpRow(rows, s, out) {
  const a = rows[s.i], b = rows[s.j];
  for (let k = 0; k < a.length; ++k) out[k] = lerp(a[k], b[k], s.f);
  return out;
}

export class MotionTrack {
  constructor(doc) {
    this.doc = doc;
    this.name = doc.name;
    this.rate = doc.rate_hz;
    this.N = doc.t.length;
    this.duration = this.N > 1 ? doc.t[this.N - 1] : 0;
  }

  // The samples around t and the fraction between them: { i, j, f }.
  sampleAt(t) {
    if (this.N <= 1) return { i: 0, j: 0, f: 0 };
    const x = Math.min(Math.max(t, 0), this.duration) * this.rate;
    const i = Math.min(Math.floor(x), this.N - 2);
    return { i, j: i + 1, f: Math.min(Math.max(x - i, 0), 1) };
  }

  // The sample nearest to t.
  nearest(t) {
    const s = this.sampleAt(t);
    return s.f < 0.5 ? s.i : s.j;
  }
}
