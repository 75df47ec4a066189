// SPDX-License-Identifier: BSD-3-Clause
// What a rig's sensors measure of the puppet, as a function of its configuration: the stage
// positions of named puppet points (markers, as motion capture gives them) and joint angles or
// slides (encoders).  The estimator's measurement model y = h(q) + noise and its Jacobian
// dh/dq_d from the model's point Jacobians.
//
// Contents
//   MeasurementSpec    which markers and encoders, and their noise (standard deviations).
//   MeasurementModel   h(q) and dh/dq_d, the names of y's entries, the noise covariance.
#pragma once

#include <Eigen/Core>
#include <string>
#include <vector>

#include "marionette/models/dynamics.hpp"
#include "marionette/models/model.hpp"

#pragma GCC visibility push(default)  // the library's API (docs/design.md, layout)

namespace marionette::control {

struct MeasurementSpec {
  std::vector<std::string> markers;   // named points of the model: 3 values each (stage, m)
  std::vector<std::string> encoders;  // dynamic variables: 1 value each (rad or m)
  double marker_noise_m = 0.002;      // standard deviation of each marker coordinate
  double encoder_noise = 0.002;       // standard deviation of each encoder (rad or m)

  bool empty() const { return markers.empty() && encoders.empty(); }
  // Every named point of the model as a marker.
  static MeasurementSpec allPoints(const Model& model, double noise_m);
};

class MeasurementModel {
 public:
  // Throws FieldError("markers[i]" / "encoders[i]") for a name the model does not have (an
  // encoder must name a dynamic variable) and for a noise that is not > 0.
  MeasurementModel(ModelPtr model, MeasurementSpec spec);

  const MeasurementSpec& spec() const { return spec_; }
  const Model& model() const { return *model_; }
  int size() const { return size_; }  // entries of y: 3 per marker + 1 per encoder
  // "hand_l.x", "hand_l.y", "hand_l.z", ..., then the encoders' names.
  const std::vector<std::string>& names() const { return names_; }
  // R: the noise covariance (diagonal).
  const Eigen::VectorXd& noiseVariance() const { return variance_; }

  // y = h(q) for the configuration q (n_q: dynamic then kinematic); with H, also dh/dq_d
  // (size() x n_d).  `data` is the caller's scratch for this model.
  void evaluate(DynamicsData& data, const Eigen::VectorXd& q, Eigen::VectorXd& y,
                Eigen::MatrixXd* H = nullptr) const;

 private:
  ModelPtr model_;
  MeasurementSpec spec_;
  std::vector<int> point_index_, encoder_index_;
  std::vector<std::string> names_;
  Eigen::VectorXd variance_;
  int size_ = 0;
  mutable Eigen::MatrixXd J_;  // 3 x n_q scratch
};

}  // namespace marionette::control

#pragma GCC visibility pop
