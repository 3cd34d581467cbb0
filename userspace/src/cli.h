// SPDX-License-Identifier: GPL-2.0
#pragma once

#include <string>
#include <vector>

#include "environment.h"

namespace flowbulk {

// Runs one flowbulk command line (without argv[0]); returns the exit code.
// Results go to env.out, errors ("Error: ...") to env.err.
int run_flowbulk(const std::vector<std::string>& arguments, Environment& env);

}  // namespace flowbulk
