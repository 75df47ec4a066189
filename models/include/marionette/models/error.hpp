// SPDX-License-Identifier: BSD-3-Clause
// The base every error the libraries throw has beside its standard exception class: catch
// (const marionette::Error&) for any of them, and field() says which input was wrong when the
// error is about one.  Each error also stays what it was (FieldError is a std::invalid_argument,
// SimulationError a std::runtime_error, ...), so that catching the standard classes still works.
//
// Contents
//   Error       field() and what().
//   ErrorOf<S>  an Error that is also the standard exception S (how every error is declared).
#pragma once

#include <stdexcept>
#include <string>
#include <utility>

#pragma GCC visibility push(default)  // the library's API (docs/design.md, layout)

namespace marionette {

class Error {
 public:
  virtual ~Error() = default;
  // The field the error is about, as the library names it ("options.planner",
  // "goal.points[0].point", "masses[2].mass"); "" when it is not about one input.
  const std::string& field() const { return field_; }
  // The standard exception's message.
  virtual const char* what() const noexcept = 0;

 protected:
  explicit Error(std::string field) : field_(std::move(field)) {}
  Error(const Error&) = default;
  Error& operator=(const Error&) = default;

 private:
  std::string field_;
};

template <class StdException>
class ErrorOf : public StdException, public Error {
 public:
  // `what`: the whole message; `field`: the field it is about, or "".
  explicit ErrorOf(const std::string& what, std::string field = {})
      : StdException(what), Error(std::move(field)) {}
  const char* what() const noexcept override { return StdException::what(); }
};

}  // namespace marionette

#pragma GCC visibility pop
