// SPDX-License-Identifier: BSD-3-Clause
// Internal to the wire library: what its converters share -- field-naming errors, finite
// checks, vectors and matrices, variable lookups by name.
#pragma once

#include <google/protobuf/message.h>

#include <cmath>
#include <string>
#include <type_traits>
#include <variant>
#include <vector>

#include "marionette/common/text.hpp"
#include "marionette/service/wire.hpp"

namespace marionette::wire::detail {

[[noreturn]] inline void invalid(const std::string& field, const std::string& message) {
  throw RequestError(RequestError::Code::InvalidArgument, field + ": " + message);
}

inline void requireFinite(const std::string& field, double x) {
  if (!std::isfinite(x)) invalid(field, "must be a finite number, got " + formatNumber(x));
}

// A plan's named points and, for a performance, its targets and tracking (wire_performance.cpp).
void performanceToProto(const Plan& plan, v1::PlanResponse* out);
void performanceFromProto(const v1::PlanResponse& plan, Plan& out);  // after the inputs

// Weights by name into `out` (unknown names refused, naming field["name"]); the values are
// checked with the options they belong to.
void weightsFromProto(const google::protobuf::Map<std::string, double>& weights,
                      const std::string& field, OptimizationWeights& out);

inline v1::VariableKind kindOf(const Model& model, int q_index) {
  for (const Frame& f : model.frames)
    if (f.variable == q_index && f.type == JointType::Rotate) return v1::VARIABLE_KIND_ROTATION;
  return v1::VARIABLE_KIND_TRANSLATION;  // a sliding frame, or a winch's string length
}

inline void toProto(const Eigen::Vector3d& v, v1::Vector3* out) {
  out->set_x(v.x());
  out->set_y(v.y());
  out->set_z(v.z());
}

inline Eigen::Vector3d fromProto(const v1::Vector3& v) {
  return {v.x(), v.y(), v.z()};
}

inline void matrixToProto(const Eigen::MatrixXd& m, v1::Matrix* out) {
  out->set_rows(static_cast<int>(m.rows()));
  out->set_cols(static_cast<int>(m.cols()));
  auto* data = out->mutable_data();
  data->Reserve(static_cast<int>(m.size()));
  for (int i = 0; i < m.rows(); ++i)
    for (int j = 0; j < m.cols(); ++j) data->Add(m(i, j));
}

inline Eigen::MatrixXd matrixFromProto(const v1::Matrix& m, const std::string& field) {
  if (m.rows() < 0 || m.cols() < 0 || m.data_size() != int64_t(m.rows()) * m.cols())
    throw std::invalid_argument(field + ": " + std::to_string(m.data_size()) + " values for a " +
                                std::to_string(m.rows()) + " x " + std::to_string(m.cols()) +
                                " matrix");
  Eigen::MatrixXd out(m.rows(), m.cols());
  for (int i = 0; i < m.rows(); ++i)
    for (int j = 0; j < m.cols(); ++j) out(i, j) = m.data(i * m.cols() + j);
  return out;
}

template <class Repeated>
Eigen::VectorXd vectorFromProto(const Repeated& r) {
  Eigen::VectorXd v(r.size());
  for (int i = 0; i < r.size(); ++i) v[i] = r.Get(i);
  return v;
}

template <class Repeated>
inline void vectorToProto(const Eigen::VectorXd& v, Repeated* out) {
  out->Reserve(static_cast<int>(v.size()));
  for (int i = 0; i < v.size(); ++i) out->Add(v[i]);
}

// A library member and the proto field that carries it, by the field's name: a message's scalars
// are listed once, and protobuf's reflection copies them either way.  The member's type matches
// the field's (string, double, int32 <- int, int64 <- long, uint64 <- unsigned long, bool).
// A misspelt field is a std::logic_error (the round-trip test meets every list).
template <bool Const>
struct ScalarField {
  template <class T>
  using Ptr = std::conditional_t<Const, const T*, T*>;
  const char* field;
  std::variant<Ptr<std::string>, Ptr<double>, Ptr<int>, Ptr<long>, Ptr<unsigned long>, Ptr<bool>>
      member;
};
template <class Object>  // the list type for a const (read) or mutable (written) object
using ScalarFields = std::vector<ScalarField<std::is_const_v<Object>>>;
void scalarsToProto(const std::vector<ScalarField<true>>& scalars, google::protobuf::Message& out);
void scalarsFromProto(const google::protobuf::Message& in,
                      const std::vector<ScalarField<false>>& scalars);

// Index of a kinematic variable (0..n_k-1) by name, or RequestError naming the field.
inline int kinematicIndex(const Model& model, const std::string& name, const std::string& field) {
  const int i = model.variableIndex(name);
  if (i < model.nd())
    invalid(field, "'" + name + "' is not a kinematic variable of '" + model.name + "' (" +
                       joinNames(itemNames(model.kinematic)) + ")");
  return i - model.nd();
}

inline int dynamicIndex(const Model& model, const std::string& name, const std::string& field) {
  const int i = model.variableIndex(name);
  if (i < 0 || i >= model.nd())
    invalid(field, "'" + name + "' is not a dynamic variable of '" + model.name + "' (" +
                       joinNames(itemNames(model.dynamic)) + ")");
  return i;
}

}  // namespace marionette::wire::detail
