// SPDX-License-Identifier: BSD-3-Clause
// Copying scalars between library members and proto fields by the fields' names (reflection).
#include "wire_support.hpp"

#include <stdexcept>
#include <type_traits>

namespace marionette::wire::detail {
namespace {

using google::protobuf::FieldDescriptor;
using google::protobuf::Message;
using google::protobuf::Reflection;

// For each member type: the proto field type that carries it, and reflection's getter and setter.
template <class T>
struct Access;
#define MARIONETTE_WIRE_ACCESS(T, CPPTYPE, Name)                                             \
  template <>                                                                                \
  struct Access<T> {                                                                         \
    static constexpr FieldDescriptor::CppType type = FieldDescriptor::CPPTYPE_##CPPTYPE;     \
    static T get(const Reflection& r, const Message& m, const FieldDescriptor& f) {          \
      return r.Get##Name(m, &f);                                                             \
    }                                                                                        \
    static void set(const Reflection& r, Message& m, const FieldDescriptor& f, const T& v) { \
      r.Set##Name(&m, &f, v);                                                                \
    }                                                                                        \
  }
MARIONETTE_WIRE_ACCESS(std::string, STRING, String);
MARIONETTE_WIRE_ACCESS(double, DOUBLE, Double);
MARIONETTE_WIRE_ACCESS(int, INT32, Int32);
MARIONETTE_WIRE_ACCESS(long, INT64, Int64);
MARIONETTE_WIRE_ACCESS(unsigned long, UINT64, UInt64);
MARIONETTE_WIRE_ACCESS(bool, BOOL, Bool);
#undef MARIONETTE_WIRE_ACCESS

// The field `name` of m, which must be a scalar of the type that carries T.
template <class T>
const FieldDescriptor& fieldFor(const Message& m, const char* name) {
  const FieldDescriptor* f = m.GetDescriptor()->FindFieldByName(name);
  if (!f || f->is_repeated() || f->cpp_type() != Access<T>::type)
    throw std::logic_error(std::string("wire: ") + m.GetTypeName() + " has no scalar field '" +
                           name + "' of this member's type");
  return *f;
}

}  // namespace

void scalarsToProto(const std::vector<ScalarField<true>>& scalars, Message& out) {
  for (const ScalarField<true>& s : scalars)
    std::visit(
        [&](auto* member) {
          using T = std::remove_const_t<std::remove_pointer_t<decltype(member)>>;
          Access<T>::set(*out.GetReflection(), out, fieldFor<T>(out, s.field), *member);
        },
        s.member);
}

void scalarsFromProto(const Message& in, const std::vector<ScalarField<false>>& scalars) {
  for (const ScalarField<false>& s : scalars)
    std::visit(
        [&](auto* member) {
          using T = std::remove_pointer_t<decltype(member)>;
          *member = Access<T>::get(*in.GetReflection(), in, fieldFor<T>(in, s.field));
        },
        s.member);
}

}  // namespace marionette::wire::detail
