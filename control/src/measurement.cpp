// SPDX-License-Identifier: BSD-3-Clause
#include "marionette/control/measurement.hpp"

#include <cmath>

#include "marionette/models/field_error.hpp"

namespace marionette::control {

MeasurementSpec MeasurementSpec::allPoints(const Model& model, double noise_m) {
  MeasurementSpec s;
  for (const Point& p : model.points) s.markers.push_back(p.name);
  s.marker_noise_m = noise_m;
  return s;
}

MeasurementModel::MeasurementModel(ModelPtr model, MeasurementSpec spec)
    : model_(std::move(model)), spec_(std::move(spec)) {
  for (std::size_t i = 0; i < spec_.markers.size(); ++i) {
    const int p = model_->pointIndex(spec_.markers[i]);
    if (p < 0)
      throw FieldError("markers[" + std::to_string(i) + "]",
                       "'" + spec_.markers[i] + "' is not a named point of '" + model_->name + "'");
    point_index_.push_back(p);
    for (const char* axis : {".x", ".y", ".z"}) names_.push_back(spec_.markers[i] + axis);
  }
  for (std::size_t i = 0; i < spec_.encoders.size(); ++i) {
    const int v = model_->variableIndex(spec_.encoders[i]);
    if (!model_->isDynamic(v))
      throw FieldError("encoders[" + std::to_string(i) + "]",
                       "'" + spec_.encoders[i] + "' is not a joint (dynamic variable) of '" +
                           model_->name + "'");
    encoder_index_.push_back(v);
    names_.push_back(spec_.encoders[i]);
  }
  if (!point_index_.empty() && !(spec_.marker_noise_m > 0 && std::isfinite(spec_.marker_noise_m)))
    throw FieldError("marker_noise_m", "must be > 0 (a standard deviation, m)");
  if (!encoder_index_.empty() && !(spec_.encoder_noise > 0 && std::isfinite(spec_.encoder_noise)))
    throw FieldError("encoder_noise", "must be > 0 (a standard deviation, rad or m)");
  size_ = static_cast<int>(names_.size());
  variance_.resize(size_);
  const int nm = 3 * static_cast<int>(point_index_.size());
  variance_.head(nm).setConstant(spec_.marker_noise_m * spec_.marker_noise_m);
  variance_.tail(size_ - nm).setConstant(spec_.encoder_noise * spec_.encoder_noise);
  J_.resize(3, model_->nq());
}

void MeasurementModel::evaluate(DynamicsData& data, const Eigen::VectorXd& q, Eigen::VectorXd& y,
                                Eigen::MatrixXd* H) const {
  const int nd = model_->nd();
  y.resize(size_);
  if (H) H->setZero(size_, nd);
  if (!point_index_.empty()) forwardKinematics(*model_, data, q);
  const Eigen::Matrix3d R = model_->stage_pose.linear();
  int row = 0;
  for (int p : point_index_) {
    const Point& pt = model_->points[p];
    y.segment<3>(row) = model_->stage_pose * pointPosition(data, pt.frame, pt.position_m);
    if (H) {
      pointJacobian(*model_, data, pt.frame, pt.position_m, J_);
      H->block(row, 0, 3, nd).noalias() = R * J_.leftCols(nd);
    }
    row += 3;
  }
  for (int v : encoder_index_) {
    y[row] = q[v];
    if (H) (*H)(row, v) = 1.0;
    ++row;
  }
}

}  // namespace marionette::control
