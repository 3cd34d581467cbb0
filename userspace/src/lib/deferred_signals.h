// SPDX-License-Identifier: GPL-2.0
#pragma once

#include <csignal>

namespace flowbulk {

// Holds SIGINT, SIGTERM, SIGHUP and SIGQUIT back while a change that must
// not be left half done runs: a flowtable created at ingress and not yet
// attached (or removed again), a ruleset loaded whose flowtables have not
// all been tried and the outcome not yet said. A signal that arrives
// meanwhile is taken off the pending set when the section ends and kept,
// so that the command can finish and print what it did; main() then dies
// of it (take_deferred_signal()), as the process would have, only later.
class DeferredSignals {
 public:
  DeferredSignals();
  ~DeferredSignals();
  DeferredSignals(const DeferredSignals&) = delete;
  DeferredSignals& operator=(const DeferredSignals&) = delete;

 private:
  sigset_t previous_;
};

// The first signal a DeferredSignals section held back, and forgets it;
// 0 when none did.
int take_deferred_signal();

}  // namespace flowbulk
