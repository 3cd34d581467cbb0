// SPDX-License-Identifier: GPL-2.0
#include "deferred_signals.h"

#include <pthread.h>

#include <array>
#include <atomic>
#include <ctime>

namespace flowbulk {

namespace {

constexpr std::array<int, 4> kHeld = {SIGINT, SIGTERM, SIGHUP, SIGQUIT};

std::atomic<int> deferred{0};

sigset_t held_set() {
  sigset_t set;
  sigemptyset(&set);
  for (int signal : kHeld) {
    sigaddset(&set, signal);
  }
  return set;
}

}  // namespace

DeferredSignals::DeferredSignals() {
  const sigset_t set = held_set();
  pthread_sigmask(SIG_BLOCK, &set, &previous_);
}

DeferredSignals::~DeferredSignals() {
  // Taken off the pending set before the mask is restored: delivered now,
  // the signal would end the process before the command says what it did.
  sigset_t pending;
  sigemptyset(&pending);
  sigpending(&pending);
  sigset_t ours;
  sigemptyset(&ours);
  for (int signal : kHeld) {
    // Only what this section held: a signal blocked before it stays so.
    if (sigismember(&pending, signal) == 1 && sigismember(&previous_, signal) == 0) {
      sigaddset(&ours, signal);
    }
  }
  const timespec now{};
  for (int signal = sigtimedwait(&ours, nullptr, &now); signal > 0;
       signal = sigtimedwait(&ours, nullptr, &now)) {
    int none = 0;
    deferred.compare_exchange_strong(none, signal);
  }
  pthread_sigmask(SIG_SETMASK, &previous_, nullptr);
}

int take_deferred_signal() {
  return deferred.exchange(0);
}

}  // namespace flowbulk
