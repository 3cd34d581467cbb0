// SPDX-License-Identifier: GPL-2.0
#pragma once

#include <memory>

#include "environment.h"

namespace flowbulk {

// libnftables: nft's own parser, evaluator and batch code.
std::unique_ptr<RulesetEngine> make_libnftables_engine();

}  // namespace flowbulk
