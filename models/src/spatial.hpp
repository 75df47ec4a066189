// SPDX-License-Identifier: BSD-3-Clause
// Spatial (twist / wrench) algebra in the notation of Murray, Li & Sastry (A Mathematical
// Introduction to Robotic Manipulation, CRC Press 1994), as summarised in docs/design.md.  A twist
// is xi = (v, w): v the velocity of the point at the world origin, w the angular velocity, both in
// world coordinates.  A wrench is (f, tau) with tau about the world origin, so wrench . twist is
// power.
#pragma once

#include <Eigen/Core>
#include <Eigen/Geometry>

namespace marionette::spatial {

using Vec3 = Eigen::Vector3d;
using Mat3 = Eigen::Matrix3d;
using Vec6 = Eigen::Matrix<double, 6, 1>;

inline Vec3 lin(const Vec6& x) {
  return x.head<3>();
}
inline Vec3 ang(const Vec6& x) {
  return x.tail<3>();
}

inline Vec6 twist(const Vec3& v, const Vec3& w) {
  Vec6 x;
  x << v, w;
  return x;
}

// ad_a b = [a, b]: the Lie bracket of two twists, (w_a x v_b + v_a x w_b, w_a x w_b).
inline Vec6 ad(const Vec6& a, const Vec6& b) {
  return twist(ang(a).cross(lin(b)) + lin(a).cross(ang(b)), ang(a).cross(ang(b)));
}

// ad_a^T w for a wrench w = (f, tau): (-w_a x f, -v_a x f - w_a x tau).
inline Vec6 adT(const Vec6& a, const Vec6& w) {
  return twist(-ang(a).cross(lin(w)), -lin(a).cross(lin(w)) - ang(a).cross(ang(w)));
}

// Rigid-body inertia in world coordinates, stored as the ten numbers that add over bodies:
// mass m, first moment h = m c (c the centre of mass), and the rotational inertia J about the
// world origin.  As a 6x6 matrix it is [[m I, -hat(h)], [hat(h), J]].
struct Inertia {
  double m = 0.0;
  Vec3 h = Vec3::Zero();
  Mat3 J = Mat3::Zero();

  void setZero() {
    m = 0.0;
    h.setZero();
    J.setZero();
  }
  Inertia& operator+=(const Inertia& o) {
    m += o.m;
    h += o.h;
    J += o.J;
    return *this;
  }
  // Momentum (linear, angular about origin) of this body moving with spatial twist x.
  Vec6 operator*(const Vec6& x) const {
    return twist(m * lin(x) - h.cross(ang(x)), h.cross(lin(x)) + J * ang(x));
  }
  // Build from mass, centre of mass c (world) and inertia about the COM in world axes.
  static Inertia fromCom(double mass, const Vec3& c, const Mat3& I_com) {
    Inertia out;
    out.m = mass;
    out.h = mass * c;
    out.J = I_com + mass * (c.squaredNorm() * Mat3::Identity() - c * c.transpose());
    return out;
  }
};

// Exact rotation about a unit axis by angle q (Rodrigues), cheaper than AngleAxis for our use.
inline Mat3 rotation(const Vec3& axis, double q) {
  return Eigen::AngleAxisd(q, axis).toRotationMatrix();
}

}  // namespace marionette::spatial
