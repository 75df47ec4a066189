// SPDX-License-Identifier: BSD-3-Clause
// Stopping a plan early: callers pass a CancelFn that planners poll; when it says stop, the
// planner throws PlanCancelled.  Both live in models (marionette/models/cancel.hpp), with the
// CancelScope through which a cancel reaches the rest poses, simulations and linearizations a
// plan runs.
#pragma once

#include "marionette/models/cancel.hpp"
