// SPDX-License-Identifier: GPL-2.0
// flowbulk: programs nftables flowtables and drives the nf_flow_bulk module.
#include <string>
#include <vector>

#include "cli.h"
#include "environment.h"

int main(int argc, char** argv) {
  std::vector<std::string> arguments(argv + 1, argv + argc);
  flowbulk::RealEnvironment environment;
  return flowbulk::run_flowbulk(arguments, environment.get());
}
