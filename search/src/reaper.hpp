// SPDX-License-Identifier: BSD-3-Clause
// Internal: frees search trees off the planning thread.  Dropping a tree of a million motions
// takes longer than a cancelled call may (it must stop within 100 ms).  One thread, started on
// first use; it finishes its queue and is joined at exit.
#pragma once

#include <memory>

namespace marionette::detail {

// Hands `garbage` to the reaper's thread, which releases it.
void dropLater(std::shared_ptr<void> garbage);

}  // namespace marionette::detail
