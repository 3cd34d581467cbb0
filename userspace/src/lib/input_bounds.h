// SPDX-License-Identifier: GPL-2.0
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace flowbulk {

// How deep `-f` input may nest braces (nft syntax) or arrays and objects
// (nft JSON). Rulesets nest a handful of levels; libnftables' own parsers
// give up far earlier than the memory and stack a deeper input would take
// on its way there (jansson at 2048 levels, nft's bison parser at its
// 10000-entry stack), and flowbulk's readers would take memory or stack
// in proportion to the depth.
constexpr size_t kMaxRulesetNesting = 1024;

// Throws UsageError (exit 2) naming `name` when `ruleset` nests deeper than
// kMaxRulesetNesting. One pass, constant memory, before anything parses
// it: braces in nft's quoted strings and comments, and brackets in JSON
// strings, do not count.
void check_ruleset_nesting(std::string_view ruleset, bool json, const std::string& name);

}  // namespace flowbulk
