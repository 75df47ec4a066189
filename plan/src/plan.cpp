#include "marionette/plan/plan.hpp"

namespace marionette {

const char* toString(PlanOutcome outcome) {
  switch (outcome) {
    case PlanOutcome::Exact: return "exact";
    case PlanOutcome::Approximate: return "approximate";
    case PlanOutcome::NotFound: return "not-found";
  }
  return "?";
}

}  // namespace marionette
