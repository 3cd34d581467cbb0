// SPDX-License-Identifier: GPL-2.0
// flowbulk: programs nftables flowtables and drives the nf_flow_bulk module.
#include <csignal>
#include <iostream>
#include <string>
#include <vector>

#include "cli.h"
#include "deferred_signals.h"
#include "environment.h"

int main(int argc, char** argv) {
  std::vector<std::string> arguments(argv + 1, argv + argc);
  flowbulk::RealEnvironment environment;
  const int status = flowbulk::run_flowbulk(arguments, environment.get());
  // A signal held back while a change was completed or undone: the
  // command has said what it did; now the process ends as it was asked to.
  if (const int signal = flowbulk::take_deferred_signal(); signal != 0) {
    std::cout.flush();
    std::cerr.flush();
    std::signal(signal, SIG_DFL);
    std::raise(signal);
  }
  return status;
}
